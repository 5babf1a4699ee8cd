package workbench_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/internal/testclock"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// slowBody yields size bytes in reads of at most 1 MiB, each MiB taking step on the clock
// (however the reader reads it: the ingest reads a network body in small pieces).
type slowBody struct {
	left  int
	step  time.Duration
	clock *testclock.Clock
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), b.left, 1<<20)
	copy(p[:n], bytes.Repeat([]byte{'a' + byte(b.left%26)}, n))
	b.left -= n
	b.clock.Advance(b.step * time.Duration(n) / (1 << 20))
	return n, nil
}

// TestAnUploadSlowerThanItsBoundFailsSayingSo: a body whose upload takes longer than the
// max upload duration (by default half the garbage collector's grace) fails with a
// ResourceExhausted that names the bound, not retryable, and writes nothing; the same body
// within the bound is written (issue 10 finding 17: an upload slower than the grace failed
// with a retryable ObjectUnavailable about data shared with older files, which a retry at
// the same speed could never pass).
func TestAnUploadSlowerThanItsBoundFailsSayingSo(t *testing.T) {
	const grace = 2 * time.Minute // small: the bound is one minute
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, GCGrace: grace}).Service
	if got := svc.Config().MaxUploadDuration; got != grace/2 {
		t.Fatalf("MaxUploadDuration = %s, want half the grace", got)
	}
	clock := testclock.New(time.Unix(1e9, 0))
	svc.SetClock(clock.Now)
	write := func(path string, step time.Duration) error {
		_, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: &slowBody{left: 12 << 20, step: step, clock: clock}, CreateWorkbench: true})
		return err
	}
	e := workbench.AsError(write("outputs/slow.bin", 10*time.Second)) // 12 reads: 2 minutes
	if e == nil || e.Code != workbench.CodeResourceExhausted || e.Retryable {
		t.Fatalf("a slow upload: %v, want ResourceExhausted, not retryable", e)
	}
	if e.Details["max_upload_duration_ms"] != int64(time.Minute/time.Millisecond) || !strings.Contains(e.Message, "1m0s") ||
		!strings.Contains(e.Message, "nothing was written") {
		t.Errorf("the answer does not say what happened: %v %v", e.Message, e.Details)
	}
	if _, err := svc.Reads.Stat(t.Context(), "a", "w", "outputs/slow.bin"); workbench.AsError(err).Code != workbench.CodeNotFound {
		t.Errorf("stat after the failed upload: %v", err)
	}
	if err := write("outputs/fast.bin", time.Second); err != nil { // 12 seconds
		t.Fatalf("an upload within the bound: %v", err)
	}
	for _, bound := range []time.Duration{grace, 2 * grace} {
		if _, err := workbench.New(nil, nil, workbench.Config{CursorKey: workbenchtest.CursorKey, GCGrace: grace, MaxUploadDuration: bound}); err == nil {
			t.Errorf("MaxUploadDuration %s with GCGrace %s was accepted", bound, grace)
		}
	}
}

// TestALargeBodyWhoseBlobsWereCollectedBeforeItsPublishSaysSo: a body too large to keep
// for another upload, whose blobs a sweep deleted between its upload and its publish, is
// answered ObjectUnavailable, retryable, saying the collector deleted this body's data
// before the publish and that nothing was written; sending it again writes it (issue 10
// finding 17: the answer spoke of data shared with older files).
func TestALargeBodyWhoseBlobsWereCollectedBeforeItsPublishSaysSo(t *testing.T) {
	n := newGCNode(t)
	big := make([]byte, 9<<20) // above blob.SingleSegmentMaxBytes: cut into chunks, not retained
	for i := range big {
		big[i] = byte(i*7919 + i/4096)
	}
	put := func(path string, body []byte) error {
		_, err := n.svc.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: bytes.NewReader(body), CreateWorkbench: true})
		return err
	}
	if err := put("f", big); err != nil {
		t.Fatal(err)
	}
	n.write(t, "f", "small now") // big's chunks lose their reference
	n.sweepUntil(t, worker.GCOptions{DryRun: true}, func(r worker.GCReport) bool { return r.Candidates > 0 })

	putDone, resume := stallFirstPut(n.store, nil)
	writeDone := make(chan error, 1)
	go func() { writeDone <- put("g", big) }()
	<-putDone
	rep, err := n.workers.CollectGarbage(t.Context(), worker.GCOptions{})
	close(resume)
	if err != nil || rep.Deleted == 0 {
		t.Fatalf("sweep: %+v %v", rep, err)
	}
	e := workbench.AsError(<-writeDone)
	if e == nil || e.Code != workbench.CodeObjectUnavailable || !e.Retryable ||
		!strings.Contains(e.Message, "deleted data of this body") || !strings.Contains(e.Message, "send the body again") {
		t.Fatalf("the write: %v, want a retryable ObjectUnavailable saying what happened", e)
	}
	n.store.Set(func(h *blobtest.Hooks) { h.OnPut = nil })
	if err := put("g", big); err != nil {
		t.Fatalf("sending the body again: %v", err)
	}
	if !bytes.Equal(readAll(t, n.svc, "g"), big) {
		t.Fatal("g does not read back")
	}
}

// untouched is a body that fails the test when it is read.
type untouched struct{ t *testing.T }

func (u untouched) Read([]byte) (int, error) {
	u.t.Error("the body of a refused write was read")
	return 0, io.ErrUnexpectedEOF
}

// TestAWriteOutsideThePrefixesReadsNoBody: a key bound to outputs writes below it; a
// write or append of a path outside is PermissionDenied naming the prefixes before a
// byte of its body is read, so a refused write leaves no blob behind. MayWrite answers
// as the write does, and writes nothing.
func TestAWriteOutsideThePrefixesReadsNoBody(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 64}).Service
	grepPutIn(t, svc, "w", "input/x.txt", "x")
	ctx := auth.WithPrincipal(t.Context(), auth.Principal{ID: "k", Agents: []string{"a"}, Prefixes: []string{"outputs"}, Scopes: auth.Scopes})
	if _, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/y.txt", Body: strings.NewReader("y")}); err != nil {
		t.Fatalf("a write inside: %v", err)
	}
	_, werr := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "input/x.txt", Body: untouched{t}})
	_, aerr := svc.Writes.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "input/new.txt", Body: untouched{t}})
	for what, err := range map[string]error{"write": werr, "append": aerr} {
		if e := workbench.AsError(err); e == nil || e.Code != workbench.CodePermissionDenied || e.Details["prefixes"] == nil {
			t.Errorf("a %s outside the prefixes: %v", what, err)
		}
	}
	if err := svc.Writes.MayWrite(ctx, "a", "w", "outputs/z.txt"); err != nil {
		t.Errorf("MayWrite inside the prefixes: %v", err)
	}
	if err := svc.Writes.MayWrite(ctx, "a", "w", "input/x.txt"); err == nil || err.Error() != werr.Error() {
		t.Errorf("MayWrite outside the prefixes: %v, want the write's %v", err, werr)
	}
	if err := svc.Writes.MayWrite(ctx, "a", "elsewhere", "outputs/z.txt"); err != nil {
		t.Errorf("MayWrite of a workbench the write would create: %v", err)
	}
	if _, err := svc.Reads.Stat(t.Context(), "a", "w", "outputs/z.txt"); workbench.AsError(err).Code != workbench.CodeNotFound {
		t.Errorf("MayWrite wrote outputs/z.txt: %v", err)
	}
}
