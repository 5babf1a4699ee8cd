package shard

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// Group commit: proposals that wait together reach the leader's log in one append (one
// fsync) and the followers in one AppendEntries. The test asserts the batching from the
// WAL's own counters; the throughputs are reported, not asserted.
func TestConcurrentProposalsShareLogWrites(t *testing.T) {
	c := newCluster(t, 3, []string{"0"}, nil)
	c.mustPropose("0", put("warm-up", "x"))
	_, ls := c.leader("0")

	measure := func(name string, workers, each int) (perAppend, perSecond float64) {
		before := ls.Stats()
		start := time.Now()
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					p := fmt.Sprintf("%s/%d/%d", name, w, i)
					if res, err := ls.Propose(t.Context(), meta.Header{}, put(p, p)); err != nil || res.Err != nil {
						t.Errorf("propose %s: %v %v", p, err, res.Err)
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		after := ls.Stats()
		appends := after.LogAppends - before.LogAppends
		entries := after.LogEntriesWritten - before.LogEntriesWritten
		perAppend = float64(entries) / float64(max(appends, 1))
		perSecond = float64(workers*each) / elapsed.Seconds()
		t.Logf("%s: %d proposals from %d goroutines in %v: %.0f/s; leader log: %d appends (fsyncs) for %d entries, %.1f entries per append",
			name, workers*each, workers, elapsed.Round(time.Millisecond), perSecond, appends, entries, perAppend)
		return perAppend, perSecond
	}
	serialBatch, serialRate := measure("serial", 1, 200)
	concurrentBatch, concurrentRate := measure("concurrent", 32, 25)
	t.Logf("concurrent throughput is %.1f× serial", concurrentRate/serialRate)
	if serialBatch > 1.2 {
		t.Fatalf("one proposal at a time averaged %.1f entries per append; the counters do not measure batching", serialBatch)
	}
	if concurrentBatch < 2 {
		t.Fatalf("32 concurrent proposers averaged %.1f entries per log append: no group commit", concurrentBatch)
	}
}
