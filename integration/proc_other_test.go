//go:build !linux

package integration

import "syscall"

// childSysProcAttr: no parent-death signal outside Linux; cleanups stop the children.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
