package retry

import (
	"errors"
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
	if attempts, err := Until(timeout, fn); err != nil {
		tb.Fatalf("%s: still not true after %v (%d attempts): %v", what, timeout, attempts, err)
	}
}

// Until calls fn until it returns nil or timeout passes, pausing between attempts, and
// returns the number of attempts and fn's last error (nil once it held). It fails no
// test: for a goroutine, or a helper whose caller judges the outcome. A fn that returns
// ErrStop ends the retries at once with that error.
func Until(timeout time.Duration, fn func() error) (attempts int, err error) {
	deadline := time.Now().Add(timeout)
	pause := firstPause
	for attempts = 1; ; attempts++ {
		err = fn()
		if err == nil || errors.Is(err, ErrStop) || time.Now().After(deadline) {
			return attempts, err
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPause)
	}
}

// ErrStop, wrapped by fn's error, tells Until that retrying cannot help.
var ErrStop = errors.New("retry: stop")
