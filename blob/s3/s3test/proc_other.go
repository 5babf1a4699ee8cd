//go:build !linux

package s3test

import "syscall"

// sysProcAttr: no parent-death signal outside Linux; Cleanup stops the server.
func sysProcAttr() *syscall.SysProcAttr { return nil }
