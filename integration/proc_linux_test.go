//go:build linux

package integration

import "syscall"

// childSysProcAttr makes a child die with the test process (a panicking or timed-out test
// must not leave servers running on the box).
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
