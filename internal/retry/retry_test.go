package retry_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// fakeTB records a Fatalf instead of ending the goroutine, so that a failing wait can be
// observed.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestWithinReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	tb := &fakeTB{TB: t}
	retry.Within(tb, time.Minute, "third call", func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if tb.failed != "" || calls != 3 {
		t.Fatalf("calls %d, failure %q; want 3 calls and no failure", calls, tb.failed)
	}
}

func TestWithinFailsWithTheLastErrorOnceTheTimeoutPassed(t *testing.T) {
	tb := &fakeTB{TB: t}
	calls := 0
	retry.Within(tb, 20*time.Millisecond, "never", func() error {
		calls++
		if tb.failed != "" {
			t.Fatal("the condition ran again after the wait failed")
		}
		return errors.New("last word")
	})
	if calls < 2 || !strings.Contains(tb.failed, "never") || !strings.Contains(tb.failed, "last word") ||
		!strings.Contains(tb.failed, fmt.Sprintf("%d attempts", calls)) {
		t.Fatalf("calls %d, failure %q; want several calls and a failure naming the wait, the attempts and the last error", calls, tb.failed)
	}
}

func TestUntilRetriesUntilTheConditionHoldsOrStops(t *testing.T) {
	n := 0
	attempts, err := retry.Until(time.Second, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || attempts != 3 {
		t.Fatalf("Until = %d, %v; want 3 attempts and nil", attempts, err)
	}
	attempts, err = retry.Until(time.Second, func() error { return fmt.Errorf("hopeless: %w", retry.ErrStop) })
	if !errors.Is(err, retry.ErrStop) || attempts != 1 {
		t.Fatalf("Until with retry.ErrStop = %d, %v; want 1 attempt", attempts, err)
	}
	if _, err := retry.Until(20*time.Millisecond, func() error { return errors.New("never") }); err == nil || err.Error() != "never" {
		t.Fatalf("Until past its timeout: %v, want the last error", err)
	}
}
