package bench

import (
	"context"
	"time"
)

// Clock is the harness's only source of time. RunLoad reads the time and waits for send
// times through it, so a test can drive a run with a simulated clock and a modelled Op
// and get the same latencies on every machine.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// SleepUntil blocks until t (returning at once if t is not in the future) or until
	// ctx is done, in which case it returns ctx.Err().
	SleepUntil(ctx context.Context, t time.Time) error
}

// WorkerTracker is implemented by simulated clocks that advance time only when every
// worker is waiting in the clock. RunLoad calls WorkerStarted before it starts each
// worker goroutine and WorkerStopped as that goroutine returns; a real clock does not
// need it.
type WorkerTracker interface {
	WorkerStarted()
	WorkerStopped()
}

// SystemClock is the wall clock (time.Now, with its monotonic reading, and timers).
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// SleepUntil waits on a timer until t or until ctx is done.
func (SystemClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
