package meta

import (
	"fmt"
	"testing"
)

// TestCompactReplacesARangeWithoutChangingTheFile: a compaction keeps digest, size and
// generation, never loses to an append that landed after it was prepared, fails when the
// range changed, and keeps reference counts exact.
func TestCompactReplacesARangeWithoutChangingTheFile(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	var gen uint64
	var size int64
	blobSeg := func(i int) Segment {
		return Segment{Digest: digestOf([]byte(fmt.Sprint("seg", i))), Size: 10}
	}
	for i := 0; i < CompactMinSegments; i++ {
		r := h.do(Append{Agent: "a", Workspace: "w", Path: "logs/run.log", CreateWorkspace: true, ExpectGeneration: gen,
			Segments: []Segment{blobSeg(i)}, AppendedBytes: 10, NewSize: size + 10, NewDigest: digestOf([]byte(fmt.Sprint(size + 10)))})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		gen, size = r.Generation, r.Size
	}
	v := h.f.View()
	ws, _ := v.Workspace("a", "w")
	cands, _ := v.Shard().CompactionCandidates("", 10)
	if len(cands) != 1 || cands[0].Path != "logs/run.log" {
		t.Fatalf("candidates: %+v", cands)
	}
	before, _ := v.File(ws, "logs/run.log")
	rangeDigest := SegmentsDigest(before.Segments[:CompactMinSegments])
	// An append lands between preparing and proposing the compaction.
	r := h.do(Append{Agent: "a", Workspace: "w", Path: "logs/run.log", ExpectGeneration: gen,
		Segments: []Segment{blobSeg(99)}, AppendedBytes: 10, NewSize: size + 10, NewDigest: digestOf([]byte("final"))})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	merged := Segment{Digest: digestOf([]byte("merged")), Size: int64(10 * CompactMinSegments)}
	res := h.do(Compact{Agent: "a", Workspace: "w", Path: "logs/run.log", Start: 0, End: CompactMinSegments, RangeDigest: rangeDigest, Replacement: []Segment{merged}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	v = h.f.View()
	after, _ := v.File(ws, "logs/run.log")
	if after.Generation != r.Generation || after.Digest != digestOf([]byte("final")) || after.Size != size+10 || len(after.Segments) != 2 || after.Segments[1].Digest != blobSeg(99).Digest {
		t.Fatalf("after compaction: %+v", after)
	}
	if wsAfter, _ := v.Workspace("a", "w"); wsAfter.Revision != r.Version {
		t.Fatalf("compaction moved the workbench revision to %d", wsAfter.Revision)
	}
	if cands, _ := v.Shard().CompactionCandidates("", 10); len(cands) != 0 {
		t.Fatalf("still a candidate: %+v", cands)
	}
	if err := checkRefcounts(h.f); err != nil {
		t.Fatal(err)
	}
	if br, _ := v.st.blobs.Get(blobKey("r1", blobSeg(0).Digest)); br.Count != 0 {
		t.Fatalf("a replaced segment keeps %d references", br.Count)
	}
	// The same compaction again: the range changed.
	if res := h.do(Compact{Agent: "a", Workspace: "w", Path: "logs/run.log", Start: 0, End: CompactMinSegments, RangeDigest: rangeDigest, Replacement: []Segment{merged}}); CodeOf(res.Err) != CodeConflict {
		t.Fatalf("stale compaction: %v", res.Err)
	}
	if res := h.do(Compact{Agent: "a", Workspace: "w", Path: "logs/run.log", Start: 0, End: 2, RangeDigest: SegmentsDigest(after.Segments), Replacement: []Segment{{Size: 5}}}); CodeOf(res.Err) == "" {
		t.Fatal("a replacement of another size was accepted")
	}
}
