package meta

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// shardT applies encoded commands to one FSM, as one shard's log would: its own indexes,
// the clock the test hands it.
type shardT struct {
	t     testing.TB
	f     *FSM
	index uint64
	nowMs int64
	step  int64 // command time each command adds, ms
}

func newShard(t testing.TB, opts Options, firstIndex uint64) *shardT {
	return &shardT{t: t, f: New(opts), index: firstIndex, nowMs: 1_000_000, step: 1000}
}

func (s *shardT) run(h Header, b Body) Result {
	s.t.Helper()
	s.index++
	s.nowMs += s.step
	h.TimeMs = s.nowMs
	data, err := EncodeCommand(h, b)
	if err != nil {
		s.t.Fatalf("encode %T: %v", b, err)
	}
	return s.f.Apply(s.index, data)
}

func (s *shardT) do(b Body) Result {
	s.t.Helper()
	return s.run(Header{}, b)
}

func (s *shardT) ok(b Body) Result {
	s.t.Helper()
	r := s.do(b)
	if r.Err != nil {
		s.t.Fatalf("%T: %v", b, r.Err)
	}
	return r
}

// settle applies ticks until no move walk of agent runs on the shard.
func (s *shardT) settle(agent string) {
	s.t.Helper()
	for range 10_000 {
		m, ok := s.f.View().Moves().Of(agent)
		if !ok || m.State == MoveReleased || m.State == MoveFenced || m.State == MoveImporting ||
			m.State == MoveArrived && !m.Rescheduling {
			return
		}
		s.do(Tick{})
	}
	s.t.Fatalf("the move walk of %q does not end", agent)
}

func blobSeg(data string) Segment {
	return Segment{Digest: digestOf([]byte(data)), Size: int64(len(data))}
}

func putBlob(agent, ws, path, data string) Put {
	return Put{Agent: agent, Workspace: ws, Path: path, CreateWorkspace: true, Size: int64(len(data)),
		Digest: digestOf([]byte(data)), Segments: []Segment{blobSeg(data)}}
}

// moveRoot moves agent's root from src to dst the way the controller does: fence, export
// from one view in chunks of chunkBytes, import, finish, confirm, release.
func moveRoot(t testing.TB, src, dst *shardT, agent, id string, chunkBytes int) (*View, Result) {
	t.Helper()
	view, _, fin := fenceAndImport(t, src, dst, agent, id, chunkBytes)
	dst.ok(MoveImportConfirm{MoveRef{Agent: agent, MoveID: id}})
	src.ok(MoveRelease{MoveRef{Agent: agent, MoveID: id}})
	dst.settle(agent)
	src.settle(agent)
	return view, fin
}

// fenceAndImport fences agent's root on src and imports it whole into dst from the fenced
// view, up to the finish: the view, the records imported and the finish's answer.
func fenceAndImport(t testing.TB, src, dst *shardT, agent, id string, chunkBytes int) (*View, int64, Result) {
	t.Helper()
	src.ok(MoveFence{MoveRef{Agent: agent, MoveID: id}})
	view := src.f.View()
	root, _ := view.Root(agent)
	dst.ok(MoveImportBegin{MoveRef: MoveRef{Agent: agent, MoveID: id}, RootUID: root.UID})
	chunks, records := exportInto(t, view, dst, agent, id, chunkBytes)
	version, lists, seq := view.Moves().Counters()
	fin := dst.ok(MoveImportFinish{MoveRef: MoveRef{Agent: agent, MoveID: id}, Chunks: chunks, Records: records,
		SourceVersion: version, SourceNextListID: lists, SourceSeq: seq})
	return view, records, fin
}

// exportInto imports every chunk of agent's root exported from view into dst.
func exportInto(t testing.TB, view *View, dst *shardT, agent, id string, chunkBytes int) (chunks uint64, records int64) {
	t.Helper()
	var pos MovePosition
	for {
		c, err := view.Moves().Export(agent, pos, chunkBytes)
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		if c.Records > 0 {
			dst.ok(MoveImportChunk{MoveRef: MoveRef{Agent: agent, MoveID: id}, Seq: chunks, Data: c.Data})
			chunks++
			records += c.Records
		}
		if c.Done {
			return chunks, records
		}
		pos = c.Next
	}
}

// rootRecords counts the records of agent's root (uid) on a state, the move's own
// bookkeeping included.
func rootRecords(st *state, agent, uid string) int {
	n := 0
	walkRoot(st, spaceOf(st, agent, uid), MovePosition{}, true, func(*rootTable, string, snapRecord) bool {
		n++
		return true
	})
	return n
}

// exportOf is the whole export of agent's root: its records, canonically.
func exportOf(t testing.TB, v *View, agent string) []byte {
	t.Helper()
	var out bytes.Buffer
	var pos MovePosition
	for {
		c, err := v.Moves().Export(agent, pos, 0)
		if err != nil {
			t.Fatalf("export %q: %v", agent, err)
		}
		out.Write(c.Data)
		if c.Done {
			return out.Bytes()
		}
		pos = c.Next
	}
}

func TestFenceRefusesWritesKeepsReadsAndLiftsOnRollback(t *testing.T) {
	s := newShard(t, Options{RequireRootAssignment: true}, 0)
	s.ok(AssignRoot{Agent: "a"})
	s.ok(AssignRoot{Agent: "b"})
	s.ok(putBlob("a", "w", "f", "one"))
	first := s.ok(MoveFence{MoveRef{Agent: "a", MoveID: "m1"}})
	if first.Move == nil || first.Move.State != MoveFenced {
		t.Fatalf("fence: %+v", first)
	}
	if r := s.do(MoveFence{MoveRef{Agent: "a", MoveID: "m1"}}); r.Err != nil || r.Move.FencedVersion != first.Move.FencedVersion {
		t.Fatalf("a repeated fence: %+v", r)
	}
	if r := s.do(MoveFence{MoveRef{Agent: "a", MoveID: "m2"}}); CodeOf(r.Err) != CodeConflict || r.Err.OperationID != "m1" {
		t.Fatalf("another move's fence: %+v", r.Err)
	}
	for _, b := range []Body{putBlob("a", "w", "g", "two"), Delete{Agent: "a", Workspace: "w", Path: "f"},
		GCIntent{Agent: "a", TakeOverAfterMs: 1, Candidates: []GCCandidate{{Digest: digestOf([]byte("x")), Orphan: true}}},
		SetQuota{Agent: "a", Quota: Quota{MaxFiles: 9}}, AssignRoot{Agent: "a"}} {
		if r := s.do(b); CodeOf(r.Err) != CodeRootMoving || r.Err.OperationID != "m1" {
			t.Fatalf("%T under the fence: %+v", b, r.Err)
		}
	}
	if r := s.run(Header{RequestID: "k"}, putBlob("a", "w", "g", "two")); CodeOf(r.Err) != CodeRootMoving {
		t.Fatalf("a keyed write under the fence: %+v", r.Err)
	}
	s.ok(putBlob("b", "w", "f", "other root")) // another root writes on
	v := s.f.View()
	ws, err := v.Workspace("a", "w")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := v.File(ws, "f"); err != nil || e.Size != 3 {
		t.Fatalf("a read under the fence: %+v %v", e, err)
	}
	if r := s.do(MoveLift{MoveRef{Agent: "a", MoveID: "m2"}}); CodeOf(r.Err) != CodeConflict {
		t.Fatalf("another move's lift: %+v", r.Err)
	}
	s.ok(MoveLift{MoveRef{Agent: "a", MoveID: "m1"}})
	s.ok(MoveLift{MoveRef{Agent: "a", MoveID: "m1"}}) // a repeat
	s.ok(putBlob("a", "w", "g", "two"))
	if _, ok := s.f.View().Moves().Of("a"); ok {
		t.Fatal("the lifted fence left its record")
	}
	// The key the fence refused was not remembered: it applies now, once.
	if r := s.run(Header{RequestID: "k"}, putBlob("a", "w", "h", "three")); r.Err != nil || r.Replayed {
		t.Fatalf("the keyed write after the lift: %+v", r)
	}
}

func TestFenceWaitsForRestoresAndPurges(t *testing.T) {
	s := newShard(t, Options{RetentionBatch: 1}, 0)
	for i := range 4 {
		s.ok(putBlob("a", "gone", fmt.Sprintf("f%d", i), fmt.Sprintf("body %d", i)))
	}
	s.ok(DeleteWorkspace{Agent: "a", Name: "gone"})
	if r := s.do(MoveFence{MoveRef{Agent: "a", MoveID: "m"}}); CodeOf(r.Err) != CodeInvalidState {
		t.Fatalf("a fence while a purge runs: %+v", r.Err)
	}
	for range 100 {
		if r := s.do(MoveFence{MoveRef{Agent: "a", MoveID: "m"}}); r.Err == nil {
			return
		}
	}
	t.Fatal("the fence is refused after the purge")
}

// A move that rolls back after chunks arrived leaves nothing of the root on the target,
// and the other roots of both shards as they were.
func TestImportAbortLeavesNothing(t *testing.T) {
	opts := Options{RequireRootAssignment: true, RetentionBatch: 4}
	src := newShard(t, opts, 0)
	dst := newShard(t, withPrefix(opts, "t"), 0)
	src.ok(AssignRoot{Agent: "a"})
	dst.ok(AssignRoot{Agent: "c"})
	for i := range 20 {
		src.ok(putBlob("a", fmt.Sprintf("w%d", i%3), fmt.Sprintf("d/f%d", i), fmt.Sprintf("body %d", i)))
		dst.ok(putBlob("c", "w", fmt.Sprintf("f%d", i), fmt.Sprintf("c body %d", i)))
	}
	src.ok(SnapshotMint{Agent: "a", Workspace: "w0", TTLDays: 1})
	before := exportOf(t, dst.f.View(), "c")
	src.ok(MoveFence{MoveRef{Agent: "a", MoveID: "m"}})
	view := src.f.View()
	root, _ := view.Root("a")
	dst.ok(MoveImportBegin{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, RootUID: root.UID})
	exportInto(t, view, dst, "a", "m", 512)
	if dst.f.View().Shard().HoldsRoot("a") {
		t.Fatal("the target holds the root before the finish")
	}
	if r := dst.do(putBlob("a", "w0", "x", "early")); CodeOf(r.Err) != CodeNotOwner && CodeOf(r.Err) != CodeRootMoving {
		t.Fatalf("a write on the target during the import: %+v", r.Err)
	}
	dst.ok(MoveImportAbort{MoveRef{Agent: "a", MoveID: "m"}})
	dst.ok(MoveImportAbort{MoveRef{Agent: "a", MoveID: "m"}}) // a repeat
	dst.settle("a")
	if r := dst.do(MoveImportChunk{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 0, Data: nil}); CodeOf(r.Err) != CodeNotFound {
		t.Fatalf("a late chunk after the abort: %+v", r.Err)
	}
	checkAbortLeftNothing(t, dst, "a", root.UID, "c", before)
	src.ok(MoveLift{MoveRef{Agent: "a", MoveID: "m"}})
	src.ok(putBlob("a", "w0", "after", "the rollback"))
}

func withPrefix(o Options, p string) Options {
	o.RootUIDPrefix = p
	return o
}

// checkDerived compares what the FSM maintains beside the snapshot's tables (index,
// history and compaction sets, held snapshots, proposal orders, feed counts, usage) with
// a rebuild from its own snapshot.
// checkAbortLeftNothing fails t unless the aborted import of agent's root (uid) left dst
// no record of it and no move record, and other (a root dst held before, whose export was
// before) unchanged, with every derived table as a rebuild makes it.
func checkAbortLeftNothing(t testing.TB, dst *shardT, agent, uid, other string, before []byte) {
	t.Helper()
	v := dst.f.View()
	if n := rootRecords(dst.f.st, agent, uid); n != 0 || v.Shard().HoldsRoot(agent) {
		t.Fatalf("the aborted import left %d records", n)
	}
	if _, ok := v.Moves().Of(agent); ok {
		t.Fatal("the aborted import left its move record")
	}
	if !bytes.Equal(exportOf(t, v, other), before) {
		t.Fatal("the abort changed another root of the target")
	}
	checkDerived(t, dst.f)
}

func checkDerived(t testing.TB, f *FSM) {
	t.Helper()
	a, b := f.st, restored(t, f).st
	same := func(name string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("derived %s differs from its rebuild:\n%v\n%v", name, x, y)
		}
	}
	same("index", a.index.Keys(), b.index.Keys())
	same("history", a.history.Keys(), b.history.Keys())
	same("compactable", a.compactable.Keys(), b.compactable.Keys())
	same("held snapshots", a.heldSnaps.Keys(), b.heldSnaps.Keys())
	same("proposal order", a.props.order.Values(), b.props.order.Values())
	same("proposal decisions", a.props.decided.Values(), b.props.decided.Values())
	same("proposal counts", a.props.count.Values(), b.props.count.Values())
	same("feed roots", a.feed.roots.Values(), b.feed.roots.Values())
	same("usage", a.usage.Values(), a.recomputeUsage().Values())
}

// A root moves away and back: the source's tombstone answers NotOwner until the root
// comes back, and the uid and blobs follow it both ways.
func TestRootMovesAwayAndBack(t *testing.T) {
	opts := Options{RequireRootAssignment: true}
	one := newShard(t, withPrefix(opts, "s1r"), 0)
	two := newShard(t, withPrefix(opts, "s2r"), 100)
	one.ok(AssignRoot{Agent: "a"})
	put := one.ok(putBlob("a", "w", "f", "body"))
	moveRoot(t, one, two, "a", "there", 0)
	if r := one.do(AssignRoot{Agent: "a"}); CodeOf(r.Err) != CodeNotOwner {
		t.Fatalf("a stale assignment on the source: %+v", r.Err)
	}
	if m, ok := one.f.View().Moves().Of("a"); !ok || m.State != MoveReleased {
		t.Fatalf("the source's tombstone: %+v", m)
	}
	two.ok(putBlob("a", "w", "g", "more"))
	two.nowMs = max(two.nowMs, one.nowMs)
	one.nowMs = two.nowMs
	moveRoot(t, two, one, "a", "back", 0)
	v := one.f.View()
	root, ok := v.Root("a")
	if !ok || root.UID != put.RootUID {
		t.Fatalf("the root came back as %+v, uid was %q", root, put.RootUID)
	}
	ws, _ := v.Workspace("a", "w")
	for _, p := range []string{"f", "g"} {
		if _, err := v.File(ws, p); err != nil {
			t.Fatalf("%s after the round trip: %v", p, err)
		}
	}
	if b, ok := v.Shard().Blob(root.UID, digestOf([]byte("body"))); !ok || b.Count != 1 {
		t.Fatalf("the blob reference after the round trip: %+v %v", b, ok)
	}
	if n := rootRecords(two.f.st, "a", root.UID); n != 0 {
		t.Fatalf("the middle shard keeps %d records", n)
	}
	one.ok(putBlob("a", "w", "h", "home again"))
}

// Garbage collection across a move: an intent set on the source travels under its
// version and keeps refusing publishes on the target, whose sweeper takes it over once
// the move is confirmed, never before.
func TestBlobIntentTravelsAndTheTargetCollectsAfterTheConfirmation(t *testing.T) {
	opts := Options{RequireRootAssignment: true}
	src := newShard(t, withPrefix(opts, "s1r"), 0)
	dst := newShard(t, withPrefix(opts, "s2r"), 0)
	src.ok(AssignRoot{Agent: "a"})
	src.ok(putBlob("a", "w", "f", "old"))
	src.ok(putBlob("a", "w", "f", "new"))
	src.ok(SetRetention{Agent: "a", Retention: Retention{Versions: 1, MaxVersions: 1}})
	src.ok(putBlob("a", "w", "f", "newer")) // "old" and "new" lose their references
	old := digestOf([]byte("old"))
	intent := src.ok(GCIntent{Agent: "a", TakeOverAfterMs: 5000, Candidates: []GCCandidate{{Digest: old}}})
	if len(intent.GC.Accepted) != 1 {
		t.Fatalf("intent: %+v", intent.GC)
	}
	dst.nowMs = src.nowMs
	view, _, _ := fenceAndImport(t, src, dst, "a", "m", 0)
	root, _ := view.Root("a")
	gc := GCIntent{Agent: "a", TakeOverAfterMs: 1000, Candidates: []GCCandidate{{Digest: old, TakeOverVersion: intent.GC.IntentVersion}}}
	if r := dst.do(gc); CodeOf(r.Err) != CodeRootMoving {
		t.Fatalf("the target collects before the confirmation: %+v", r.Err)
	}
	if b, ok := dst.f.View().Shard().Blob(root.UID, old); !ok || !b.Intent || b.IntentVersion != intent.GC.IntentVersion {
		t.Fatalf("the intent on the target: %+v %v", b, ok)
	}
	dst.ok(MoveImportConfirm{MoveRef{Agent: "a", MoveID: "m"}})
	src.ok(MoveRelease{MoveRef{Agent: "a", MoveID: "m"}})
	p := putBlob("a", "w", "again", "old")
	if r := dst.do(p); CodeOf(r.Err) != CodeBlobDeleting {
		t.Fatalf("a publish of a blob under intent on the target: %+v", r.Err)
	}
	taken := dst.ok(gc)
	if len(taken.GC.Accepted) != 1 {
		t.Fatalf("the take-over on the target: %+v", taken.GC)
	}
	deleted := dst.ok(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: old, IntentVersion: taken.GC.IntentVersion}}})
	if len(deleted.GC.Accepted) != 1 {
		t.Fatalf("the deletion on the target: %+v", deleted.GC)
	}
	// The source's sweeper no longer sees the root at all.
	if r := src.do(GCDeleted{Agent: "a", Blobs: []GCBlob{{Digest: old, IntentVersion: intent.GC.IntentVersion}}}); CodeOf(r.Err) != CodeNotOwner {
		t.Fatalf("a late deletion on the source: %+v", r.Err)
	}
	src.f.View().Shard().Roots(func(r *Root) bool {
		t.Fatalf("the source lists root %q", r.Agent)
		return false
	})
}

func TestExportChunksAreBoundedAndResumable(t *testing.T) {
	s := newShard(t, Options{}, 0)
	for i := range 50 {
		s.ok(putBlob("a", fmt.Sprintf("w%d", i%4), fmt.Sprintf("dir/file-%03d", i), fmt.Sprintf("body %d", i)))
	}
	v := s.f.View()
	whole := exportOf(t, v, "a")
	var pieces bytes.Buffer
	var pos MovePosition
	n := 0
	for {
		c, err := v.Moves().Export("a", pos, 300)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Data) > 300 && c.Records != 1 {
			t.Fatalf("a chunk of %d records holds %d bytes, more than asked", c.Records, len(c.Data))
		}
		pieces.Write(c.Data)
		n++
		if c.Done {
			break
		}
		pos = c.Next
	}
	if n < 10 || !bytes.Equal(pieces.Bytes(), whole) {
		t.Fatalf("%d chunks of 300 bytes do not add up to the whole export (%d bytes)", n, len(whole))
	}
	if again := exportOf(t, s.f.View(), "a"); !bytes.Equal(again, whole) {
		t.Fatal("two exports of one state differ")
	}
	if _, err := v.Moves().Export("nobody", MovePosition{}, 0); CodeOf(err) != CodeNotFound {
		t.Fatalf("an export of a root not held: %v", err)
	}
}

// A chunk is checked whole before any record lands: a record of another root, a
// malformed one, or a chunk out of order changes nothing.
func TestImportRefusesForeignAndOutOfOrderChunks(t *testing.T) {
	src := newShard(t, Options{}, 0)
	src.ok(putBlob("a", "w", "f", "a's"))
	src.ok(putBlob("b", "w", "f", "b's"))
	dst := newShard(t, withPrefix(Options{}, "t"), 0)
	ra, _ := src.f.View().Root("a")
	dst.ok(MoveImportBegin{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, RootUID: ra.UID})
	dst.ok(MoveImportBegin{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, RootUID: ra.UID}) // a repeat
	if r := dst.do(MoveImportBegin{MoveRef: MoveRef{Agent: "a", MoveID: "other"}, RootUID: ra.UID}); CodeOf(r.Err) != CodeConflict {
		t.Fatalf("a second move's begin: %+v", r.Err)
	}
	foreign := exportOf(t, src.f.View(), "b")
	deletion := func(tag uint8, k string) []byte {
		data, err := encMode.Marshal(snapRecord{T: recMoveDeleted, K: []byte(k), N: int64(tag)})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, c := range []MoveImportChunk{
		{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 0, Data: foreign},
		{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 0, Data: []byte{0xff, 0x00}},
		{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 1, Data: exportOf(t, src.f.View(), "a")},
		// Deletions: only in a delta, only of the root's records, never of its root record
		// or of a table that is no table of a root.
		{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 0, Data: deletion(recWorkspace, "a\x00w")},
		{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 0, Data: deletion(recWorkspace, "b\x00w"), Delta: true},
		{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 0, Data: deletion(recRoot, "a"), Delta: true},
		{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 0, Data: deletion(recMove, "a"), Delta: true},
		{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 0, Data: deletion(recPath, "short"), Delta: true},
		{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 0, Data: append(exportOf(t, src.f.View(), "a"), deletion(recWorkspace, "b\x00w")...), Delta: true},
	} {
		r := dst.do(c)
		if r.Err == nil {
			t.Fatalf("chunk %d of %d bytes was accepted", c.Seq, len(c.Data))
		}
		if _, ok := dst.f.View().Moves().Of("a"); !ok {
			t.Fatal("a refused chunk dropped the import")
		}
	}
	if m, _ := dst.f.View().Moves().Of("a"); m.Chunks != 0 || m.Records != 0 {
		t.Fatalf("refused chunks changed the import: %+v", m)
	}
	if st := dst.f.st; st.paths.Len() != 0 || st.workspaces.Len() != 0 || st.blobs.Len() != 0 || st.nextIncarnation != 0 {
		t.Fatalf("a refused chunk landed records: %d paths, %d workbenches, %d blobs", st.paths.Len(), st.workspaces.Len(), st.blobs.Len())
	}
	if r := dst.do(MoveImportFinish{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Chunks: 1, Records: 3}); CodeOf(r.Err) != CodeConflict {
		t.Fatalf("a finish that claims chunks which never arrived: %+v", r.Err)
	}
}

// restored returns a new FSM restored from f's Raft snapshot, failing unless it holds
// the same state.
func restored(t tb, f *FSM) *FSM {
	t.Helper()
	return restoredWith(t, f, f.opts)
}

// restoredWith is restored into an FSM of opts.
func restoredWith(t tb, f *FSM, opts Options) *FSM {
	t.Helper()
	g := restoredCopy(t, f, opts)
	if g.StateDigest() != f.StateDigest() {
		t.Fatal("a snapshot round trip changed the state")
	}
	return g
}

// The move commands are part of the log format: a MoveRef's fields are the body's keys 1
// and 2, flat, like every other command's agent and id.
func TestMoveCommandsEncodeFlat(t *testing.T) {
	data, err := encMode.Marshal(MoveImportChunk{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: 7, Data: []byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[int]any
	if err := decMode.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 4 || m[1] != "a" || m[2] != "m" || m[3] != uint64(7) {
		t.Fatalf("a move chunk encodes as %v", m)
	}
}

// A retention item the root left on a shard it lived on before does not act on the
// records of its import back: it is dropped, and the finish queues the root's items.
func TestLeftoverRetentionDoesNotTouchAStagedImport(t *testing.T) {
	src := newShard(t, Options{}, 0)
	src.ok(putBlob("a", "w", "f", "body"))
	snap := src.ok(SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1}).Snapshot
	dst := newShard(t, withPrefix(Options{}, "t"), 0)
	dst.nowMs = src.nowMs
	src.ok(MoveFence{MoveRef{Agent: "a", MoveID: "m"}})
	view := src.f.View()
	root, _ := view.Root("a")
	dst.ok(MoveImportBegin{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, RootUID: root.UID})
	exportInto(t, view, dst, "a", "m", 0)
	// A lease check of an earlier stay, due now, and a path re-prune keyed by the uid.
	st := dst.f.st
	st.seq++
	st.retention.Set(retentionKey(st.nowMs, st.seq), string(rune(retainLease))+snapshotKey("a", snap.ID))
	st.seq++
	st.retention.Set(retentionKey(st.nowMs, st.seq), string(rune(retainPath))+root.UID+"\x00nothing")
	dst.nowMs += int64(3 * 24 * time.Hour / time.Millisecond) // the lease is long past
	dst.ok(Tick{})
	if n := dst.f.st.retention.Len(); n != 0 {
		t.Fatalf("%d leftover items are still queued", n)
	}
	if got, _ := dst.f.st.snapshots.Get(snapshotKey("a", snap.ID)); got.ReapedAtMs != 0 {
		t.Fatal("a leftover lease item reaped a staged snapshot")
	}
	if evs := dst.f.st.feed.events.Len(); evs != int(view.st.feed.events.Len()) {
		t.Fatalf("the staged feed holds %d events, the source's %d", evs, view.st.feed.events.Len())
	}
}

// A release removes the root record at once; the retention items of the root still
// queued (a lease that lapsed as the release applies) are dropped, never run without it.
func TestReleaseDropsTheRootsQueuedRetention(t *testing.T) {
	s := newShard(t, Options{}, 0)
	for i := range 30 {
		s.ok(putBlob("a", "w", fmt.Sprintf("f%d", i), fmt.Sprintf("body %d", i)))
	}
	s.ok(SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1})
	s.ok(putBlob("b", "w", "f", "b's"))
	uid := s.ok(MoveFence{MoveRef{Agent: "a", MoveID: "m"}}).RootUID
	s.nowMs += int64(3 * 24 * time.Hour / time.Millisecond) // the lease lapsed meanwhile
	s.ok(MoveRelease{MoveRef{Agent: "a", MoveID: "m"}})
	s.settle("a")
	if m, _ := s.f.View().Moves().Of("a"); m.State != MoveReleased {
		t.Fatalf("the release ended %+v", m)
	}
	if n := rootRecords(s.f.st, "a", uid); n != 0 {
		t.Fatalf("the release left %d records", n)
	}
	checkDerived(t, s.f)
}

// A delta carries what changed and nothing else: against itself a view has none; after one
// put and one delete it holds the changed records, far fewer than the root's; against a
// view of another incarnation of the root it is refused.
func TestADeltaCarriesOnlyWhatChanged(t *testing.T) {
	src := newShard(t, Options{}, 0)
	for i := range 50 {
		src.ok(putBlob("a", "w", fmt.Sprintf("f%02d", i), "v1"))
	}
	base := src.f.View()
	if c, err := base.Moves().ExportDelta("a", base, MovePosition{}, 0); err != nil || c.Records != 0 || !c.Done {
		t.Fatalf("a view's delta against itself: %d records, done %v, %v", c.Records, c.Done, err)
	}
	src.ok(putBlob("a", "w", "f00", "v2"))
	src.ok(Delete{Agent: "a", Workspace: "w", Path: "f01"})
	full, err := src.f.View().Moves().Export("a", MovePosition{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var records int64
	for pos, done := (MovePosition{}), false; !done; {
		c, err := src.f.View().Moves().ExportDelta("a", base, pos, 64)
		if err != nil {
			t.Fatal(err)
		}
		records += c.Records
		pos, done = c.Next, c.Done
	}
	if records == 0 || records*4 > full.Records {
		t.Fatalf("the delta of a put and a delete holds %d records, of the root's %d", records, full.Records)
	}
	other := newShard(t, withPrefix(Options{}, "x"), 0)
	other.ok(putBlob("a", "w", "f", "x"))
	if _, err := src.f.View().Moves().ExportDelta("a", other.f.View(), MovePosition{}, 0); CodeOf(err) != CodeInvalidState {
		t.Fatalf("a delta against another incarnation of the root: %v", err)
	}
}

// MoveWalk runs a walk's steps at once: a confirmed import that still reschedules its
// records' retention, on a shard whose retention runs one item per command, ends its
// rescheduling in a few MoveWalk commands (instead of one per record), and a MoveWalk of
// another move changes nothing. The records' retention items stay queued, and the shard's
// derived sets agree with its records.
func TestMoveWalkRunsAWalkAtOnce(t *testing.T) {
	src := newShard(t, Options{}, 0)
	const files = 600
	for i := range files {
		src.ok(putBlob("a", "w", fmt.Sprintf("f%03d", i), "v"))
	}
	dst := newShard(t, withPrefix(Options{RetentionBatch: 1}, "t"), 0)
	_, records, _ := fenceAndImport(t, src, dst, "a", "m", 0)
	dst.ok(MoveImportConfirm{MoveRef{Agent: "a", MoveID: "m"}})
	if m, ok := dst.f.View().Moves().Of("a"); !ok || !m.Rescheduling {
		t.Fatalf("after the confirmation the import holds %+v (%v), want one still rescheduling", m, ok)
	}
	twin := roundTrip(t, dst)
	dst.ok(MoveWalk{MoveRef{Agent: "a", MoveID: "other"}})
	twin.ok(Tick{})
	if dst.f.StateDigest() != twin.f.StateDigest() {
		t.Fatal("a walk of another move did more than a tick")
	}
	walks := 0
	for ; walks < 10; walks++ {
		if _, ok := dst.f.View().Moves().Of("a"); !ok {
			break
		}
		dst.ok(MoveWalk{MoveRef{Agent: "a", MoveID: "m"}})
	}
	want := int(records)/(moveWalkSteps*moveBatch) + 1
	if _, ok := dst.f.View().Moves().Of("a"); ok || walks > want {
		t.Fatalf("%d MoveWalk commands for %d records (want at most %d), record still there: %v", walks, records, want, ok)
	}
	if dst.f.st.retention.Len() < files/2 {
		t.Fatalf("the rescheduling queued %d retention items for %d files", dst.f.st.retention.Len(), files)
	}
	checkDerived(t, dst.f)
}
