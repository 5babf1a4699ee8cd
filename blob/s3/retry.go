package s3

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cairnstore/cairn/internal/pause"
)

// tries records how a retried request went.
type tries struct {
	n    int      // attempts made
	last *failure // the last transient failure that was retried; nil if none was
}

// retry runs fn until it returns nil, fails in a way retrying cannot fix, has run
// Retry.MaxAttempts times, or ctx ends (RetryConfig). It returns fn's last error.
func (s *Store) retry(ctx context.Context, fn func() error) (tries, error) {
	var t tries
	for {
		err := fn()
		t.n++
		if err == nil || ctx.Err() != nil {
			return t, err
		}
		f := classify(err)
		if !f.transient || t.n >= s.cfg.Retry.MaxAttempts {
			return t, err
		}
		t.last = &f
		if pause.For(ctx, s.backoff(t.n-1)) != nil {
			return t, err
		}
	}
}

// backoff returns the wait after attempt n (from 0): uniform in [0, min(MaxDelay,
// BaseDelay·2ⁿ)).
func (s *Store) backoff(n int) time.Duration {
	limit := s.cfg.Retry.MaxDelay
	if n < 32 {
		if d := s.cfg.Retry.BaseDelay << n; d > 0 && d < limit {
			limit = d
		}
	}
	if limit <= 0 {
		return 0
	}
	return rand.N(limit)
}

// fail turns the last error of a retried request into the error of the call op on what
// (a key or a root): the caller's ctx error when ctx ended first, else an
// *ObjectUnavailableError. Neither names the endpoint or the bucket; only the ctx error
// names what, as blob/dir does.
func (s *Store) fail(ctx context.Context, op string, what any, t tries, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if t.last != nil {
			e := unavailable(op, *t.last, t.n)
			e.ctxErr = cerr
			return e
		}
		return fmt.Errorf("blob/s3: %s %v: %w", op, what, cerr)
	}
	return unavailable(op, classify(err), t.n)
}
