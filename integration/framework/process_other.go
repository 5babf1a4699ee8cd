//go:build !linux

package framework

import "syscall"

// ChildSysProcAttr: no parent-death signal outside Linux; cleanups stop the children.
func ChildSysProcAttr() *syscall.SysProcAttr { return nil }
