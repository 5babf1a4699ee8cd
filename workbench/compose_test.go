package workbench_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

func TestComposeConcatenatesPartsWithoutMovingBytes(t *testing.T) {
	hs, puts := blobtest.CountingPuts(t)
	n := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 64}, hs)
	ctx := context.Background()
	// Parts of every shape: a body of several segments, an inline one, a one-segment one.
	bodies := [][]byte{bytes.Repeat([]byte("0123456789abcdef"), 1<<18), []byte("tiny"), bytes.Repeat([]byte("xyz"), 5000)}
	var parts []workbench.ComposePart
	var whole []byte
	for i, b := range bodies {
		path := "parts/" + string(rune('1'+i))
		res, err := n.Service.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "up", Path: path,
			Body: bytes.NewReader(b), CreateWorkbench: true})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, workbench.ComposePart{Path: path, IfGeneration: res.Generation})
		whole = append(whole, b...)
	}
	if _, err := n.Service.Lifecycle.CreateWorkbench(ctx, "a", "dst", ""); err != nil {
		t.Fatal(err)
	}
	before := puts.Load()
	res, err := n.Service.Writes.Compose(ctx, workbench.ComposeRequest{Agent: "a", SrcWorkbench: "up", Parts: parts,
		Workbench: "dst", Path: "outputs/model.bin", ContentType: "application/x-model", Cond: meta.CondCreateOnly})
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != sha256.Sum256(whole) || res.Size != int64(len(whole)) || res.ContentType != "application/x-model" {
		t.Fatalf("composed %+v, want %d bytes of digest %x", res, len(whole), sha256.Sum256(whole))
	}
	if after := puts.Load(); after != before {
		t.Fatalf("compose wrote %d blobs, want none", after-before)
	}
	for _, p := range parts {
		if _, err := n.Service.Writes.Delete(ctx, "a", "up", p.Path, 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, n.Service, "dst", "outputs/model.bin"); !bytes.Equal(got, whole) {
		t.Fatalf("the composed file after its parts' deletes: %d bytes, want %d", len(got), len(whole))
	}
	// Appending resumes the composed file's hash state: it must be the whole body's.
	app, err := n.Service.Writes.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "dst", Path: "outputs/model.bin",
		Body: bytes.NewReader([]byte("more"))})
	if err != nil {
		t.Fatal(err)
	}
	if app.Digest != sha256.Sum256(append(whole, "more"...)) {
		t.Fatalf("an append to the composed file has digest %x, want the whole body's", app.Digest)
	}
}

func TestComposeKeepsItsConditions(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 64})
	ctx := context.Background()
	put := func(path, body string) workbench.FileResult { return writeFile(t, n.Service, path, body) }
	old := put("p/1", "first")
	put("p/1", "second")
	put("p/2", "two")
	put("input/taken", "x")
	var e *workbench.Error
	for name, tc := range map[string]struct {
		req  workbench.ComposeRequest
		want string
	}{
		"a stale part generation": {workbench.ComposeRequest{Parts: []workbench.ComposePart{{Path: "p/1", IfGeneration: old.Generation}, {Path: "p/2"}},
			Path: "input/b"}, workbench.CodeConflict},
		"create-only on a taken path": {workbench.ComposeRequest{Parts: []workbench.ComposePart{{Path: "p/1"}, {Path: "p/2"}},
			Path: "input/taken", Cond: meta.CondCreateOnly}, workbench.CodeAlreadyExists},
		"a missing part":   {workbench.ComposeRequest{Parts: []workbench.ComposePart{{Path: "p/1"}, {Path: "p/3"}}, Path: "input/b"}, workbench.CodeNotFound},
		"no parts":         {workbench.ComposeRequest{Path: "input/b"}, workbench.CodeInvalidArguments},
		"a missing target": {workbench.ComposeRequest{Parts: []workbench.ComposePart{{Path: "p/1"}}, Workbench: "nope", Path: "input/b"}, workbench.CodeNotFound},
	} {
		req := tc.req
		req.Agent, req.SrcWorkbench = "a", "w"
		if req.Workbench == "" {
			req.Workbench = "w"
		}
		_, err := n.Service.Writes.Compose(ctx, req)
		if !errors.As(err, &e) || e.Code != tc.want || e.Retryable {
			t.Errorf("%s: %v, want a final %s", name, err, tc.want)
		}
	}
	if got := readFile(t, n.Service, "w", "input/taken"); string(got) != "x" {
		t.Fatalf("a refused compose changed its target: %q", got)
	}
	if _, err := n.Service.Writes.Compose(ctx, workbench.ComposeRequest{Agent: "a", SrcWorkbench: "w", Workbench: "w", Path: "input/taken",
		Parts: []workbench.ComposePart{{Path: "p/1"}, {Path: "p/2"}}, Cond: meta.CondIfGeneration, IfGeneration: 999}); !errors.As(err, &e) || e.Code != workbench.CodeConflict {
		t.Fatalf("compose on a stale generation: %v, want Conflict", err)
	}
}

// A compose reads its parts from one view and publishes fenced at it: when the collector
// deletes a part's blob in between (the part was deleted and swept while the compose
// hashed the others), the publish is refused as ObjectUnavailable, retryable, and nothing
// points at the deleted blob.
func TestComposeRacingASweepOfItsPartsPublishesNothing(t *testing.T) {
	n := newGCNode(t)
	n.write(t, "p1", "the first part")
	n.write(t, "p2", "the second part")
	second := n.key(t, "the second part")
	reading, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	n.store.Set(func(h *blobtest.Hooks) {
		h.OnGet = func(k blob.Key) {
			if k == second {
				once.Do(func() { close(reading); <-resume })
			}
		}
	})
	release := sync.OnceFunc(func() { close(resume) })
	t.Cleanup(release)
	done := make(chan error, 1)
	go func() {
		_, err := n.svc.Writes.Compose(context.Background(), workbench.ComposeRequest{Agent: "a", SrcWorkbench: "w",
			Parts: []workbench.ComposePart{{Path: "p1"}, {Path: "p2"}}, Workbench: "w", Path: "whole"})
		done <- err
	}()
	select { // the compose read its view and stalls hashing the second part
	case <-reading:
	case err := <-done:
		t.Fatalf("the compose ended before it read its second part: %v", err)
	}
	if _, err := n.svc.Writes.Delete(t.Context(), "a", "w", "p1", 0, ""); err != nil {
		t.Fatal(err)
	}
	retry.SucceedsSoon(t, "a sweep deletes the first part's blob", func() error {
		if _, err := n.workers.CollectGarbage(t.Context(), worker.GCOptions{Grace: time.Nanosecond}); err != nil {
			return err
		}
		if n.stored(t, "the first part") {
			return errors.New("still stored")
		}
		return nil
	})
	release()
	var e *workbench.Error
	if err := <-done; !errors.As(err, &e) || e.Code != workbench.CodeObjectUnavailable || !e.Retryable {
		t.Fatalf("the compose after its part was collected: %v, want a retryable ObjectUnavailable", err)
	}
	if _, err := n.svc.Reads.Open(t.Context(), "a", "w", "whole"); err == nil {
		t.Fatal("the refused compose published a file")
	}
}
