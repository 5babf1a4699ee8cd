package workbench_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// gcGrace is the grace period of these tests: short, so they wait about a second.
const gcGrace = time.Second

// pruneAtOnce is the history retention of the tests that predate it and rely on an
// overwritten body losing its references at once (meta.Retention).
var pruneAtOnce = meta.Retention{Versions: 1}

// stallFirstPut makes the first successful Put of a key that match accepts (every key
// when match is nil) close putDone, then wait until the test closes resume before it
// returns.
func stallFirstPut(h *blobtest.Hooked, match func(blob.Key) bool) (putDone, resume chan struct{}) {
	putDone, resume = make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.Set(func(h *blobtest.Hooks) {
		h.OnPut = func(k blob.Key) {
			if match == nil || match(k) {
				once.Do(func() {
					close(putDone)
					<-resume
				})
			}
		}
	})
	return putDone, resume
}

type gcNode struct {
	svc     *workbench.Service
	shard   *shard.Shard
	store   *blobtest.Hooked
	workers *worker.Set
}

// newGCNode starts a real node (single-voter shard, blob directory, the shard's leader
// workers, whose sweeps the tests run) that stores every body in the object store. The
// sweeper's own behaviour is tested in shard/worker; these tests are of the write path
// racing it.
func newGCNode(t *testing.T) *gcNode {
	t.Helper()
	sh := workbenchtest.Replica(t, shard.Config{FSM: meta.Options{History: pruneAtOnce}})
	hs := &blobtest.Hooked{Store: blobtest.Dir(t)}
	svc, err := workbench.New(sh, hs, workbench.Config{InlineMaxBytes: 0, CursorKey: workbenchtest.CursorKey, GCGrace: gcGrace})
	if err != nil {
		t.Fatal(err)
	}
	// The grace is short so that sweeps find candidates soon, and the upload bound is half
	// of it: uploads here (stalled on purpose, or slow under -race) are not timed, so the
	// collector's fences are what these tests see (upload_bound_test.go tests the bound).
	frozen := time.Now()
	svc.SetClock(func() time.Time { return frozen })
	return &gcNode{svc: svc, shard: sh, store: hs, workers: workbenchtest.Workers(t, svc, hs, sh)}
}

func (n *gcNode) write(t *testing.T, path, body string) workbench.FileResult {
	t.Helper()
	res, err := n.svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
		Body: bytes.NewReader([]byte(body)), CreateWorkbench: true})
	if err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return res
}

// writeInBackground writes body at path of the existing workbench "w" in a goroutine of
// its own, and sends the write's error (nil on success) to done.
func (n *gcNode) writeInBackground(path, body string, done chan<- error) {
	go func() {
		_, err := n.svc.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: bytes.NewReader([]byte(body))})
		done <- err
	}()
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
	return blobtest.Stored(t, n.store, n.key(t, body))
}

func (n *gcNode) record(t *testing.T, body string) (meta.BlobRef, bool) {
	return n.shard.FSM().View().Shard().Blob(n.rootUID(t), meta.Digest(blob.DigestOf([]byte(body))))
}

// sweepUntil runs the node's sweeps (dry or not) until done accepts a report, for at most 10 s.
func (n *gcNode) sweepUntil(t *testing.T, opts worker.GCOptions, done func(worker.GCReport) bool) worker.GCReport {
	t.Helper()
	return workbenchtest.SweepUntil(t, n.workers, opts, done)
}

func TestWriterDedupingAgainstABlobUnderIntentUploadsItAgain(t *testing.T) {
	n := newGCNode(t)
	n.write(t, "f", "shared body")
	n.write(t, "f", "other body") // "shared body" is now unreferenced
	n.sweepUntil(t, worker.GCOptions{DryRun: true}, func(r worker.GCReport) bool { return r.Candidates > 0 })

	// When the sweeper is about to delete the blob (it is under intent), a writer uploads
	// the same bytes: put-if-absent finds the object and writes nothing. Its publish then
	// meets the intent.
	shared := n.key(t, "shared body")
	putDone := make(chan struct{})
	writeDone := make(chan error, 1)
	var once sync.Once
	n.store.Set(func(h *blobtest.Hooks) {
		h.OnPut = func(k blob.Key) {
			if k == shared {
				once.Do(func() { close(putDone) })
			}
		}
		h.OnDelete = func(k blob.Key) {
			if k != shared {
				return
			}
			n.writeInBackground("g", "shared body", writeDone)
			<-putDone
		}
	})
	rep, err := n.workers.CollectGarbage(t.Context(), worker.GCOptions{})
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
	n.sweepUntil(t, worker.GCOptions{DryRun: true}, func(r worker.GCReport) bool { return r.Candidates > 0 })

	// The writer finds the blob stored, then stalls; meanwhile a whole sweep runs (intent,
	// delete, recorded deletion). Its publish must not point at the deleted object.
	shared := n.key(t, "shared body")
	putDone, resume := stallFirstPut(n.store, func(k blob.Key) bool { return k == shared })
	writeDone := make(chan error, 1)
	n.writeInBackground("g", "shared body", writeDone)
	<-putDone
	rep, err := n.workers.CollectGarbage(t.Context(), worker.GCOptions{})
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

// An append that lost a generation race rehashes its bytes on the file as it is now. Its
// blob is not published yet, so a sweep may have deleted it as an orphan meanwhile (under
// load an append that keeps losing races outlives a short grace,
// TestGCIsSafeUnderConcurrency): the append rehashes the bytes it kept and publishes them
// again, instead of failing on the missing object.
func TestAnAppendRebasedAfterASweepTookItsBlobPublishes(t *testing.T) {
	n := newGCNode(t)
	n.write(t, "f", "base\n")
	const tail = "appended\n"
	appended := n.key(t, tail)
	putDone, resume := stallFirstPut(n.store, func(k blob.Key) bool { return k == appended })
	release := sync.OnceFunc(func() { close(resume) })
	t.Cleanup(release) // a failed test lets the stalled append go before the node closes
	appendDone := make(chan error, 1)
	go func() {
		_, err := n.svc.Writes.Append(context.Background(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "f",
			Body: bytes.NewReader([]byte(tail))})
		appendDone <- err
	}()
	select { // the append read generation 1 and uploaded its bytes; it stalls before publishing
	case <-putDone:
	case err := <-appendDone:
		t.Fatalf("the append ended before it uploaded: %v", err)
	}
	n.write(t, "f", "moved\n")
	retry.SucceedsSoon(t, "a sweep deletes the append's unpublished blob", func() error {
		if _, err := n.workers.CollectGarbage(t.Context(), worker.GCOptions{Grace: time.Nanosecond}); err != nil {
			return err
		}
		if n.stored(t, tail) {
			return errors.New("still stored")
		}
		return nil
	})
	release()
	if err := <-appendDone; err != nil {
		t.Fatalf("the append failed: %v", err)
	}
	if got := n.read(t, "f"); got != "moved\n"+tail || !n.stored(t, tail) {
		t.Fatalf("f reads %q after the append", got)
	}
}
