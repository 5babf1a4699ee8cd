package workbench

import (
	"context"
	"time"
)

// HoldQueryBudget takes n bytes of the node's query budget, as queries in flight would,
// until the returned release is called (tests of admission).
func (s *Service) HoldQueryBudget(n int64) (release func()) {
	if err := s.queries.Acquire(context.Background(), n); err != nil {
		panic(err) // a background context never ends
	}
	return func() { s.queries.Release(n) }
}

// SetClock replaces the clock uploads are timed by (Config.MaxUploadDuration).
func (s *Service) SetClock(now func() time.Time) { s.now = now }
