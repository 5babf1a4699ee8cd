package shard

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cairnstore/cairn/shard/outcome"
)

// TestErrorsMatchTheOutcomeTheyImply: callers that know only package outcome (the
// Workbench adapter) classify this package's errors, wrapped or not, and each error still
// matches itself and no other sentinel.
func TestErrorsMatchTheOutcomeTheyImply(t *testing.T) {
	outcomes := []error{outcome.ErrUnavailable, outcome.ErrUnknown, outcome.ErrStorageFull}
	sentinels := []error{ErrNotLeader, ErrTimeout, ErrClosed, ErrBehind, ErrStorageFull, ErrLocked, ErrIdentity, ErrDamaged}
	cases := []struct {
		err  error
		want error // nil: implies no outcome
	}{
		{ErrNotLeader, outcome.ErrUnavailable},
		{ErrClosed, outcome.ErrUnavailable},
		{ErrBehind, outcome.ErrUnavailable},
		{ErrTimeout, outcome.ErrUnknown},
		{ErrStorageFull, outcome.ErrStorageFull},
		{ErrLocked, nil},
		{ErrIdentity, nil},
		{ErrDamaged, nil},
	}
	for _, c := range cases {
		for _, err := range []error{c.err, fmt.Errorf("proposing: %w", c.err)} {
			for _, o := range outcomes {
				if got := errors.Is(err, o); got != (o == c.want) {
					t.Errorf("errors.Is(%q, %q) = %v, want %v", err, o, got, !got)
				}
			}
			for _, s := range sentinels {
				if got := errors.Is(err, s); got != (s == c.err) {
					t.Errorf("errors.Is(%q, %q) = %v, want %v", err, s, got, !got)
				}
			}
		}
	}
}
