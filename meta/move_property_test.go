package meta

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var (
	moveWorkbenches = []string{"w0", "w1", "w2"}
	movePaths       = []string{"f", "d/f", "d/e/f", "g"}
	moveBodies      = []string{"alpha", "beta", "gamma", "delta", "epsilon"}
)

// keyedWrite is a write made with an idempotency key, to be replayed on the target.
type keyedWrite struct {
	h   Header
	b   Body
	res Result
}

// genRoot applies a random history to agent's root on s: files with history (blob and
// inline segments), appends, deletes, workbenches made and deleted, snapshots, commits,
// proposals and decisions, quotas, retention, keyed writes and the passing of time.
func genRoot(t *rapid.T, s *shardT, agent string) []keyedWrite {
	var keyed []keyedWrite
	commits := 0
	n := rapid.IntRange(1, 60).Draw(t, "ops")
	for i := range n {
		ws := rapid.SampledFrom(moveWorkbenches).Draw(t, "ws")
		path := rapid.SampledFrom(movePaths).Draw(t, "path")
		data := rapid.SampledFrom(moveBodies).Draw(t, "data") + fmt.Sprint(i%3)
		v := s.f.View()
		w, _ := v.Workspace(agent, ws)
		var cur *Entry
		if w != nil {
			cur, _ = v.File(w, path)
		}
		switch rapid.IntRange(0, 13).Draw(t, "kind") {
		case 0, 1, 2:
			p := putBlob(agent, ws, path, data)
			if rapid.Bool().Draw(t, "inline") {
				p.Segments = inlineSegs(data)
			}
			h := Header{}
			if rapid.Bool().Draw(t, "keyed") {
				h = Header{RequestID: fmt.Sprintf("req-%d", i), Principal: "p", RequestHash: digestOf([]byte(data))}
			}
			res := s.run(h, p)
			if h.RequestID != "" && res.Err == nil {
				keyed = append(keyed, keyedWrite{h: h, b: p, res: res})
			}
		case 3:
			if cur != nil {
				add := "+" + data
				s.do(Append{Agent: agent, Workspace: ws, Path: path, ExpectGeneration: cur.Generation,
					Segments: []Segment{blobSeg(add)}, AppendedBytes: int64(len(add)), NewSize: cur.Size + int64(len(add)),
					NewDigest: digestOf([]byte(fmt.Sprint(cur.Digest, add)))})
			}
		case 4:
			s.do(Delete{Agent: agent, Workspace: ws, Path: path})
		case 5:
			s.do(SnapshotMint{Agent: agent, Workspace: ws, TTLDays: rapid.IntRange(1, 2).Draw(t, "ttl"),
				Name: rapid.SampledFrom([]string{"", "s1", "s2"}).Draw(t, "snapname")})
		case 6:
			if w != nil {
				commits++
				s.do(Commit{Agent: agent, Workspace: ws, ExpectRevision: w.Revision, Identity: hexID(commits),
					ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3),
					Envelope: envBody(fmt.Sprintf(`{"commit":%d}`, commits))})
			}
		case 7:
			base := uint64(0)
			if cur != nil {
				base = cur.Generation
			}
			s.do(ProposalCreate{Agent: agent, Workspace: ws, Path: path, RequestID: fmt.Sprintf("prop-%d", i),
				ContentHash: digestOf([]byte(data)), BaseGeneration: base,
				Body: FileBody{Size: int64(len(data)), Digest: digestOf([]byte(data)), ContentType: "text/plain",
					Segments: []Segment{blobSeg(data)}}})
		case 8:
			if w != nil {
				if ps, _, _ := v.Proposals().List(agent, ws, ProposalFilter{State: ProposalPending}, 0, 10); len(ps) > 0 {
					s.do(ProposalDecide{Agent: agent, Workspace: ws, ID: ps[0].ID,
						Disposition:  rapid.SampledFrom([]string{DispositionAccept, DispositionReject}).Draw(t, "disposition"),
						SubmissionID: fmt.Sprintf("sub-%d", i), ContentHash: digestOf([]byte(data))})
				}
			}
		case 9:
			s.do(SetQuota{Agent: agent, Quota: Quota{MaxFiles: int64(rapid.IntRange(50, 100).Draw(t, "maxfiles"))}})
		case 10:
			versions := rapid.IntRange(1, 4).Draw(t, "versions")
			s.do(SetRetention{Agent: agent, Retention: Retention{Versions: versions, MaxVersions: versions + 2}})
		case 11:
			if ws == "w2" {
				s.do(DeleteWorkspace{Agent: agent, Name: ws})
			}
		case 13:
			if w != nil {
				if snaps := v.Lifecycle().Snapshots(agent, ws); len(snaps) > 0 && snaps[len(snaps)-1].RetiredAtMs == 0 && snaps[len(snaps)-1].ReapedAtMs == 0 {
					restoreAll(s, agent, w, snaps[len(snaps)-1].ID, fmt.Sprintf("r%d", i), hexID(1000+i))
				}
			}
		case 12:
			// Time passes: leases lapse, keys and feed events expire.
			s.nowMs += rapid.SampledFrom([]int64{int64(time.Hour / time.Millisecond), int64(30 * time.Hour / time.Millisecond)}).Draw(t, "jump")
			s.do(Tick{})
		}
	}
	return keyed
}

// restoreAll restores snapshot id of workbench w into a new workbench dest, every step of
// it (operation op): its record moves with the root.
func restoreAll(s *shardT, agent string, w *Workspace, id uint64, dest, op string) {
	if r := s.do(RestoreBegin{Agent: agent, OpID: op, Source: w.Name, SourceIncarnation: w.Incarnation, SnapshotID: id,
		Destination: dest}); r.Err != nil || r.Restore != nil && r.Restore.State == RestoreComplete {
		return // refused, or a replay of an operation id used before
	}
	for after := ""; ; {
		r := withRoom(s, agent, RestoreCopy{Agent: agent, OpID: op, After: after, Limit: 2})
		if r.Restore.CopyDone {
			break
		}
		after = r.Restore.After
	}
	withRoom(s, agent, RestoreFinish{Agent: agent, OpID: op, Manifest: envBody(`{"restore":1}`), Identity: hexID(5000 + int(s.index)),
		ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3), Envelope: envBody(`{"run":1}`)})
}

// withRoom applies b, which must apply; over the root's file quota (the pre-copy's second
// history writes more files) the operator raises the quota first.
func withRoom(s *shardT, agent string, b Body) Result {
	r := s.do(b)
	if r.Err != nil && r.Err.Code == CodeResourceExhausted {
		s.ok(SetQuota{Agent: agent, Quota: Quota{MaxFiles: 1000}})
		return s.ok(b)
	}
	if r.Err != nil {
		s.t.Fatalf("%T: %v", b, r.Err)
	}
	return r
}

// drain applies ticks at a standing clock until no retention item is due and no purge
// is pending, so the root's state is the one its command time implies.
func drain(t testing.TB, s *shardT, agent string) {
	step := s.step
	s.step = 0
	defer func() { s.step = step }()
	for range 10_000 {
		s.do(Tick{}) // brings the FSM's command time to the shard's clock
		k, _, ok := s.f.st.retention.Min()
		due := ok && int64(binaryU64(k[:8])) <= s.f.st.nowMs
		root, _ := s.f.st.roots.Get(agent)
		if !due && (root == nil || newApplier(s.f.opts, s.f.st).moves.movable(root) == nil) {
			return
		}
	}
	t.Fatalf("retention does not drain")
}

// TestMovePreservesEveryRead: a random root moved to another shard answers every read the
// source answered (through View), its idempotency keys replay there, its feed continues
// after the positions it had, later writes get later generations; the other roots of
// both shards are untouched; the source keeps nothing of it; an import survives a Raft
// snapshot taken in its middle; every step may be repeated.
func TestMovePreservesEveryRead(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		opts := Options{RequireRootAssignment: true}
		src := newShard(t, withPrefix(opts, "s1r"), 0)
		// The target's log is behind or ahead of the source's: versions must continue
		// past the source's either way.
		dst := newShard(t, withPrefix(opts, "s2r"), rapid.SampledFrom([]uint64{0, 5000}).Draw(rt, "target start"))
		src.ok(AssignRoot{Agent: "b"})
		src.ok(putBlob("b", "w", "f", "b's"))
		dst.ok(AssignRoot{Agent: "c"})
		dst.ok(putBlob("c", "w", "f", "c's"))
		dst.ok(putBlob("c", "w0", "d/f", "c's too"))
		src.ok(AssignRoot{Agent: "a"})
		keyed := genRoot(rt, src, "a")

		twice := func(s *shardT, b Body) Result {
			r := s.ok(b)
			if rapid.Bool().Draw(rt, "repeat") {
				s.ok(b) // a controller retrying a step
			}
			return r
		}
		chunkBytes := rapid.SampledFrom([]int{1, 200, 4096, 0}).Draw(rt, "chunk bytes")
		// Split: a record larger than the chunk goes in parts (move_parts.go), of at least
		// 64 bytes (a byte each would take a command per byte).
		split := rapid.Bool().Draw(rt, "split")
		if split {
			chunkBytes = max(chunkBytes, 64)
		}
		moves := func(v *View) MoveView {
			if split {
				return v.Moves().Split()
			}
			return v.Moves()
		}
		cut := rapid.IntRange(0, 8).Draw(rt, "snapshot after chunk")
		var chunks uint64
		var records int64
		// copy imports every chunk of export on the target, as deltas when delta is set.
		copyAll := func(export func(MovePosition, int) (MoveExportChunk, error), delta bool) {
			var pos MovePosition
			for done := false; !done; {
				c, err := export(pos, chunkBytes)
				if err != nil {
					rt.Fatalf("export: %v", err)
				}
				if split && len(c.Data) > chunkBytes && chunkBytes > 0 {
					rt.Fatalf("a split export's chunk of %d bytes, more than %d", len(c.Data), chunkBytes)
				}
				if c.Records > 0 || c.Part != nil {
					twice(dst, MoveImportChunk{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Seq: chunks, Data: c.Data, Delta: delta, Part: c.Part})
					chunks++
					records += c.Records
				}
				if int(chunks) == cut {
					dst = roundTrip(t, dst) // the Raft snapshot carries the import in progress
				}
				pos, done = c.Next, c.Done
			}
		}
		// The pre-copy: the records of a view taken before the fence go first, and the root
		// goes on changing (more files, deletions, workbenches, snapshots, time) until the
		// fence; the delta then carries what changed.
		var base *View
		if rapid.Bool().Draw(rt, "pre-copy") {
			base = src.f.View()
			broot, _ := base.Root("a")
			twice(dst, MoveImportBegin{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, RootUID: broot.UID})
			copyAll(func(pos MovePosition, n int) (MoveExportChunk, error) { return moves(base).Export("a", pos, n) }, false)
			// A key used again after it expired applies anew: its last write is the one a
			// replay answers.
			for _, k := range genRoot(rt, src, "a") {
				keyed = slices.DeleteFunc(keyed, func(o keyedWrite) bool { return o.h.RequestID == k.h.RequestID })
				keyed = append(keyed, k)
			}
			src.nowMs = max(src.nowMs, dst.nowMs)
		}
		// One standing clock from here: the target runs at the export's command time, so
		// it answers as the source would at that time.
		src.step, dst.step = 0, 0
		drain(t, src, "a")
		dst.nowMs = src.nowMs
		drain(t, dst, "c")
		beforeB, beforeC := exportOf(t, src.f.View(), "b"), exportOf(t, dst.f.View(), "c")

		ref := roundTrip(t, src) // the root as it would have lived on without the move
		twice(src, MoveFence{MoveRef{Agent: "a", MoveID: "m"}})
		sv := src.f.View()
		root, _ := sv.Root("a")
		if base == nil {
			twice(dst, MoveImportBegin{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, RootUID: root.UID})
			copyAll(func(pos MovePosition, n int) (MoveExportChunk, error) { return moves(sv).Export("a", pos, n) }, false)
		} else {
			copyAll(func(pos MovePosition, n int) (MoveExportChunk, error) {
				return moves(sv).ExportDelta("a", base, pos, n)
			}, true)
		}
		version, lists, seq := sv.Moves().Counters()
		fin := twice(dst, MoveImportFinish{MoveRef: MoveRef{Agent: "a", MoveID: "m"}, Chunks: chunks, Records: records,
			SourceVersion: version, SourceNextListID: lists, SourceSeq: seq})
		if fin.Version <= version || dst.f.View().Version() <= version {
			rt.Fatalf("the finish at version %d does not pass the source's %d", fin.Version, version)
		}
		if r := dst.do(putBlob("a", "w0", "early", "x")); CodeOf(r.Err) != CodeRootMoving {
			rt.Fatalf("a write on the target before the confirmation: %+v", r.Err)
		}
		twice(dst, MoveImportConfirm{MoveRef{Agent: "a", MoveID: "m"}})
		// Time may pass on the source before it lets go: leases lapse as its records go.
		idle := rapid.SampledFrom([]int64{0, int64(50 * time.Hour / time.Millisecond)}).Draw(rt, "source idles")
		src.nowMs += idle
		unreleased := roundTrip(t, src)
		twice(src, MoveRelease{MoveRef{Agent: "a", MoveID: "m"}})
		dst.settle("a")
		src.settle("a")
		dst = roundTrip(t, dst)
		tv := dst.f.View()

		sameRoot(rt, sv, tv, "a")
		// Nothing else moved.
		drain(t, src, "b")
		drain(t, unreleased, "b")
		if afterB := exportOf(t, src.f.View(), "b"); !bytes.Equal(afterB, exportOf(t, unreleased.f.View(), "b")) ||
			idle == 0 && !bytes.Equal(afterB, beforeB) {
			rt.Fatalf("the move changed another root of the source")
		}
		if !bytes.Equal(exportOf(t, tv, "c"), beforeC) {
			rt.Fatalf("the move changed another root of the target:\n%s\n%s", diagRecords(beforeC), diagRecords(exportOf(t, tv, "c")))
		}
		for _, k := range keyed {
			if _, kept := sv.st.dedupe.Get(dedupeKey("a", k.h.Principal, k.h.RequestID)); !kept {
				continue // expired on the source: a retry applies anew on either shard
			}
			r := dst.run(k.h, k.b)
			want := k.res
			want.Replayed = true
			if !reflect.DeepEqual(r, want) {
				rt.Fatalf("the key %q replays on the target as %+v, want %+v", k.h.RequestID, r, want)
			}
		}
		// Retention goes on as on the source: the queue the import rebuilt expires the
		// same keys, events, leases, proposals and versions at the same command times.
		for _, s := range []*shardT{ref, dst} {
			s.nowMs += int64(31 * 24 * time.Hour / time.Millisecond)
			drain(t, s, "a")
		}
		sameLater(rt, ref.f.View(), dst.f.View(), "a")
		// Later writes: later generations, later feed positions (with room in the quota:
		// the root may be at it).
		dst.step = 1000
		dst.ok(SetQuota{Agent: "a", Quota: Quota{MaxFiles: 1000}})
		last := lastEvent(rt, dst.f.View(), "a")
		w := dst.ok(putBlob("a", "w0", "after/move", "new"))
		if w.Generation <= version {
			rt.Fatalf("a write after the move has generation %d ≤ the source's version %d", w.Generation, version)
		}
		evs, _, err := dst.f.View().Feed().Events("a", last, EventFilter{}, 100)
		if err != nil || len(evs) == 0 || evs[len(evs)-1].Generation != w.Generation {
			rt.Fatalf("the feed after %v: %+v %v", last, evs, err)
		}
		// Nothing of the root stays behind.
		if n := rootRecords(src.f.st, "a", root.UID); n != 0 || src.f.View().Shard().HoldsRoot("a") {
			rt.Fatalf("the source keeps %d records of the moved root", n)
		}
		if r := src.do(putBlob("a", "w0", "stale", "route")); CodeOf(r.Err) != CodeNotOwner {
			rt.Fatalf("a write routed to the source after the move: %+v", r.Err)
		}
		checkDerived(t, src.f)
		checkDerived(t, dst.f)
	})
}

// roundTrip returns a shard whose FSM is s's restored from its Raft snapshot.
func roundTrip(t testing.TB, s *shardT) *shardT {
	c := *s
	c.f = restored(t, s.f)
	return &c
}

func lastEvent(t *rapid.T, v *View, agent string) FeedPosition {
	evs, err := v.Feed().Recent(agent, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 {
		return v.Feed().Floor(agent)
	}
	return evs[len(evs)-1].Position
}

// sameEncoded returns a check that fails unless two answers encode alike: a nil and an
// empty slice are the same record (a Raft snapshot round trip turns one into the other).
func sameEncoded(t *rapid.T, when string) func(what string, a, b any) {
	return func(what string, a, b any) {
		ea, erra := encMode.Marshal(a)
		eb, errb := encMode.Marshal(b)
		if erra != nil || errb != nil || !bytes.Equal(ea, eb) {
			t.Fatalf("%s differs %s:\nsource %+v\ntarget %+v", what, when, a, b)
		}
	}
}

// sameRoot fails unless tv answers every read of agent's root as sv does (incarnations
// aside, which each shard numbers itself).
func sameRoot(t *rapid.T, sv, tv *View, agent string) {
	same := sameEncoded(t, "after the move")
	sr, _ := sv.Root(agent)
	tr, ok := tv.Root(agent)
	if !ok {
		t.Fatalf("the target does not hold the root")
	}
	same("root", [3]any{sr.UID, sr.LastSnapshotID, sr.CreatedVersion}, [3]any{tr.UID, tr.LastSnapshotID, tr.CreatedVersion})
	incs := map[uint64]uint64{} // the source's live incarnations → the target's
	eachWorkbench(same, sv, tv, agent, func(sw, tw *Workspace) {
		incs[sw.Incarnation] = tw.Incarnation
		for _, dir := range []string{"", "d", "d/e"} {
			sl, _, serr := sv.List(sw, dir, "", 1000)
			tl, _, terr := tv.List(tw, dir, "", 1000)
			same("listing of "+sw.Name+"/"+dir, [2]any{sl, CodeOf(serr)}, [2]any{tl, CodeOf(terr)})
		}
		ss, ts := sv.Lifecycle().Snapshots(agent, sw.Name), tv.Lifecycle().Snapshots(agent, sw.Name)
		same("snapshots of "+sw.Name, noInc(ss), noInc(ts))
		for _, snap := range ss {
			sview, sw2, _, serr := sv.Lifecycle().SnapshotView(agent, sw.Name, snap.ID, "")
			tview, tw2, _, terr := tv.Lifecycle().SnapshotView(agent, sw.Name, snap.ID, "")
			same("snapshot view", CodeOf(serr), CodeOf(terr))
			if serr == nil {
				same("files at snapshot", filesOf(sview, sw2), filesOf(tview, tw2))
			}
		}
		sc, _ := sv.Lifecycle().Commits(sw, nil, 1000)
		tc, _ := tv.Lifecycle().Commits(tw, nil, 1000)
		same("commits of "+sw.Name, noInc(sc), noInc(tc))
		sp, _, _ := sv.Proposals().List(agent, sw.Name, ProposalFilter{}, 0, 1000)
		tp, _, _ := tv.Proposals().List(agent, sw.Name, ProposalFilter{}, 0, 1000)
		same("proposals of "+sw.Name, noInc(sp), noInc(tp))
	})
	for i := range 60 {
		sr, sok := sv.Lifecycle().Restore(agent, hexID(1000+i))
		tr, tok := tv.Lifecycle().Restore(agent, hexID(1000+i))
		same("restore "+hexID(1000+i)+" kept", sok, tok)
		if sok {
			same("restore "+hexID(1000+i), noInc([]*RestoreOp{sr}), noInc([]*RestoreOp{tr}))
			for _, pair := range [][2]uint64{{sr.SourceIncarnation, tr.SourceIncarnation}, {sr.DestIncarnation, tr.DestIncarnation}} {
				if want, live := incs[pair[0]]; live && pair[1] != want {
					t.Fatalf("restore %s names incarnation %d on the target, want %d", sr.ID, pair[1], want)
				}
			}
		}
	}
	same("usage", sv.Usage(agent), tv.Usage(agent))
	sq, sok := sv.Quota(agent)
	tq, tok := tv.Quota(agent)
	same("quota", [2]any{sq, sok}, [2]any{tq, tok})
	sRet, sok := sv.Retention(agent)
	tRet, tok := tv.Retention(agent)
	same("retention", [2]any{sRet, sok}, [2]any{tRet, tok})
	se, _, serr := sv.Feed().Events(agent, sv.Feed().Floor(agent), EventFilter{}, 1000)
	te, _, terr := tv.Feed().Events(agent, tv.Feed().Floor(agent), EventFilter{}, 1000)
	if serr != nil {
		t.Fatalf("the source's feed: %v", serr)
	}
	same("feed", [2]any{se, CodeOf(serr)}, [2]any{te, CodeOf(terr)})
	same("feed floor", sv.Feed().Floor(agent), tv.Feed().Floor(agent))
	if len(se) > 1 {
		// A cursor taken before the move reads on.
		mid := se[len(se)/2].Position
		sa, _, _ := sv.Feed().Events(agent, mid, EventFilter{}, 1000)
		ta, _, _ := tv.Feed().Events(agent, mid, EventFilter{}, 1000)
		same("feed after a position taken before the move", sa, ta)
	}
	var sb, tb []BlobRef
	sv.Shard().Blobs(sr.UID, func(b BlobRef) bool { sb = append(sb, b); return true })
	tv.Shard().Blobs(tr.UID, func(b BlobRef) bool { tb = append(tb, b); return true })
	same("blob references", sb, tb)
}

// eachWorkbench compares the workbenches of agent's root in two views (incarnations
// aside) and the history of every test path in each, then calls fn for each pair.
func eachWorkbench(same func(string, any, any), sv, tv *View, agent string, fn func(sw, tw *Workspace)) {
	sws, _ := sv.Workspaces(agent, "", 1000)
	tws, _ := tv.Workspaces(agent, "", 1000)
	same("workbenches", noInc(sws), noInc(tws))
	for i, sw := range sws {
		tw := tws[i]
		for _, p := range movePaths {
			sh, smore, serr := sv.History().Versions(sw, p, 0, MaxHistoryLimit)
			th, tmore, terr := tv.History().Versions(tw, p, 0, MaxHistoryLimit)
			same("history of "+sw.Name+"/"+p, [3]any{sh, smore, CodeOf(serr)}, [3]any{th, tmore, CodeOf(terr)})
		}
		fn(sw, tw)
	}
}

func filesOf(v *View, ws *Workspace) map[string]*Entry {
	out := map[string]*Entry{}
	v.Files(ws, "", func(p string, e *Entry) bool {
		out[p] = e
		return true
	})
	return out
}

// noInc returns copies of records with their incarnations zeroed.
func noInc[T any](in []*T) []T {
	out := make([]T, len(in))
	for i, p := range in {
		out[i] = *p
		v := reflect.ValueOf(&out[i]).Elem()
		for _, name := range []string{"Incarnation", "SourceIncarnation", "DestIncarnation"} {
			if f := v.FieldByName(name); f.IsValid() {
				f.SetUint(0)
			}
		}
		if f := v.FieldByName("Evidence"); f.IsValid() && f.Len() > 0 {
			ev := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
			reflect.Copy(ev, f)
			for j := range ev.Len() {
				if h := ev.Index(j).FieldByName("HoldIncarnation"); h.IsValid() {
					h.SetUint(0)
				}
			}
			f.Set(ev)
		}
	}
	return out
}

func diagRecords(data []byte) string {
	dec := snapDecMode.NewDecoder(bytes.NewReader(data))
	var out bytes.Buffer
	for {
		var rec snapRecord
		if err := dec.Decode(&rec); err != nil {
			return out.String()
		}
		fmt.Fprintf(&out, "%d %q %+v %+v %+v %+v\n", rec.T, rec.K, rec.Root, rec.Workspace, rec.Feed, rec.Usage)
	}
}

// sameLater fails unless, after time passed on both, tv holds what rv holds of agent's
// root: its workbenches' files and history, snapshots, proposals, idempotency records
// and feed (the events retention wrote since at each shard's own versions, so compared
// by what they are about).
func sameLater(t *rapid.T, rv, tv *View, agent string) {
	same := sameEncoded(t, "after time passed")
	eachWorkbench(same, rv, tv, agent, func(rw, tw *Workspace) {
		same("snapshots of "+rw.Name, projectSnaps(rv.Lifecycle().Snapshots(agent, rw.Name)), projectSnaps(tv.Lifecycle().Snapshots(agent, rw.Name)))
		rp, _, _ := rv.Proposals().List(agent, rw.Name, ProposalFilter{}, 0, 1000)
		tp, _, _ := tv.Proposals().List(agent, rw.Name, ProposalFilter{}, 0, 1000)
		same("proposals of "+rw.Name, len(rp), len(tp))
	})
	rd, _ := rv.st.dedupeCount.Get(agent)
	td, _ := tv.st.dedupeCount.Get(agent)
	same("idempotency records", rd, td)
	re, _, rerr := rv.Feed().Events(agent, rv.Feed().Floor(agent), EventFilter{}, 1000)
	te, _, terr := tv.Feed().Events(agent, tv.Feed().Floor(agent), EventFilter{}, 1000)
	same("feed", [2]any{projectEvents(re), CodeOf(rerr)}, [2]any{projectEvents(te), CodeOf(terr)})
}

func projectSnaps(in []*WorkbenchSnapshot) []string {
	var out []string
	for _, s := range in {
		out = append(out, fmt.Sprint(s.ID, s.Name, s.RetiredAtMs, s.ReapedAtMs, s.LeaseExpiresMs))
	}
	return out
}

func projectEvents(in []Event) []string {
	var out []string
	for _, e := range in {
		out = append(out, fmt.Sprint(e.Kind, e.Workbench, e.Path, e.SnapshotID, e.AtMs))
	}
	return out
}
