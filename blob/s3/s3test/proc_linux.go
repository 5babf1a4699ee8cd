//go:build linux

package s3test

import "syscall"

// sysProcAttr makes MinIO die with the test process: a panicking or timed-out test must
// not leave servers running on the box.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
