package testclock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/testclock"
)

func TestAHandClockMovesOnlyWhenAdvanced(t *testing.T) {
	start := time.Unix(1e9, 0)
	c := testclock.New(start)
	if got := c.Now(); !got.Equal(start) || !c.Now().Equal(start) {
		t.Fatalf("read %v twice, want %v both times", got, start)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("after Advance(90s): %v, want %v", got, want)
	}
}

func TestASteppingClockMovesAtEveryReading(t *testing.T) {
	start := time.Unix(0, 0)
	c := testclock.Stepping(start, 30*time.Millisecond)
	for i := 1; i <= 3; i++ {
		if got, want := c.Now(), start.Add(time.Duration(i)*30*time.Millisecond); !got.Equal(want) {
			t.Fatalf("reading %d: %v, want %v", i, got, want)
		}
	}
	c.Advance(time.Second)
	if got, want := c.Now(), start.Add(time.Second+120*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after Advance(1s): %v, want %v", got, want)
	}
}

// TestAClockIsSafeForConcurrentUse: readers on other goroutines while the test advances
// (go test -race finds an unguarded field).
func TestAClockIsSafeForConcurrentUse(t *testing.T) {
	c := testclock.New(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Now()
			}
		}()
	}
	for range 100 {
		c.Advance(time.Millisecond)
	}
	wg.Wait()
	if got, want := c.Now(), time.Unix(0, 0).Add(100*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after 100 advances of 1 ms: %v, want %v", got, want)
	}
}
