package workbench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/api/workbench/workbenchtest"
	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/dir"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
)

// gcGrace is the grace period of these tests: short, so they wait about a second.
const gcGrace = time.Second

// hookedStore is a real blob store whose calls tests can fail or interleave with.
type hookedStore struct {
	blob.Store
	mu       sync.Mutex
	failList bool
	failDel  bool
	onPut    func(blob.Key) // called after a Put returns successfully
	onDelete func(blob.Key) // called before a Delete
	deleted  []blob.Key
}

func (h *hookedStore) hooks() (failList, failDel bool, onPut, onDelete func(blob.Key)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failList, h.failDel, h.onPut, h.onDelete
}

func (h *hookedStore) set(f func(h *hookedStore)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

func (h *hookedStore) Put(ctx context.Context, key blob.Key, data blob.Hashed) (blob.PutResult, error) {
	res, err := h.Store.Put(ctx, key, data)
	if _, _, onPut, _ := h.hooks(); err == nil && onPut != nil {
		onPut(key)
	}
	return res, err
}

func (h *hookedStore) List(ctx context.Context, root string, fn func(blob.Key, blob.Info) error) error {
	if failList, _, _, _ := h.hooks(); failList {
		return fmt.Errorf("hooked list %s: %w", root, blob.ErrUnavailable)
	}
	return h.Store.List(ctx, root, fn)
}

func (h *hookedStore) Delete(ctx context.Context, key blob.Key) error {
	_, failDel, _, onDelete := h.hooks()
	if failDel {
		return fmt.Errorf("hooked delete %s: %w", key, blob.ErrUnavailable)
	}
	if onDelete != nil {
		onDelete(key)
	}
	if err := h.Store.Delete(ctx, key); err != nil {
		return err
	}
	h.mu.Lock()
	h.deleted = append(h.deleted, key)
	h.mu.Unlock()
	return nil
}

type gcNode struct {
	svc   *workbench.Service
	shard *shard.Shard
	store *hookedStore
}

// newGCNode starts a real node (single-voter shard, blob directory) that stores every
// body in the object store.
func newGCNode(t *testing.T) *gcNode {
	t.Helper()
	sh, err := shard.Open(shard.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := sh.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	ds, err := dir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	hs := &hookedStore{Store: ds}
	svc, err := workbench.New(sh, hs, workbench.Config{InlineMaxBytes: 0, CursorKey: workbenchtest.CursorKey, GCGrace: gcGrace})
	if err != nil {
		t.Fatal(err)
	}
	// The grace is short so that sweeps find candidates soon, and the upload bound is half
	// of it: uploads here (stalled on purpose, or slow under -race) are not timed, so the
	// collector's fences are what these tests see (upload_bound_test.go tests the bound).
	frozen := time.Now()
	svc.SetClock(func() time.Time { return frozen })
	return &gcNode{svc: svc, shard: sh, store: hs}
}

func (n *gcNode) write(t *testing.T, path, body string) workbench.FileResult {
	t.Helper()
	res, err := n.svc.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
		Body: bytes.NewReader([]byte(body)), CreateWorkbench: true})
	if err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return res
}

func (n *gcNode) read(t *testing.T, path string) string {
	t.Helper()
	return string(readAll(t, n.svc, path))
}

func (n *gcNode) rootUID(t *testing.T) string {
	t.Helper()
	root, ok := n.shard.FSM().View().Root("a")
	if !ok {
		t.Fatal("no root")
	}
	return root.UID
}

func (n *gcNode) key(t *testing.T, body string) blob.Key {
	return blob.Key{Root: n.rootUID(t), Digest: blob.DigestOf([]byte(body))}
}

func (n *gcNode) stored(t *testing.T, body string) bool {
	t.Helper()
	_, err := n.store.Stat(t.Context(), n.key(t, body))
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func (n *gcNode) record(t *testing.T, body string) (meta.BlobRef, bool) {
	return n.shard.FSM().View().Blob(n.rootUID(t), meta.Digest(blob.DigestOf([]byte(body))))
}

// sweepUntil runs sweeps (dry or not) until done accepts a report, for at most 10 s.
func (n *gcNode) sweepUntil(t *testing.T, opts workbench.GCOptions, done func(workbench.GCReport) bool) workbench.GCReport {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rep, err := n.svc.CollectGarbage(t.Context(), opts)
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
		if done(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sweep reached the expected state; last report %+v", rep)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestGCDeletesAnOverwrittenBlobAndKeepsTheNewOne(t *testing.T) {
	n := newGCNode(t)
	n.write(t, "f", "old body")
	n.write(t, "f", "new body")
	n.write(t, "keep", "kept body")
	// Inside the grace period nothing is a candidate.
	if rep, err := n.svc.CollectGarbage(t.Context(), workbench.GCOptions{Grace: time.Hour, DryRun: true}); err != nil || rep.Candidates != 0 {
		t.Fatalf("dry run inside the grace period: %+v %v", rep, err)
	}
	dry := n.sweepUntil(t, workbench.GCOptions{DryRun: true}, func(r workbench.GCReport) bool { return r.Candidates > 0 })
	if dry.Candidates != 1 || len(dry.Roots) != 1 || dry.Roots[0].Agent != "a" || dry.Deleted != 0 ||
		dry.Roots[0].Candidates[0].Digest != meta.Digest(blob.DigestOf([]byte("old body"))) || dry.CandidateBytes == 0 {
		t.Fatalf("dry run: %+v", dry)
	}
	if !n.stored(t, "old body") {
		t.Fatal("a dry run deleted the blob")
	}
	rep := n.sweepUntil(t, workbench.GCOptions{}, func(r workbench.GCReport) bool { return r.Deleted > 0 })
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
		if !n.stored(t, body) || n.read(t, path) != body {
			t.Fatalf("%s lost its body", path)
		}
	}
	if rep, err := n.svc.CollectGarbage(t.Context(), workbench.GCOptions{}); err != nil || rep.Candidates != 0 {
		t.Fatalf("a second sweep: %+v %v", rep, err)
	}
}

func TestGCDeletesAnOrphanAfterGrace(t *testing.T) {
	n := newGCNode(t)
	n.write(t, "f", "published body")
	if _, err := n.store.Put(t.Context(), n.key(t, "orphan body"), blob.Hash([]byte("orphan body"))); err != nil {
		t.Fatal(err)
	}
	if rep, err := n.svc.CollectGarbage(t.Context(), workbench.GCOptions{}); err != nil || rep.Candidates != 0 || !n.stored(t, "orphan body") {
		t.Fatalf("an orphan inside the grace period was collected: %+v %v", rep, err)
	}
	rep := n.sweepUntil(t, workbench.GCOptions{}, func(r workbench.GCReport) bool { return r.Deleted > 0 })
	if rep.Deleted != 1 || rep.Orphans != 1 || !rep.Roots[0].Candidates[0].Orphan {
		t.Fatalf("sweep: %+v", rep)
	}
	if n.stored(t, "orphan body") {
		t.Fatal("the orphan is still stored")
	}
	if _, ok := n.record(t, "orphan body"); ok {
		t.Fatal("the orphan's intent record is left")
	}
	if n.read(t, "f") != "published body" {
		t.Fatal("the published file lost its body")
	}
}

func TestWriterDedupingAgainstABlobUnderIntentUploadsItAgain(t *testing.T) {
	n := newGCNode(t)
	n.write(t, "f", "shared body")
	n.write(t, "f", "other body") // "shared body" is now unreferenced
	n.sweepUntil(t, workbench.GCOptions{DryRun: true}, func(r workbench.GCReport) bool { return r.Candidates > 0 })

	// When the sweeper is about to delete the blob (it is under intent), a writer uploads
	// the same bytes: put-if-absent finds the object and writes nothing. Its publish then
	// meets the intent.
	shared := n.key(t, "shared body")
	putDone := make(chan struct{})
	writeDone := make(chan error, 1)
	var once sync.Once
	n.store.set(func(h *hookedStore) {
		h.onPut = func(k blob.Key) {
			if k == shared {
				once.Do(func() { close(putDone) })
			}
		}
		h.onDelete = func(k blob.Key) {
			if k != shared {
				return
			}
			go func() {
				_, err := n.svc.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "g",
					Body: bytes.NewReader([]byte("shared body"))})
				writeDone <- err
			}()
			<-putDone
		}
	})
	rep, err := n.svc.CollectGarbage(t.Context(), workbench.GCOptions{})
	if err != nil || rep.Deleted != 1 {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	select {
	case err := <-writeDone:
		if err != nil {
			t.Fatalf("the writer failed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the writer did not finish")
	}
	if got := n.read(t, "g"); got != "shared body" {
		t.Fatalf("g reads %q", got)
	}
	if !n.stored(t, "shared body") {
		t.Fatal("the writer published a blob that is not stored")
	}
	if r, ok := n.record(t, "shared body"); !ok || r.Count != 1 || r.Intent {
		t.Fatalf("record after the write: %+v %v", r, ok)
	}
}

func TestWriterThatUploadedBeforeADeletionUploadsAgain(t *testing.T) {
	n := newGCNode(t)
	n.write(t, "f", "shared body")
	n.write(t, "f", "other body")
	n.sweepUntil(t, workbench.GCOptions{DryRun: true}, func(r workbench.GCReport) bool { return r.Candidates > 0 })

	// The writer finds the blob stored, then stalls; meanwhile a whole sweep runs (intent,
	// delete, recorded deletion). Its publish must not point at the deleted object.
	shared := n.key(t, "shared body")
	putDone, resume := make(chan struct{}), make(chan struct{})
	writeDone := make(chan error, 1)
	var once sync.Once
	n.store.set(func(h *hookedStore) {
		h.onPut = func(k blob.Key) {
			if k == shared {
				once.Do(func() {
					close(putDone)
					<-resume
				})
			}
		}
	})
	go func() {
		_, err := n.svc.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "g",
			Body: bytes.NewReader([]byte("shared body"))})
		writeDone <- err
	}()
	<-putDone
	rep, err := n.svc.CollectGarbage(t.Context(), workbench.GCOptions{})
	close(resume)
	if err != nil || rep.Deleted != 1 {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	if err := <-writeDone; err != nil {
		t.Fatalf("the writer failed: %v", err)
	}
	if got := n.read(t, "g"); got != "shared body" || !n.stored(t, "shared body") {
		t.Fatalf("g reads %q after the sweep", got)
	}
}

func TestGCWithAFailingListDeletesNothing(t *testing.T) {
	n := newGCNode(t)
	n.write(t, "f", "old body")
	n.write(t, "f", "new body")
	n.sweepUntil(t, workbench.GCOptions{DryRun: true}, func(r workbench.GCReport) bool { return r.Candidates > 0 })
	n.store.set(func(h *hookedStore) { h.failList = true })
	rep, err := n.svc.CollectGarbage(t.Context(), workbench.GCOptions{})
	var we *workbench.Error
	if !errors.As(err, &we) || we.Code != workbench.CodeObjectUnavailable || !we.Retryable {
		t.Fatalf("sweep with a failing listing: %+v %v", rep, err)
	}
	if rep.Intents != 0 || rep.Deleted != 0 || len(n.store.deleted) != 0 || !n.stored(t, "old body") {
		t.Fatalf("a failed listing deleted something: %+v, deleted %v", rep, n.store.deleted)
	}
	if r, ok := n.record(t, "old body"); !ok || r.Intent {
		t.Fatalf("a failed listing touched the record: %+v %v", r, ok)
	}
	n.store.set(func(h *hookedStore) { h.failList = false })
	if rep, err := n.svc.CollectGarbage(t.Context(), workbench.GCOptions{}); err != nil || rep.Deleted != 1 || n.stored(t, "old body") {
		t.Fatalf("sweep after the listing recovered: %+v %v", rep, err)
	}
}

func TestALeftoverIntentIsFinishedByALaterSweep(t *testing.T) {
	n := newGCNode(t)
	n.write(t, "f", "old body")
	n.write(t, "f", "new body")
	n.sweepUntil(t, workbench.GCOptions{DryRun: true}, func(r workbench.GCReport) bool { return r.Candidates > 0 })
	opts := workbench.GCOptions{IntentTimeout: 500 * time.Millisecond}
	n.store.set(func(h *hookedStore) { h.failDel = true })
	if rep, err := n.svc.CollectGarbage(t.Context(), opts); err == nil || rep.Intents != 1 || rep.Deleted != 0 {
		t.Fatalf("sweep with failing deletes: %+v %v", rep, err)
	}
	if r, ok := n.record(t, "old body"); !ok || !r.Intent {
		t.Fatalf("record after the failed sweep: %+v %v", r, ok)
	}
	n.store.set(func(h *hookedStore) { h.failDel = false })
	rep := n.sweepUntil(t, opts, func(r workbench.GCReport) bool { return r.Deleted > 0 })
	if !rep.Roots[0].Candidates[0].TakenOver || n.stored(t, "old body") {
		t.Fatalf("the leftover intent was not finished: %+v", rep)
	}
	if _, ok := n.record(t, "old body"); ok {
		t.Fatal("the leftover intent's record is left")
	}
	// Writing the bytes again stores and publishes them afresh.
	n.write(t, "g", "old body")
	if n.read(t, "g") != "old body" || !n.stored(t, "old body") {
		t.Fatal("re-written body lost")
	}
}
