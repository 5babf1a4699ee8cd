package meta

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// appendLog writes path in agent's workbench w and appends to it n times, a blob segment
// each: every kept version carries the whole segment list, so the path's record encodes
// to about 20·n² bytes. It returns the last generation.
func appendLog(t testing.TB, s *shardT, agent, path string, n int) uint64 {
	t.Helper()
	first := s.ok(putBlob(agent, "w", path, "seg 0"))
	gen, size := first.Generation, int64(len("seg 0"))
	for i := 1; i <= n; i++ {
		data := fmt.Sprintf("seg %d", i)
		size += int64(len(data))
		gen = s.ok(Append{Agent: agent, Workspace: "w", Path: path, ExpectGeneration: gen, Segments: []Segment{blobSeg(data)},
			AppendedBytes: int64(len(data)), NewSize: size, NewDigest: digestOf([]byte(fmt.Sprint("log ", i)))}).Generation
	}
	return gen
}

// recordBytes is the size of the encoding of path's record in agent's workbench w.
func recordBytes(t testing.TB, v *View, agent, path string) int {
	t.Helper()
	ws, err := v.Workspace(agent, "w")
	if err != nil {
		t.Fatal(err)
	}
	k := pathKey(ws.Incarnation, path)
	rec, ok := v.st.paths.Get(k)
	if !ok {
		t.Fatalf("no record of %s", path)
	}
	data, err := encMode.Marshal(snapRecord{T: recPath, K: []byte(k), Path: rec})
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// partsCopy imports the chunks of a Split export into dst, as the driver does, and counts
// them; every chunk's Data must fit maxBytes (0: MaxMoveChunkBytes).
type partsCopy struct {
	t        testing.TB
	dst      *shardT
	ref      MoveRef
	maxBytes int
	chunks   uint64
	records  int64
	parts    int
	// landed, when set, runs after each chunk landed.
	landed func(c MoveExportChunk)
}

func (pc *partsCopy) all(export func(pos MovePosition, maxBytes int) (MoveExportChunk, error), delta bool) {
	pc.t.Helper()
	limit := pc.maxBytes
	if limit == 0 {
		limit = MaxMoveChunkBytes
	}
	for pos, done := (MovePosition{}), false; !done; {
		c, err := export(pos, pc.maxBytes)
		if err != nil {
			pc.t.Fatalf("export at %+v: %v", pos, err)
		}
		if len(c.Data) > limit {
			pc.t.Fatalf("a chunk of %d bytes, more than %d", len(c.Data), limit)
		}
		if c.Records > 0 || c.Part != nil {
			pc.dst.ok(MoveImportChunk{MoveRef: pc.ref, Seq: pc.chunks, Data: c.Data, Delta: delta, Part: c.Part})
			pc.chunks++
			pc.records += c.Records
			if c.Part != nil {
				pc.parts++
			}
			if pc.landed != nil {
				pc.landed(c)
			}
		}
		pos, done = c.Next, c.Done
	}
}

// finish finishes the import from sv's counters, confirms it and releases src.
func (pc *partsCopy) finish(src *shardT, sv *View) {
	pc.t.Helper()
	version, lists, seq := sv.Moves().Counters()
	pc.dst.ok(MoveImportFinish{MoveRef: pc.ref, Chunks: pc.chunks, Records: pc.records,
		SourceVersion: version, SourceNextListID: lists, SourceSeq: seq})
	pc.dst.ok(MoveImportConfirm{pc.ref})
	src.ok(MoveRelease{pc.ref})
	pc.dst.settle(pc.ref.Agent)
	src.settle(pc.ref.Agent)
}

// sameHistory fails unless tv lists every version of path in agent's workbench w as sv
// does, each body readable at its generation.
func sameHistory(t testing.TB, sv, tv *View, agent, path string) int {
	t.Helper()
	sw, _ := sv.Workspace(agent, "w")
	tw, err := tv.Workspace(agent, "w")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for before := uint64(0); ; {
		sh, smore, serr := sv.History().Versions(sw, path, before, MaxHistoryLimit)
		th, tmore, terr := tv.History().Versions(tw, path, before, MaxHistoryLimit)
		if serr != nil || terr != nil || smore != tmore || len(sh) != len(th) {
			t.Fatalf("history of %s before %d: %d versions (more %v, %v) on the target, %d (more %v, %v) on the source",
				path, before, len(th), tmore, terr, len(sh), smore, serr)
		}
		for i := range sh {
			es, _ := encMode.Marshal(sh[i])
			et, _ := encMode.Marshal(th[i])
			if !bytes.Equal(es, et) {
				t.Fatalf("version %d of %s differs:\nsource %+v\ntarget %+v", sh[i].Version, path, sh[i], th[i])
			}
			if sh[i].Entry != nil {
				at, err := tv.History().FileAt(tw, path, sh[i].Version)
				if err != nil || len(at.Entry.Segments) != len(sh[i].Entry.Segments) {
					t.Fatalf("the body of %s at generation %d on the target: %+v %v", path, sh[i].Version, at.Entry, err)
				}
			}
		}
		n += len(sh)
		if !smore {
			return n
		}
		before = sh[len(sh)-1].Version
	}
}

// A root holding a file whose record encodes to more than two chunks moves: an export that
// is not Split refuses it as before (ResourceExhausted); a Split one carries it in parts of
// at most MaxMoveChunkBytes, staged on the target (a Raft snapshot taken between two parts
// carries them) until the last lands it. On the target every version is there, readable
// at its generation, and the next append's compare-and-swap takes the source's generation.
func TestARecordLargerThanAChunkMovesInParts(t *testing.T) {
	src := newShard(t, Options{}, 0)
	dst := newShard(t, withPrefix(Options{}, "t"), 0)
	dst.nowMs = src.nowMs
	src.ok(putBlob("a", "w", "small", "before the log"))
	const appends = 700
	gen := appendLog(t, src, "a", "log", appends)
	src.ok(putBlob("a", "w", "z", "after the log"))
	if n := recordBytes(t, src.f.View(), "a", "log"); n <= 2*MaxMoveChunkBytes {
		t.Fatalf("the log's record encodes to %d bytes, not more than two chunks", n)
	}
	_, err := src.f.View().Moves().Export("a", MovePosition{Table: 0}, 0)
	if CodeOf(err) != CodeResourceExhausted || !strings.Contains(err.Error(), "more than a move chunk holds") {
		t.Fatalf("an export that is not split: %v, want ResourceExhausted", err)
	}

	ref := MoveRef{Agent: "a", MoveID: "m"}
	src.ok(MoveFence{ref})
	sv := src.f.View()
	root, _ := sv.Root("a")
	dst.ok(MoveImportBegin{MoveRef: ref, RootUID: root.UID})
	pc := &partsCopy{t: t, dst: dst, ref: ref}
	pc.landed = func(c MoveExportChunk) {
		if c.Part == nil || c.Records != 0 {
			return
		}
		m, _ := pc.dst.f.View().Moves().Of("a")
		if m.Parts == nil || int64(len(m.Parts.Data)) != c.Part.Offset+int64(len(c.Data)) {
			t.Fatalf("after a part the import stages %+v", m.Parts)
		}
		if n := pc.dst.f.st.paths.Len(); n != 0 { // the log's key comes first
			t.Fatalf("a record in parts landed before its last part: %d paths", n)
		}
		if c.Part.Offset == 0 {
			pc.dst = roundTrip(t, pc.dst)
		}
	}
	pc.all(func(pos MovePosition, n int) (MoveExportChunk, error) { return sv.Moves().Split().Export("a", pos, n) }, false)
	if pc.parts < 3 {
		t.Fatalf("the log went in %d parts, want at least 3", pc.parts)
	}
	dst = pc.dst
	pc.finish(src, sv)

	tv := dst.f.View()
	if n := sameHistory(t, sv, tv, "a", "log"); n != appends+1 {
		t.Fatalf("the target lists %d versions of the log, want %d", n, appends+1)
	}
	sameHistory(t, sv, tv, "a", "z")
	tw, _ := tv.Workspace("a", "w")
	if e, err := tv.File(tw, "log"); err != nil || e.Generation != gen || len(e.Segments) != appends+1 {
		t.Fatalf("the log on the target: %v, want generation %d", err, gen)
	}
	stale := Append{Agent: "a", Workspace: "w", Path: "log", ExpectGeneration: gen - 1, Segments: []Segment{blobSeg("more")},
		AppendedBytes: 4, NewSize: 4, NewDigest: digestOf([]byte("x"))}
	if r := dst.do(stale); CodeOf(r.Err) != CodeConflict {
		t.Fatalf("an append at an older generation: %+v", r.Err)
	}
	e, _ := tv.File(tw, "log")
	if r := dst.do(Append{Agent: "a", Workspace: "w", Path: "log", ExpectGeneration: gen, Segments: []Segment{blobSeg("more")},
		AppendedBytes: 4, NewSize: e.Size + 4, NewDigest: digestOf([]byte("x"))}); r.Err != nil || r.Generation <= gen {
		t.Fatalf("an append at the moved generation: %+v", r)
	}
	checkDerived(t, dst.f)
	if n := rootRecords(src.f.st, "a", root.UID); n != 0 {
		t.Fatalf("the source keeps %d records", n)
	}
}

// A record in parts changed after the pre-copy's view goes again in the delta, in parts
// too, and replaces the pre-copy's.
func TestADeltaCarriesAChangedRecordInParts(t *testing.T) {
	src := newShard(t, Options{}, 0)
	dst := newShard(t, withPrefix(Options{}, "t"), 0)
	dst.nowMs = src.nowMs
	appendLog(t, src, "a", "log", 60)
	src.ok(putBlob("a", "w", "gone", "deleted after the base"))
	const chunk = 4096
	if n := recordBytes(t, src.f.View(), "a", "log"); n <= 2*chunk {
		t.Fatalf("the log's record encodes to %d bytes, not more than two chunks of %d", n, chunk)
	}
	ref := MoveRef{Agent: "a", MoveID: "m"}
	base := src.f.View()
	root, _ := base.Root("a")
	dst.ok(MoveImportBegin{MoveRef: ref, RootUID: root.UID})
	pc := &partsCopy{t: t, dst: dst, ref: ref, maxBytes: chunk}
	pc.all(func(pos MovePosition, n int) (MoveExportChunk, error) {
		return base.Moves().Split().Export("a", pos, n)
	}, false)
	pre := pc.parts
	// The log grows after the base; a file goes.
	ws, _ := src.f.View().Workspace("a", "w")
	cur, _ := src.f.View().File(ws, "log")
	gen := src.ok(Append{Agent: "a", Workspace: "w", Path: "log", ExpectGeneration: cur.Generation, Segments: []Segment{blobSeg("late")},
		AppendedBytes: 4, NewSize: cur.Size + 4, NewDigest: digestOf([]byte("late"))}).Generation
	src.ok(Delete{Agent: "a", Workspace: "w", Path: "gone"})
	src.ok(MoveFence{ref})
	sv := src.f.View()
	pc.all(func(pos MovePosition, n int) (MoveExportChunk, error) {
		return sv.Moves().Split().ExportDelta("a", base, pos, n)
	}, true)
	if pre < 3 || pc.parts-pre < 3 {
		t.Fatalf("the log went in %d parts in the pre-copy and %d in the delta, want at least 3 each", pre, pc.parts-pre)
	}
	pc.finish(src, sv)
	tv := dst.f.View()
	if n := sameHistory(t, sv, tv, "a", "log"); n != 62 {
		t.Fatalf("the target lists %d versions of the log, want 62", n)
	}
	sameHistory(t, sv, tv, "a", "gone")
	tw, _ := tv.Workspace("a", "w")
	if e, err := tv.File(tw, "log"); err != nil || e.Generation != gen {
		t.Fatalf("the log on the target: %+v %v, want generation %d", e, err, gen)
	}
	checkDerived(t, dst.f)
}

// An import stopped between two parts holds nothing of the record in its tables: a finish,
// and a chunk of records, are refused while the parts wait, a part out of place changes
// nothing, and an abort leaves the target without the root; the move then runs again.
func TestAnImportAbortedBetweenPartsLeavesNothing(t *testing.T) {
	src := newShard(t, Options{}, 0)
	dst := newShard(t, withPrefix(Options{}, "t"), 0)
	dst.nowMs = src.nowMs
	dst.ok(putBlob("c", "w", "f", "the target's own"))
	appendLog(t, src, "a", "log", 60)
	before := exportOf(t, dst.f.View(), "c")
	ref := MoveRef{Agent: "a", MoveID: "m"}
	src.ok(MoveFence{ref})
	sv := src.f.View()
	root, _ := sv.Root("a")
	dst.ok(MoveImportBegin{MoveRef: ref, RootUID: root.UID})
	var seq uint64
	var pos MovePosition
	for pos.Sent == 0 || seq < 2 { // two parts of the log, not its last
		c, err := sv.Moves().Split().Export("a", pos, 2048)
		if err != nil || c.Done {
			t.Fatalf("export: %+v %v", c, err)
		}
		dst.ok(MoveImportChunk{MoveRef: ref, Seq: seq, Data: c.Data, Part: c.Part})
		seq, pos = seq+1, c.Next
	}
	next, err := sv.Moves().Split().Export("a", pos, 2048)
	if err != nil || next.Part == nil || next.Records != 0 {
		t.Fatalf("the next part: %+v %v", next, err)
	}
	other, _ := sv.Moves().Export("a", MovePosition{Table: 1}, 0)
	skipped := *next.Part
	skipped.Offset += 10
	for _, c := range []MoveImportChunk{
		{MoveRef: ref, Seq: seq, Data: other.Data},                                                               // records between two parts
		{MoveRef: ref, Seq: seq, Data: next.Data, Part: &skipped},                                                // a gap
		{MoveRef: ref, Seq: seq, Data: next.Data, Part: &MovePart{Total: 1 << 20}},                               // another record's first part
		{MoveRef: ref, Seq: seq, Data: next.Data[:1], Part: &MovePart{Offset: next.Part.Offset, Total: 1 << 40}}, // another length
	} {
		if r := dst.do(c); CodeOf(r.Err) != CodeInvalidArguments {
			t.Fatalf("chunk %+v between two parts: %+v", c.Part, r.Err)
		}
	}
	version, lists, sseq := sv.Moves().Counters()
	if r := dst.do(MoveImportFinish{MoveRef: ref, Chunks: seq, Records: 0, SourceVersion: version,
		SourceNextListID: lists, SourceSeq: sseq}); CodeOf(r.Err) != CodeConflict {
		t.Fatalf("a finish between two parts: %+v", r.Err)
	}
	m, _ := dst.f.View().Moves().Of("a")
	if m.Chunks != seq || m.Parts == nil || dst.f.st.paths.Len() != 1 {
		t.Fatalf("the import between two parts: %+v, %d paths", m, dst.f.st.paths.Len())
	}
	if r := dst.do(MoveImportChunk{MoveRef: ref, Seq: 0, Data: nil}); r.Err != nil || r.Move.Parts == nil || r.Move.Parts.Data != nil {
		t.Fatalf("a repeated chunk's answer: %+v", r)
	}
	if m := dst.ok(MoveImportAbort{ref}).Move; m.State != MoveAborting || m.Parts != nil {
		t.Fatalf("the aborting import: %+v", m)
	}
	dst.settle("a")
	checkAbortLeftNothing(t, dst, "a", root.UID, "c", before)
	// The move again, whole.
	ref2 := MoveRef{Agent: "a", MoveID: "m2"}
	src.ok(MoveLift{ref})
	src.ok(MoveFence{ref2})
	sv = src.f.View()
	dst.ok(MoveImportBegin{MoveRef: ref2, RootUID: root.UID})
	pc := &partsCopy{t: t, dst: dst, ref: ref2, maxBytes: 2048}
	pc.all(func(pos MovePosition, n int) (MoveExportChunk, error) { return sv.Moves().Split().Export("a", pos, n) }, false)
	pc.finish(src, sv)
	sameHistory(t, sv, dst.f.View(), "a", "log")
	checkDerived(t, dst.f)
}

// A chunk that carries a part needs cluster version MovePartsVersion (a replica of 9 would
// read its bytes as records); other chunks keep theirs. An export that is not Split never
// makes one and refuses a record larger than a chunk as before; a position inside a record
// is only one of a Split export.
func TestPartsNeedTheirClusterVersion(t *testing.T) {
	ref := MoveRef{Agent: "a", MoveID: "m"}
	part := MoveImportChunk{MoveRef: ref, Data: []byte{1}, Part: &MovePart{Total: 2}}
	for _, c := range []struct {
		b    MoveImportChunk
		want int
	}{
		{MoveImportChunk{MoveRef: ref}, OpVersion(OpMoveImportChunk)},
		{MoveImportChunk{MoveRef: ref, Delta: true}, MoveDeltaVersion},
		{part, MovePartsVersion},
		{MoveImportChunk{MoveRef: ref, Delta: true, Part: part.Part}, MovePartsVersion},
	} {
		if got := CommandVersion(c.b); got != c.want {
			t.Errorf("a chunk (delta %v, part %v) needs version %d, want %d", c.b.Delta, c.b.Part != nil, got, c.want)
		}
	}
	if MovePartsVersion != 10 || ClusterVersion < MovePartsVersion || MovePartsVersion <= WorkbenchFilesVersion {
		t.Fatalf("MovePartsVersion %d, ClusterVersion %d: parts need a version of their own", MovePartsVersion, ClusterVersion)
	}
	s := newShard(t, Options{}, 0)
	appendLog(t, s, "a", "log", 60)
	v := s.f.View()
	for pos, done := (MovePosition{}), false; !done; {
		c, err := v.Moves().Export("a", pos, 1024)
		if err != nil || c.Part != nil {
			t.Fatalf("an export that is not split: %+v %v", c.Part, err)
		}
		pos, done = c.Next, c.Done
	}
	if _, err := v.Moves().Export("a", MovePosition{Sent: 10}, 1024); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("a position inside a record, not split: %v", err)
	}
	if _, err := v.Moves().Split().Export("a", MovePosition{Sent: 1 << 30}, 1024); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("a position past the record: %v", err)
	}
}
