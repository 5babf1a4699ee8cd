package worker

import "time"

// SetGCTicks makes the garbage collectors of leads started after it wait for ticks on c
// instead of every Config.GCInterval (scheduler tests).
func (s *Set) SetGCTicks(c <-chan time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gcTicks = c
}
