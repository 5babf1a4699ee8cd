package corestest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
)

// testRightRoot: each node writes a file of its own into one root, one node writes into a
// second root; every node reads each root with exactly its own files, and a third root,
// never written, as absent.
func testRightRoot(t *testing.T, h Harness) {
	const a, b, never = "right-a", "right-b", "right-never"
	gens := map[string]uint64{}
	for i := range h.Nodes() {
		path := fmt.Sprintf("from-%d", i)
		gens[path] = propose(t, h, i, meta.Header{}, put(a, path, "a")).Generation
	}
	bGen := propose(t, h, h.Nodes()-1, meta.Header{}, put(b, "only-b", "b")).Generation
	for j := range h.Nodes() {
		va := read(t, h, j, a)
		for path, gen := range gens {
			wantFile(t, fmt.Sprintf("node %d reading root %s", j, a), va, a, path, gen)
		}
		wantFile(t, fmt.Sprintf("node %d reading root %s", j, a), va, a, "only-b", 0)
		vb := read(t, h, j, b)
		wantFile(t, fmt.Sprintf("node %d reading root %s", j, b), vb, b, "only-b", bGen)
		wantFile(t, fmt.Sprintf("node %d reading root %s", j, b), vb, b, "from-0", 0)
		if _, ok := read(t, h, j, never).Root(never); ok {
			t.Fatalf("node %d: root %s, never written, exists", j, never)
		}
	}
}

// testReadAfterWrite: for every pair of nodes, a write acknowledged through one is in the
// next linearizable read through the other, at once (no retry).
func testReadAfterWrite(t *testing.T, h Harness) {
	const root = "read-after-write"
	for i := range h.Nodes() {
		for j := range h.Nodes() {
			path := fmt.Sprintf("w%d-r%d", i, j)
			res := propose(t, h, i, meta.Header{}, put(root, path, path))
			v := read(t, h, j, root)
			if v.Version() < res.Version {
				t.Fatalf("written through node %d at version %d, read through node %d at version %d", i, res.Version, j, v.Version())
			}
			wantFile(t, fmt.Sprintf("written through node %d, read through node %d", i, j), v, root, path, res.Generation)
		}
	}
}

// testReadAtVersion: once a write is acknowledged, every node's WaitApplied of its version
// returns and its ReadViewAt shows it; a version never reached ends with ctx's error.
func testReadAtVersion(t *testing.T, h Harness) {
	const root = "read-at"
	res := propose(t, h, 0, meta.Header{}, put(root, "f", "x"))
	for j := range h.Nodes() {
		ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
		var v *meta.View
		var waitErr, readErr error
		bounded(t, fmt.Sprintf("node %d: WaitApplied and ReadViewAt", j), func() {
			c, err := h.Cores(j).For(ctx, root)
			if err != nil {
				waitErr = err
				return
			}
			if waitErr = c.WaitApplied(ctx, res.Version); waitErr == nil {
				v, readErr = c.ReadViewAt(ctx, res.Version)
			}
		})
		cancel()
		if waitErr != nil || readErr != nil {
			t.Fatalf("node %d: WaitApplied(%d): %v; ReadViewAt: %v", j, res.Version, waitErr, readErr)
		}
		wantFile(t, fmt.Sprintf("node %d's view at version %d", j, res.Version), v, root, "f", res.Generation)
	}
	for j := range h.Nodes() {
		const wait = 200 * time.Millisecond
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		var err error
		bounded(t, fmt.Sprintf("node %d: WaitApplied of a version never reached", j), func() {
			c, ferr := h.Cores(j).For(ctx, root)
			if ferr != nil {
				err = ferr
				return
			}
			err = c.WaitApplied(ctx, res.Version+1<<40)
		})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("node %d: WaitApplied of a version never reached, with a %v deadline: %v, want the deadline's error", j, wait, err)
		}
	}
}

// testUnknownRoot: a root never written has a core on every node, reads as empty through
// it (linearizable or at a version), is not placed by those reads, and is created by its
// first write.
func testUnknownRoot(t *testing.T, h Harness) {
	const root = "unknown-root"
	placer, _ := h.(Placer)
	for j := range h.Nodes() {
		if _, ok := read(t, h, j, root).Root(root); ok {
			t.Fatalf("node %d: a root never written exists in a linearizable view", j)
		}
		ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
		var v *meta.View
		var err error
		bounded(t, fmt.Sprintf("node %d: ReadViewAt of a root never written", j), func() {
			c, ferr := h.Cores(j).For(ctx, root)
			if ferr != nil {
				err = ferr
				return
			}
			v, err = c.ReadViewAt(ctx, 0)
		})
		cancel()
		if err != nil {
			t.Fatalf("node %d: ReadViewAt(0) of a root never written: %v", j, err)
		}
		if _, ok := v.Root(root); ok {
			t.Fatalf("node %d: a root never written exists in an applied view", j)
		}
		if placer != nil && placer.Placed(root) {
			t.Fatalf("reads through node %d placed a root never written", j)
		}
	}
	res := propose(t, h, h.Nodes()-1, meta.Header{}, put(root, "first", "1"))
	if placer != nil && !placer.Placed(root) {
		t.Fatal("the first write of a root did not place it")
	}
	for j := range h.Nodes() {
		v := read(t, h, j, root)
		if _, ok := v.Root(root); !ok {
			t.Fatalf("node %d: the root does not exist after its first write", j)
		}
		wantFile(t, fmt.Sprintf("node %d after the first write", j), v, root, "first", res.Generation)
	}
}

// testRequestID: a command repeated under its request id, through every node, is answered
// with the first result, marked replayed, and the file keeps the first generation.
func testRequestID(t *testing.T, h Harness) {
	const root = "request-id"
	hd := meta.Header{RequestID: "corestest-request-id"}
	first := proposeOnce(t, h, 0, hd, create(root, "once", "1"))
	if first.Replayed {
		t.Fatal("the first proposal of a request id is marked replayed")
	}
	for i := range h.Nodes() {
		again := propose(t, h, i, hd, create(root, "once", "1"))
		if !again.Replayed || again.Version != first.Version || again.Generation != first.Generation {
			t.Fatalf("node %d: the repeat answered %+v, want the first result %+v replayed", i, again, first)
		}
	}
	wantFile(t, "after the repeats", read(t, h, h.Nodes()-1, root), root, "once", first.Generation)
}

// testConcurrent: goroutines on every node write files of their own under request ids and
// read each write back linearizably; every write applies once, at its own generation.
func testConcurrent(t *testing.T, h Harness) {
	const root, writers, writes = "concurrent", 3, 4
	type written struct {
		path string
		gen  uint64
	}
	var mu sync.Mutex
	var got []written
	var errs []error
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	defer cancel()
	for i := range h.Nodes() {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range writes {
					path := fmt.Sprintf("n%d-w%d-%d", i, w, k)
					gen, err := writeAndRead(ctx, h, i, root, path)
					mu.Lock()
					got = append(got, written{path, gen})
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
	}
	bounded(t, "concurrent writers", wg.Wait)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	v := read(t, h, 0, root)
	seen := map[uint64]string{}
	for _, w := range got {
		wantFile(t, "after the concurrent writes", v, root, w.path, w.gen)
		if other, dup := seen[w.gen]; dup {
			t.Fatalf("%s and %s share generation %d", w.path, other, w.gen)
		}
		seen[w.gen] = w.path
	}
}

// writeAndRead writes path through node i under a request id and reads it back through a
// linearizable view of the same node, retrying retryable errors (the write under the same
// id) as propose and read do; it returns the write's generation.
func writeAndRead(ctx context.Context, h Harness, i int, root, path string) (uint64, error) {
	var res meta.Result
	if _, err := retry.Until(opTimeout, func() (err error) {
		res, err = proposeOn(ctx, h, i, meta.Header{RequestID: "corestest-" + path}, put(root, path, path))
		return stopUnlessRetryable(err)
	}); err != nil || res.Err != nil {
		return 0, fmt.Errorf("node %d: write %s: %v %v", i, path, err, res.Err)
	}
	var v *meta.View
	if _, err := retry.Until(opTimeout, func() (err error) {
		v, err = readOn(ctx, h, i, root)
		return stopUnlessRetryable(err)
	}); err != nil {
		return 0, fmt.Errorf("node %d: read after writing %s: %w", i, path, err)
	}
	if g := generation(v, root, path); g != res.Generation {
		return 0, fmt.Errorf("node %d: read after writing %s at generation %d shows generation %d", i, path, res.Generation, g)
	}
	return res.Generation, nil
}
