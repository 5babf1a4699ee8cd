package worker

import "sync"

// Leadership turns one replica's readiness reports (shard.Config.OnReady) into Lead and
// Unlead calls of a Set. A replica may report before its opener has the core, or the Set,
// in hand (OnReady fires from the replica's own goroutine, possibly inside shard.Open):
// Leadership keeps the last report until Bind, then acts on it and on every later one.
// The zero value is ready to use; it must not be copied after first use.
type Leadership struct {
	mu    sync.Mutex
	ready bool
	set   *Set
	shard int
	core  Core
}

// OnReady is the replica's readiness callback: it leads or unleads the shard's workers
// once bound, and only records the report before. It never waits for the workers.
func (l *Leadership) OnReady(ready bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ready = ready
	l.apply()
}

// Bind names the Set, the shard and its core, and leads the shard at once when the
// replica last reported itself ready.
func (l *Leadership) Bind(set *Set, shard int, c Core) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set, l.shard, l.core = set, shard, c
	l.apply()
}

// apply makes the Set follow the last report. l.mu must be held.
func (l *Leadership) apply() {
	switch {
	case l.set == nil:
	case l.ready:
		l.set.Lead(l.shard, l.core)
	default:
		l.set.Unlead(l.shard)
	}
}
