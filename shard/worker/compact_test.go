package worker_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/worker"
)

// TestCompactionRollsUpSmallAppends: a log built by many small appends (each a blob
// segment) is rewritten as one segment, inline when the run fits the inline bound, else one
// blob; its bytes, digest and generation do not change, and appends go on meanwhile.
func TestCompactionRollsUpSmallAppends(t *testing.T) {
	for _, tc := range []struct {
		name       string
		inlineMax  int64
		wantInline bool
	}{
		{"a run beyond the inline bound becomes one blob", 0, false},
		{"a run within the inline bound is stored inline", 8192, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, worker.Config{InlineMaxBytes: tc.inlineMax}, true)
			var body []byte
			for i := 0; i < 40; i++ {
				body = appendTo(t, n.shard, n.store, "a", "logs/run.log", body, fmt.Sprintf("line %03d %s\n", i, strings.Repeat("x", 100)))
			}
			_, before := readBody(t, n.shard, n.store, "a", "logs/run.log")
			rep, err := n.set.Compact(t.Context(), 10)
			if err != nil || rep.Candidates != 1 || rep.Compacted != 1 || rep.SegmentsBefore != 40 || rep.SegmentsAfter != 1 {
				t.Fatalf("compaction: %+v %v", rep, err)
			}
			got, after := readBody(t, n.shard, n.store, "a", "logs/run.log")
			if len(after.Segments) != 1 || after.Segments[0].IsInline() != tc.wantInline ||
				after.Generation != before.Generation || after.Digest != before.Digest || !bytes.Equal(got, body) {
				t.Fatalf("after compaction: %d segments (inline %v), generation %d (was %d)", len(after.Segments),
					after.Segments[0].IsInline(), after.Generation, before.Generation)
			}
			// A compacted blob records its BLAKE3, which reads verify it by; inline bytes record none.
			if want := meta.Blake3(blob.Blake3Of(got)); !tc.wantInline && after.Segments[0].Blake3 != want ||
				tc.wantInline && after.Segments[0].Blake3 != (meta.Blake3{}) {
				t.Fatalf("the compacted segment records BLAKE3 %x, want %x (inline %v)", after.Segments[0].Blake3, want, tc.wantInline)
			}
			// Appends continue on the compacted list; nothing is left to compact.
			body = appendTo(t, n.shard, n.store, "a", "logs/run.log", body, "tail\n")
			if got, _ := readBody(t, n.shard, n.store, "a", "logs/run.log"); !bytes.Equal(got, body) {
				t.Fatal("body after a further append differs")
			}
			if rep, err := n.set.Compact(t.Context(), 10); err != nil || rep.Candidates != 0 {
				t.Fatalf("second pass: %+v %v", rep, err)
			}
			if runs, files, removed := metricstest.Value(t, n.reg, "cairn_compaction_runs_total"), metricstest.Value(t, n.reg, "cairn_compaction_files_total"),
				metricstest.Value(t, n.reg, "cairn_compaction_segments_removed_total"); runs != 2 || files != 1 || removed != 39 {
				t.Errorf("compaction metrics: runs %v files %v removed %v, want 2, 1, 39", runs, files, removed)
			}
		})
	}
}
