package schemas

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/internal/testclock"
)

var errMatchTimeout = errors.New("match timeout")

func TestATimeoutBeforeTheBudgetPassedIsNoVerdict(t *testing.T) {
	clock := testclock.Stepping(time.Unix(0, 0), time.Millisecond)
	runs := 0
	match := func(string) (bool, error) {
		if runs++; runs < 3 {
			return false, errMatchTimeout // regexp2's clock jumped past a deadline it lagged behind
		}
		return true, nil
	}
	if !matchWithin(match, "1.0.0", 100*time.Millisecond, clock.Now) || runs != 3 {
		t.Fatalf("after two early timeouts and a match: %d runs; want a match on the third", runs)
	}
}

func TestAMatchStillUnansweredOnceTheBudgetPassedIsAMismatch(t *testing.T) {
	clock := testclock.Stepping(time.Unix(0, 0), 30*time.Millisecond)
	runs := 0
	match := func(string) (bool, error) {
		runs++
		return false, errMatchTimeout
	}
	if matchWithin(match, "1.0.0", 100*time.Millisecond, clock.Now) {
		t.Fatal("a match that never answered matched")
	}
	// The clock reads 30 ms at the start, then 60, 90, 120 after the first three runs
	// (still within the budget: run again) and 150 after the fourth: past it.
	if runs != 4 {
		t.Fatalf("%d runs; want 4 (the budget passed during the fourth)", runs)
	}
}

// A pattern that backtracks catastrophically on a hostile string ends as a mismatch: the
// retries of early timeouts stop once the budget has passed.
func TestACatastrophicMatchEndsAsAMismatch(t *testing.T) {
	re, err := compileECMA(`^(a+)+$`)
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan bool, 1)
	go func() { answer <- re.MatchString(strings.Repeat("a", 40) + "!") }()
	retry.SucceedsSoon(t, "the hostile match answers", func() error {
		select {
		case ok := <-answer:
			if ok {
				t.Fatal("a hostile string matched ^(a+)+$")
			}
			return nil
		default:
			return errors.New("still matching")
		}
	})
}
