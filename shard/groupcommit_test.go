package shard

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// Group commit: proposals that wait together reach the leader's log in one append (one
// fsync) and each follower's log in one AppendEntries (one fsync there). The test asserts
// the batching from the WALs' own counters, summed over the replicas (the leader's own
// batches stay small when fsync is fast: it appends as soon as entries arrive, while the
// followers receive what piled up during a round trip); throughputs are reported, not
// asserted.
func TestConcurrentProposalsShareLogWrites(t *testing.T) {
	c := newCluster(t, 3, []string{"0"}, nil)
	c.mustPropose("0", put("warm-up", "x"))
	_, ls := c.leader("0")

	groupStats := func() (leader, group Stats) {
		for _, s := range c.replicas("0") {
			st := s.Stats()
			group.LogAppends += st.LogAppends
			group.LogEntriesWritten += st.LogEntriesWritten
			if s == ls {
				leader = st
			}
		}
		return leader, group
	}
	measure := func(name string, workers, each int) (perAppend, perSecond float64) {
		before, groupBefore := groupStats()
		start := time.Now()
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					p := fmt.Sprintf("%s/%d/%d", name, w, i)
					res, err := ls.Propose(t.Context(), meta.Header{}, put(p, p))
					if errors.Is(err, ErrTimeout) || errors.Is(err, ErrNotLeader) {
						// A loaded machine missed a heartbeat and leadership moved: the
						// figures are then approximate; finish the proposal on the new leader.
						res = c.mustPropose("0", put(p, p))
						err = nil
					}
					if err != nil || res.Err != nil {
						t.Errorf("propose %s: %v %v", p, err, res.Err)
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		after, groupAfter := groupStats()
		appends := after.LogAppends - before.LogAppends
		entries := after.LogEntriesWritten - before.LogEntriesWritten
		groupAppends := groupAfter.LogAppends - groupBefore.LogAppends
		groupEntries := groupAfter.LogEntriesWritten - groupBefore.LogEntriesWritten
		perAppend = float64(groupEntries) / float64(max(groupAppends, 1))
		perSecond = float64(workers*each) / elapsed.Seconds()
		t.Logf("%s: %d proposals from %d goroutines in %v: %.0f/s; log appends (fsyncs): leader %d for %d entries (%.1f per append), all three replicas %d for %d entries (%.1f per append)",
			name, workers*each, workers, elapsed.Round(time.Millisecond), perSecond, appends, entries,
			float64(entries)/float64(max(appends, 1)), groupAppends, groupEntries, perAppend)
		return perAppend, perSecond
	}
	serialBatch, serialRate := measure("serial", 1, 200)
	concurrentBatch, concurrentRate := measure("concurrent", 32, 25)
	t.Logf("concurrent throughput is %.1f× serial", concurrentRate/serialRate)
	if serialBatch > 1.2 {
		t.Fatalf("one proposal at a time averaged %.1f entries per append; the counters do not measure batching", serialBatch)
	}
	if concurrentBatch < 2 {
		t.Fatalf("32 concurrent proposers averaged %.1f entries per log append across the replicas: no group commit", concurrentBatch)
	}
}
