//go:build unix

package blob_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the test process has used so far, so that a
// benchmark can report its cost in CPU rather than in wall time, which other work on a
// shared machine stretches.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
