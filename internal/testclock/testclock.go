package testclock

import (
	"sync"
	"time"
)

// Clock is a hand-moved clock; its Now method is the func() time.Time the code under test
// takes.
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

// New returns a clock that reads start until Advance moves it.
func New(start time.Time) *Clock { return &Clock{t: start} }

// Stepping returns a clock that moves forward by step at every reading.
func Stepping(start time.Time, step time.Duration) *Clock { return &Clock{t: start, step: step} }

// Now reads the clock (after moving it by its step, for a stepping clock).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
