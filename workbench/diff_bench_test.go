package workbench_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob/mem"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/diff"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// fsmCore is a Core over an FSM in this process: commands apply at once, without Raft or
// a log, so a benchmark can build a 100,000-file workbench in seconds.
type fsmCore struct {
	mu      sync.Mutex
	fsm     *meta.FSM
	version uint64
}

func (c *fsmCore) Propose(_ context.Context, h meta.Header, b meta.Body) (meta.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	h.TimeMs = time.Now().UnixMilli()
	return c.fsm.ApplyBody(c.version, h, b), nil
}

func (c *fsmCore) ReadView(context.Context) (*meta.View, error)           { return c.fsm.View(), nil }
func (c *fsmCore) ReadViewAt(context.Context, uint64) (*meta.View, error) { return c.fsm.View(), nil }

// WaitApplied: nothing follows the change feed here; a version not applied yet waits for
// ctx's end.
func (c *fsmCore) WaitApplied(ctx context.Context, version uint64) error {
	if c.fsm.AppliedVersion() >= version {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// BenchmarkDiffStates100k pages the state diff between two commits of a 100,000-file
// workbench (inline bodies, FSM without Raft) in which every 100th file was removed,
// every other 50th changed and 500 were added: 2,501 changes with the run manifest, 1000
// per page. An op is one page (the first, examining about 40,000 members per side);
// pages/walk and changes/walk describe a whole walk run once (go test -run XXX -bench DiffStates100k -benchmem ./workbench).
func BenchmarkDiffStates100k(b *testing.B) {
	const files = 100_000
	svc, err := workbench.New(&fsmCore{fsm: meta.New(meta.Options{})}, mem.New(), workbench.Config{InlineMaxBytes: 4096, CursorKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range files {
		write(b, svc, fmt.Sprintf("input/d%03d/f%06d", i%1000, i), fmt.Sprint("body ", i))
	}
	c1 := commitNow(b, svc, 1)
	for i := range files {
		p := fmt.Sprintf("input/d%03d/f%06d", i%1000, i)
		switch {
		case i%100 == 0:
			if _, err := svc.Writes.Delete(ctx, "a", "w", p, 0, ""); err != nil {
				b.Fatal(err)
			}
		case i%50 == 0:
			write(b, svc, p, "changed")
		case i%200 == 1:
			write(b, svc, p+".new", "added")
		}
	}
	c2 := commitNow(b, svc, 2)
	req := workbench.DiffRequest{Agent: "a", Workbench: "w", From: side(b, "commit:"+c1), To: side(b, "commit:"+c2), Limit: workbench.MaxDiffLimit}
	pages, changes := 0, 0
	for r := req; ; pages++ {
		res, err := svc.Review.Diff(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		changes += len(res["changes"].([]diff.Row))
		if res["next_cursor"] == nil {
			break
		}
		r.Cursor = res["next_cursor"].(string)
	}
	if want := files/100 + files/100 + files/200 + 1; changes != want { // + the run manifest
		b.Fatalf("%d changes, want %d", changes, want)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := svc.Review.Diff(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pages+1), "pages/walk")
	b.ReportMetric(float64(changes), "changes/walk")
}

// BenchmarkDiffFile10MiB diffs a 10 MiB text file in the object store against its
// previous generation (held by a snapshot), every 1000th line changed: both bodies are
// read through the verified path under the query budget (go test -run XXX -bench
// DiffFile10MiB -benchmem ./workbench).
func BenchmarkDiffFile10MiB(b *testing.B) {
	svc := workbenchtest.New(b, workbench.Config{}).Service
	var old, new bytes.Buffer
	for i := 0; old.Len() < 10<<20; i++ {
		fmt.Fprintf(&old, "%08d the quick brown fox jumps over the lazy dog\n", i)
		if i%1000 == 0 {
			fmt.Fprintf(&new, "%08d THE QUICK BROWN FOX\n", i)
		} else {
			fmt.Fprintf(&new, "%08d the quick brown fox jumps over the lazy dog\n", i)
		}
	}
	g := write(b, svc, "outputs/big.txt", old.String()).Generation
	if _, err := svc.Tools.Snapshot(context.Background(), "a", workbench.SnapshotInput{ID: "w"}); err != nil {
		b.Fatal(err)
	}
	write(b, svc, "outputs/big.txt", new.String())
	req := workbench.DiffRequest{Agent: "a", Workbench: "w", Path: "outputs/big.txt", From: workbench.DiffSide{Kind: workbench.SideGeneration, Generation: g}}
	b.SetBytes(int64(old.Len() + new.Len()))
	b.ResetTimer()
	for b.Loop() {
		r, err := svc.Review.Diff(context.Background(), req)
		if err != nil || r["text"] != true || r["hunk_count"].(int) == 0 {
			b.Fatalf("%v %v", r["hunk_count"], err)
		}
	}
}
