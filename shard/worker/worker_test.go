package worker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestAGCTickSweepsAgainWhileMoreUpToItsBound: one tick of a led shard's collector sweeps,
// and sweeps again at once while a sweep reports More, at most 10 sweeps a tick; the next
// tick takes the rest. Every sweep lists the root once, so the store's listing gate counts
// and holds each sweep: the test knows at every step whether the collector waits for a
// listing (sweeping) or for a tick (done with the last one).
func TestAGCTickSweepsAgainWhileMoreUpToItsBound(t *testing.T) {
	n := newNode(t, worker.Config{GCMaxBatch: 1}, false)
	ticks := make(chan time.Time)
	n.set.SetGCTicks(ticks)
	const garbage = 12
	for i := 0; i <= garbage; i++ {
		put(t, n.shard, n.store, "a", "f", fmt.Sprintf("body %d", i))
	}
	n.set.Lead(0, n.shard) // its collector waits for the test's ticks
	n.sweepUntil(t, worker.GCOptions{DryRun: true}, func(r worker.GCReport) bool { return r.Candidates == garbage })
	gate := make(chan struct{})
	n.store.Set(func(h *blobtest.Hooks) { h.ListGate = gate })

	// tick sends a tick and lets want sweeps list the root; then the collector must wait
	// for the next tick, not list again. The tick that answers is the next one.
	ticks <- time.Now()
	tick := func(n, want int) {
		t.Helper()
		for i := 1; i <= want; i++ {
			select {
			case gate <- struct{}{}:
			case ticks <- time.Now():
				t.Fatalf("tick %d: the collector stopped after %d sweeps, want %d", n, i-1, want)
			}
		}
		select {
		case gate <- struct{}{}:
			t.Fatalf("tick %d: a sweep followed the %d expected", n, want)
		case ticks <- time.Now():
		}
	}
	tick(1, 10) // the bound: 10 sweeps of one blob each, each reporting More
	tick(2, 2)  // one blob and More, then the last one without More
	tick(3, 1)  // nothing left
	// The fourth tick was sent: let its one sweep list (a sweep that already read the gate
	// would wait on it for ever if the gate were only removed), then remove the gate.
	gate <- struct{}{}
	n.store.Set(func(h *blobtest.Hooks) { h.ListGate = nil })
	retry.Within(t, 10*time.Second, "the fourth tick's sweep", func() error {
		if got := metricstest.Value(t, n.reg, "cairn_gc_runs_total", "result=ok"); got != 14 {
			return fmt.Errorf("%v sweeps, want 14 (10 + 2 + 1 + 1)", got)
		}
		return nil
	})
	if got := metricstest.Value(t, n.reg, "cairn_gc_blobs_deleted_total"); got != garbage {
		t.Fatalf("cairn_gc_blobs_deleted_total = %v, want %d", got, garbage)
	}
	if rep, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{DryRun: true}); err != nil || rep.Candidates != 0 {
		t.Fatalf("after the ticks: %+v %v", rep, err)
	}
}

// TestLeadStartsTheWorkersAndUnleadStopsThem: a led shard's compactor runs on its own
// (its metrics move); after Unlead's channel closes nothing runs any more, and Lead again
// starts it anew.
func TestLeadStartsTheWorkersAndUnleadStopsThem(t *testing.T) {
	n := newNode(t, worker.Config{CompactionInterval: 10 * time.Millisecond}, false)
	var body []byte
	for i := 0; i < 40; i++ {
		body = appendTo(t, n.shard, n.store, "a", "logs/run.log", body, fmt.Sprintf("line %03d %s\n", i, strings.Repeat("x", 100)))
	}
	if runs := metricstest.Value(t, n.reg, "cairn_compaction_runs_total"); runs != 0 {
		t.Fatalf("compaction ran before Lead: %v runs", runs)
	}
	n.set.Lead(0, n.shard)
	n.set.Lead(0, n.shard) // idempotent
	if got := n.set.Led(); !slices.Equal(got, []int{0}) {
		t.Fatalf("Led() = %v after Lead", got)
	}
	// The compactor counts a pass's files when the pass ends, after their commands applied:
	// the log can read rolled up an instant before the count moves, so wait for both.
	retry.Within(t, 10*time.Second, "the compactor rolling up the log", func() error {
		if _, e := readBody(t, n.shard, n.store, "a", "logs/run.log"); len(e.Segments) != 1 {
			return fmt.Errorf("%d segments", len(e.Segments))
		}
		if files := metricstest.Value(t, n.reg, "cairn_compaction_files_total"); files != 1 {
			return fmt.Errorf("cairn_compaction_files_total = %v, want 1", files)
		}
		return nil
	})
	select {
	case <-n.set.Unlead(0):
	case <-time.After(10 * time.Second):
		t.Fatal("Unlead's workers did not stop")
	}
	if got := n.set.Led(); len(got) != 0 {
		t.Fatalf("Led() = %v after Unlead", got)
	}
	runs := metricstest.Value(t, n.reg, "cairn_compaction_runs_total")
	// Unlead's channel closed, so no compactor runs any more; what is checked is an absence,
	// which no condition can signal: twenty compaction intervals pass, and a compactor still
	// running would have run again.
	time.Sleep(200 * time.Millisecond)
	if again := metricstest.Value(t, n.reg, "cairn_compaction_runs_total"); again != runs {
		t.Fatalf("compaction ran after Unlead: %v runs, then %v", runs, again)
	}
	n.set.Lead(0, n.shard)
	retry.Within(t, 10*time.Second, "the compactor running after Lead again", func() error {
		if again := metricstest.Value(t, n.reg, "cairn_compaction_runs_total"); again == runs {
			return errors.New("no run")
		}
		return nil
	})
}

// recordingRestorer counts the calls of each core.
type recordingRestorer struct {
	mu    sync.Mutex
	calls map[worker.Core]int
}

func (r *recordingRestorer) ResumeRestores(_ context.Context, c worker.Core) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[c]++
	return nil
}

func (r *recordingRestorer) count(c worker.Core) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[c]
}

// TestEachLedShardResumesItsOwnRestores: the restorer is called at once for the core of
// every shard led, and for no other.
func TestEachLedShardResumesItsOwnRestores(t *testing.T) {
	a, b, c := workbenchtest.Replica(t, shard.Config{FSM: meta.Options{RootUIDPrefix: "s1r", History: pruneAtOnce}}),
		workbenchtest.Replica(t, shard.Config{FSM: meta.Options{RootUIDPrefix: "s2r", History: pruneAtOnce}}),
		workbenchtest.Replica(t, shard.Config{FSM: meta.Options{RootUIDPrefix: "s3r", History: pruneAtOnce}})
	rr := &recordingRestorer{calls: map[worker.Core]int{}}
	n := newNode(t, worker.Config{Restorer: rr}, false)
	n.set.Lead(1, a)
	n.set.Lead(2, b)
	retry.Within(t, 10*time.Second, "both led shards resuming restores", func() error {
		if rr.count(a) == 0 || rr.count(b) == 0 {
			return fmt.Errorf("calls: a %d, b %d", rr.count(a), rr.count(b))
		}
		return nil
	})
	if rr.count(c) != 0 {
		t.Fatal("a shard not led resumed restores")
	}
	if got := n.set.Led(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("Led() = %v", got)
	}
	// A sweep over the Set covers the roots of both led shards; one naming an agent, that
	// agent's root only.
	for _, w := range []struct {
		c     worker.Core
		agent string
	}{{a, "alice"}, {b, "bob"}, {c, "carol"}} {
		put(t, w.c, n.store, w.agent, "f", "old "+w.agent)
		put(t, w.c, n.store, w.agent, "f", "new "+w.agent)
	}
	rep := n.sweepUntil(t, worker.GCOptions{DryRun: true, Grace: time.Millisecond}, func(r worker.GCReport) bool { return len(r.Roots) == 2 })
	if rep.Roots[0].Agent != "alice" || rep.Roots[1].Agent != "bob" {
		t.Fatalf("a sweep of shards 1 and 2 reported %+v", rep.Roots)
	}
	rep, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{DryRun: true, Grace: time.Millisecond, Agent: "bob"})
	if err != nil || len(rep.Roots) != 1 || rep.Roots[0].Agent != "bob" {
		t.Fatalf("a sweep of bob's root: %+v %v", rep, err)
	}
}

// TestLeadershipFollowsTheReplicasReports: a replica reporting readiness inside
// shard.Open, before its core is in hand, is led once bound; a later loss unleads it.
func TestLeadershipFollowsTheReplicasReports(t *testing.T) {
	n := newNode(t, worker.Config{}, false)
	var l worker.Leadership
	sh := workbenchtest.Replica(t, shard.Config{OnReady: l.OnReady})
	if got := n.set.Led(); len(got) != 0 {
		t.Fatalf("led before Bind: %v", got)
	}
	l.Bind(n.set, 7, sh)
	if got := n.set.Led(); !slices.Equal(got, []int{7}) {
		t.Fatalf("Led() = %v after Bind of a ready replica", got)
	}
	l.OnReady(false)
	if got := n.set.Led(); len(got) != 0 {
		t.Fatalf("Led() = %v after the replica lost readiness", got)
	}
	l.OnReady(true)
	if got := n.set.Led(); !slices.Equal(got, []int{7}) {
		t.Fatalf("Led() = %v after the replica became ready again", got)
	}
}

// TestCloseStopsEveryWorkerAndLeadIsIgnoredAfter: Close returns once every worker stopped
// (goleak checks the goroutines at the end of the package's tests); a Lead after it
// starts nothing.
func TestCloseStopsEveryWorkerAndLeadIsIgnoredAfter(t *testing.T) {
	n := newNode(t, worker.Config{CompactionInterval: time.Millisecond, RestoreInterval: time.Millisecond,
		Restorer: &recordingRestorer{calls: map[worker.Core]int{}}}, true)
	if err := n.set.Close(); err != nil {
		t.Fatal(err)
	}
	n.set.Lead(1, n.shard)
	if got := n.set.Led(); len(got) != 0 {
		t.Fatalf("Led() = %v after Close", got)
	}
}
