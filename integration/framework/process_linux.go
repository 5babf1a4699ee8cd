//go:build linux

package framework

import "syscall"

// ChildSysProcAttr makes a child die with the test process (a panicking or timed-out test
// must not leave servers running on the box).
func ChildSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
