package retry

import (
	"testing"
	"time"
)

const (
	// DefaultTimeout bounds SucceedsSoon.
	DefaultTimeout = 30 * time.Second

	firstPause = 5 * time.Millisecond
	maxPause   = 100 * time.Millisecond
)

// SucceedsSoon calls fn until it returns nil, for at most DefaultTimeout; then it fails tb
// with what and fn's last error.
func SucceedsSoon(tb testing.TB, what string, fn func() error) {
	tb.Helper()
	Within(tb, DefaultTimeout, what, fn)
}

// Within calls fn until it returns nil, for at most timeout; then it fails tb with what,
// the number of attempts and fn's last error.
func Within(tb testing.TB, timeout time.Duration, what string, fn func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	pause := firstPause
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: still not true after %v (%d attempts): %v", what, timeout, attempt, err)
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPause)
	}
}
