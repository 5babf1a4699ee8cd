package bench

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// simClock is a discrete-event clock: time stands still while any worker is running and
// jumps to the earliest wake-up once every worker waits in SleepUntil. A run driven by it
// and by Ops that spend their "service time" in SleepUntil takes no wall time and yields
// the same latencies on every machine, however slow or loaded (-race included).
type simClock struct {
	mu      sync.Mutex
	now     time.Time
	busy    int // workers registered and not waiting in SleepUntil
	waiters waiterHeap
	seq     uint64
}

func newSimClock() *simClock {
	return &simClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

type waiter struct {
	at    time.Time
	seq   uint64 // FIFO among equal times
	wake  chan struct{}
	woken bool
	index int
}

type waiterHeap []*waiter

func (h waiterHeap) Len() int { return len(h) }
func (h waiterHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiterHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) WorkerStarted() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy++
}

func (c *simClock) WorkerStopped() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy--
	c.advanceLocked()
}

func (c *simClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return ctx.Err()
	}
	c.seq++
	w := &waiter{at: t, seq: c.seq, wake: make(chan struct{})}
	heap.Push(&c.waiters, w)
	c.busy--
	c.advanceLocked()
	c.mu.Unlock()
	select {
	case <-w.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if !w.woken {
			heap.Remove(&c.waiters, w.index)
			c.busy++
		}
		return ctx.Err()
	}
}

// advanceLocked moves time to the earliest wake-up and wakes everyone due then, once no
// worker is running.
func (c *simClock) advanceLocked() {
	if c.busy > 0 || len(c.waiters) == 0 {
		return
	}
	c.now = c.waiters[0].at
	for len(c.waiters) > 0 && !c.waiters[0].at.After(c.now) {
		w := heap.Pop(&c.waiters).(*waiter)
		w.woken = true
		c.busy++
		close(w.wake)
	}
}

// fakeServer models a server in simulated time: each request takes its service time,
// spread over at most slots requests at once (further requests queue, FIFO), and any
// request that arrives inside a stall [stallFrom, stallTo) is not served before stallTo.
type fakeServer struct {
	clk     *simClock
	service func(seq uint64) time.Duration

	mu        sync.Mutex
	slots     []time.Time // when each slot next becomes free; nil = unlimited
	stallFrom time.Time
	stallTo   time.Time
}

func (s *fakeServer) Do(ctx context.Context, seq uint64) error {
	arrive := s.clk.Now()
	start := arrive
	if !arrive.Before(s.stallFrom) && arrive.Before(s.stallTo) {
		start = s.stallTo
	}
	svc := s.service(seq)
	s.mu.Lock()
	if len(s.slots) > 0 {
		best := 0
		for i, free := range s.slots {
			if free.Before(s.slots[best]) {
				best = i
			}
		}
		if s.slots[best].After(start) {
			start = s.slots[best]
		}
		s.slots[best] = start.Add(svc)
	}
	s.mu.Unlock()
	return s.clk.SleepUntil(ctx, start.Add(svc))
}
