package workbench_test

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/api/workbench/workbenchtest"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// slowBody yields size bytes in 1 MiB reads, each taking step on the clock.
type slowBody struct {
	left  int
	step  time.Duration
	clock *fakeClock
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), b.left, 1<<20)
	copy(p[:n], bytes.Repeat([]byte{'a' + byte(b.left%26)}, n))
	b.left -= n
	b.clock.advance(b.step)
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
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	svc.SetClock(clock.Now)
	write := func(path string, step time.Duration) error {
		_, err := svc.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
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
	if _, err := svc.Stat(t.Context(), "a", "w", "outputs/slow.bin"); workbench.AsError(err).Code != workbench.CodeNotFound {
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
