package worker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/outcome"
	"github.com/cairnstore/cairn/shard/worker"
)

func TestGCDeletesAnOverwrittenBlobAndKeepsTheNewOne(t *testing.T) {
	n := newNode(t, worker.Config{}, true)
	put(t, n.shard, n.store, "a", "f", "old body")
	put(t, n.shard, n.store, "a", "f", "new body")
	put(t, n.shard, n.store, "a", "keep", "kept body")
	// Inside the grace period nothing is a candidate.
	if rep, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{Grace: time.Hour, DryRun: true}); err != nil || rep.Candidates != 0 {
		t.Fatalf("dry run inside the grace period: %+v %v", rep, err)
	}
	dry := n.sweepUntil(t, worker.GCOptions{DryRun: true}, func(r worker.GCReport) bool { return r.Candidates > 0 })
	if dry.Candidates != 1 || len(dry.Roots) != 1 || dry.Roots[0].Agent != "a" || dry.Deleted != 0 || !dry.DryRun ||
		dry.Roots[0].Candidates[0].Digest != meta.Digest(blob.DigestOf([]byte("old body"))) || dry.CandidateBytes == 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	if !n.stored(t, "old body") {
		t.Fatal("a dry run deleted the blob")
	}
	rep := n.sweepUntil(t, worker.GCOptions{}, func(r worker.GCReport) bool { return r.Deleted > 0 })
	if rep.Deleted != 1 || rep.Intents != 1 || rep.Orphans != 0 || rep.DeletedBytes != dry.CandidateBytes {
		t.Fatalf("sweep: %+v", rep)
	}
	if n.stored(t, "old body") {
		t.Fatal("the overwritten blob is still stored")
	}
	if _, ok := n.record(t, "old body"); ok {
		t.Fatal("the deleted blob's record is left")
	}
	for path, body := range map[string]string{"f": "new body", "keep": "kept body"} {
		if got, _ := readBody(t, n.shard, n.store, "a", path); string(got) != body || !n.stored(t, body) {
			t.Fatalf("%s lost its body", path)
		}
	}
	if rep, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{}); err != nil || rep.Candidates != 0 {
		t.Fatalf("a second sweep: %+v %v", rep, err)
	}
	if got := metricstest.Value(t, n.reg, "cairn_gc_blobs_deleted_total"); got != 1 {
		t.Errorf("cairn_gc_blobs_deleted_total = %v, want 1", got)
	}
	if got := metricstest.Value(t, n.reg, "cairn_gc_runs_total", "result=dry_run"); got < 2 {
		t.Errorf("cairn_gc_runs_total{result=dry_run} = %v, want at least the two dry runs", got)
	}
}

func TestGCDeletesAnOrphanAfterGrace(t *testing.T) {
	n := newNode(t, worker.Config{}, true)
	put(t, n.shard, n.store, "a", "f", "published body")
	if _, err := n.store.Put(t.Context(), n.key(t, "orphan body"), blob.Hash([]byte("orphan body"))); err != nil {
		t.Fatal(err)
	}
	if rep, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{}); err != nil || rep.Candidates != 0 || !n.stored(t, "orphan body") {
		t.Fatalf("an orphan inside the grace period was collected: %+v %v", rep, err)
	}
	rep := n.sweepUntil(t, worker.GCOptions{}, func(r worker.GCReport) bool { return r.Deleted > 0 })
	if rep.Deleted != 1 || rep.Orphans != 1 || !rep.Roots[0].Candidates[0].Orphan {
		t.Fatalf("sweep: %+v", rep)
	}
	if n.stored(t, "orphan body") {
		t.Fatal("the orphan is still stored")
	}
	if _, ok := n.record(t, "orphan body"); ok {
		t.Fatal("the orphan's intent record is left")
	}
	if got, _ := readBody(t, n.shard, n.store, "a", "f"); string(got) != "published body" {
		t.Fatal("the published file lost its body")
	}
	if got := metricstest.Value(t, n.reg, "cairn_gc_orphans_deleted_total"); got != 1 {
		t.Errorf("cairn_gc_orphans_deleted_total = %v, want 1", got)
	}
}

func TestGCWithAFailingListDeletesNothing(t *testing.T) {
	n := newNode(t, worker.Config{}, true)
	put(t, n.shard, n.store, "a", "f", "old body")
	put(t, n.shard, n.store, "a", "f", "new body")
	n.sweepUntil(t, worker.GCOptions{DryRun: true}, func(r worker.GCReport) bool { return r.Candidates > 0 })
	n.store.Set(func(h *blobtest.Hooks) { h.FailList = true })
	rep, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{})
	if !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("sweep with a failing listing: %+v %v, want blob.ErrUnavailable", rep, err)
	}
	if rep.Intents != 0 || rep.Deleted != 0 || len(n.store.Deleted()) != 0 || !n.stored(t, "old body") {
		t.Fatalf("a failed listing deleted something: %+v, deleted %v", rep, n.store.Deleted())
	}
	if r, ok := n.record(t, "old body"); !ok || r.Intent {
		t.Fatalf("a failed listing touched the record: %+v %v", r, ok)
	}
	if got := metricstest.Value(t, n.reg, "cairn_gc_runs_total", "result=error"); got != 1 {
		t.Errorf("cairn_gc_runs_total{result=error} = %v, want 1", got)
	}
	n.store.Set(func(h *blobtest.Hooks) { h.FailList = false })
	if rep, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{}); err != nil || rep.Deleted != 1 || n.stored(t, "old body") {
		t.Fatalf("sweep after the listing recovered: %+v %v", rep, err)
	}
}

func TestALeftoverIntentIsFinishedByALaterSweep(t *testing.T) {
	n := newNode(t, worker.Config{}, true)
	put(t, n.shard, n.store, "a", "f", "old body")
	put(t, n.shard, n.store, "a", "f", "new body")
	n.sweepUntil(t, worker.GCOptions{DryRun: true}, func(r worker.GCReport) bool { return r.Candidates > 0 })
	opts := worker.GCOptions{IntentTimeout: 500 * time.Millisecond}
	n.store.Set(func(h *blobtest.Hooks) { h.FailDelete = true })
	if rep, err := n.set.CollectGarbage(t.Context(), opts); err == nil || rep.Intents != 1 || rep.Deleted != 0 {
		t.Fatalf("sweep with failing deletes: %+v %v", rep, err)
	}
	if r, ok := n.record(t, "old body"); !ok || !r.Intent {
		t.Fatalf("record after the failed sweep: %+v %v", r, ok)
	}
	n.store.Set(func(h *blobtest.Hooks) { h.FailDelete = false })
	rep := n.sweepUntil(t, opts, func(r worker.GCReport) bool { return r.Deleted > 0 })
	if !rep.Roots[0].Candidates[0].TakenOver || n.stored(t, "old body") {
		t.Fatalf("the leftover intent was not finished: %+v", rep)
	}
	if _, ok := n.record(t, "old body"); ok {
		t.Fatal("the leftover intent's record is left")
	}
	// Writing the bytes again stores and publishes them afresh.
	put(t, n.shard, n.store, "a", "g", "old body")
	if got, _ := readBody(t, n.shard, n.store, "a", "g"); string(got) != "old body" || !n.stored(t, "old body") {
		t.Fatal("re-written body lost")
	}
}

func TestCollectGarbageRefusesBadOptionsAndNeedsALeader(t *testing.T) {
	n := newNode(t, worker.Config{}, false)
	if _, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{}); !errors.Is(err, outcome.ErrUnavailable) {
		t.Fatalf("a sweep on a node that leads no shard: %v, want outcome.ErrUnavailable", err)
	}
	n.set.Lead(0, n.shard)
	for name, tc := range map[string]struct {
		opts  worker.GCOptions
		field string
	}{
		"a batch above meta.MaxGCBatch": {worker.GCOptions{MaxBatch: meta.MaxGCBatch + 1}, "max_batch"},
		"an invalid agent id":           {worker.GCOptions{Agent: "-x"}, "agent"},
	} {
		_, err := n.set.CollectGarbage(t.Context(), tc.opts)
		var me *meta.Error
		if !errors.As(err, &me) || me.Code != meta.CodeInvalidArguments || me.Field != tc.field {
			t.Errorf("%s: %v, want InvalidArguments naming %s", name, err, tc.field)
		}
	}
	if rep, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{Agent: "nobody"}); err != nil || len(rep.Roots) != 0 {
		t.Fatalf("a sweep of a root no led shard holds: %+v %v", rep, err)
	}
}

// TestGCLimitsEachRootToItsBatch: a root with more candidates than MaxBatch is swept a
// batch at a time, each sweep reporting More until the last.
func TestGCLimitsEachRootToItsBatch(t *testing.T) {
	n := newNode(t, worker.Config{}, true)
	for _, body := range []string{"one", "two", "three", "last"} {
		put(t, n.shard, n.store, "a", "f", body)
	}
	n.sweepUntil(t, worker.GCOptions{DryRun: true, MaxBatch: 2}, func(r worker.GCReport) bool { return r.Candidates == 2 && r.More })
	var deleted int
	for i, more := range []bool{true, true, false} {
		rep, err := n.set.CollectGarbage(t.Context(), worker.GCOptions{MaxBatch: 1})
		if err != nil || rep.Deleted != 1 || rep.More != more {
			t.Fatalf("sweep %d: %+v %v, want one deleted and More %v", i, rep, err, more)
		}
		deleted += rep.Deleted
	}
	if deleted != 3 || n.stored(t, "one") || n.stored(t, "two") || n.stored(t, "three") || !n.stored(t, "last") {
		t.Fatalf("after the batches: %d deleted", deleted)
	}
}
