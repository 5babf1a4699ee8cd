package host

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/internal/retry"
)

// Follower reads share their read-index calls, and every read's index comes from a call
// that started after the read arrived: never from one already in flight.
func TestFollowerReadsShareReadIndexCallsStartedAfterThem(t *testing.T) {
	var started atomic.Uint64 // calls started so far; a call answers its own start number
	var inFlight, most atomic.Int64
	release := make(chan struct{})
	b := newReadIndexBatcher(func(ctx context.Context, addr string, id int) (uint64, error) {
		if id != 3 || addr != "leader" {
			t.Errorf("call for shard %d at %s", id, addr)
		}
		n := started.Add(1)
		cur := inFlight.Add(1)
		for {
			m := most.Load()
			if cur <= m || most.CompareAndSwap(m, cur) {
				break
			}
		}
		<-release // every call is held until the readers have all arrived
		inFlight.Add(-1)
		return n, nil
	})

	const readers = 50
	var wg sync.WaitGroup
	arrived := make(chan struct{}, readers)
	errs := make(chan string, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			before := started.Load()
			arrived <- struct{}{}
			v, err := b.get(t.Context(), "leader", 3)
			switch {
			case err != nil:
				errs <- err.Error()
			case v <= before:
				errs <- "a read got the index of a call that started before it arrived"
			}
		}()
	}
	for range readers {
		<-arrived
	}
	close(release)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if n := started.Load(); n > readers/2 {
		t.Fatalf("%d read-index calls for %d concurrent reads: they were not batched", n, readers)
	}
	if m := most.Load(); m > maxReadIndexCalls {
		t.Fatalf("%d calls in flight at once, more than %d", m, maxReadIndexCalls)
	}
	retry.SucceedsSoon(t, "the batch ends once no read waits", func() error {
		b.mu.Lock()
		defer b.mu.Unlock()
		if n := len(b.batches); n != 0 {
			return fmt.Errorf("%d batches left after every read returned", n)
		}
		return nil
	})
}
