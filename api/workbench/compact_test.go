package workbench_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/api/workbench/workbenchtest"
)

// TestCompactionRollsUpSmallAppends: a log built by many small appends (each a blob
// segment) is rewritten as one segment; its bytes, digest and generation do not change,
// and appends go on meanwhile.
func TestCompactionRollsUpSmallAppends(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 0})
	svc := n.Service
	ctx := context.Background()
	var want bytes.Buffer
	for i := 0; i < 40; i++ {
		line := fmt.Sprintf("line %03d %s\n", i, strings.Repeat("x", 100))
		want.WriteString(line)
		if _, err := svc.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/run.log", Body: strings.NewReader(line), CreateWorkbench: true}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := svc.Stat(ctx, "a", "w", "logs/run.log")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := svc.CompactOnce(ctx, 10)
	if err != nil || rep.Compacted != 1 || rep.SegmentsBefore != 40 || rep.SegmentsAfter != 1 {
		t.Fatalf("compaction: %+v %v", rep, err)
	}
	view, _ := n.Shard.ReadView(ctx)
	ws, _ := view.Workspace("a", "w")
	e, _ := view.File(ws, "logs/run.log")
	if len(e.Segments) != 1 || e.Generation != before.File.Generation || e.Digest != before.File.Digest {
		t.Fatalf("after compaction: %d segments, generation %d (was %d)", len(e.Segments), e.Generation, before.File.Generation)
	}
	if got := readAll(t, svc, "logs/run.log"); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("compacted body differs")
	}
	// Appends continue on the compacted list; nothing is left to compact.
	if _, err := svc.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/run.log", Body: strings.NewReader("tail\n")}); err != nil {
		t.Fatal(err)
	}
	want.WriteString("tail\n")
	if got := readAll(t, svc, "logs/run.log"); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("body after a further append differs")
	}
	if rep, err := svc.CompactOnce(ctx, 10); err != nil || rep.Candidates != 0 {
		t.Fatalf("second pass: %+v %v", rep, err)
	}
}
