package meta

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// checkUsage compares every root's maintained usage with a recomputation from the
// workbench records and the held snapshots.
func checkUsage(f *FSM) error {
	st := f.Snapshot().st
	want := st.recomputeUsage()
	var err error
	st.roots.Scan(func(agent string, _ *Root) bool {
		got, _ := st.usage.Get(agent)
		w, _ := want.Get(agent)
		if got != w {
			err = fmt.Errorf("root %q: usage %+v, recomputed %+v", agent, got, w)
		}
		return err == nil
	})
	if err == nil && st.usage.Len() > want.Len() {
		err = fmt.Errorf("%d usage records for %d roots that hold something", st.usage.Len(), want.Len())
	}
	return err
}

// rejectedWhole applies b to f at the helper's next index and time and checks that it
// failed with code and changed nothing: a twin that applied a Tick instead holds the same
// state.
func rejectedWhole(t *testing.T, h *applyHelper, b Body, code Code) *Error {
	t.Helper()
	twin := restoredCopy(t, h.f, h.f.opts)
	r := h.do(b)
	if r.Err == nil || r.Err.Code != code { // r.Err is a *Error: CodeOf of a nil one panics
		t.Fatalf("%T: got %v, want %s", b, r.Err, code)
	}
	twin.ApplyBody(h.index, Header{TimeMs: h.nowMs}, Tick{})
	if twin.StateDigest() != h.f.StateDigest() {
		t.Fatalf("%T: the rejected command changed the state", b)
	}
	return r.Err
}

func TestQuotasRejectGrowthWholeAndNameTheQuota(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	if r := h.do(SetQuota{Agent: "a", Quota: Quota{MaxFiles: 2, MaxBytes: 10, MaxWorkbenches: 2, MaxSnapshots: 1}}); r.Err != nil || r.Quota.MaxFiles != 2 {
		t.Fatalf("set quota: %+v", r)
	}
	mustOK := func(b Body) Result {
		t.Helper()
		r := h.do(b)
		if r.Err != nil {
			t.Fatalf("%T: %v", b, r.Err)
		}
		return r
	}
	mustOK(Put{Agent: "a", Workspace: "w", Path: "f1", CreateWorkspace: true, Size: 4, Digest: digestOf([]byte("1234")), Segments: inlineSegs("1234")})
	mustOK(Put{Agent: "a", Workspace: "w", Path: "f2", Size: 4, Digest: digestOf([]byte("abcd")), Segments: inlineSegs("abcd")})
	e := rejectedWhole(t, h, Put{Agent: "a", Workspace: "w", Path: "f3", Size: 1, Digest: digestOf([]byte("x")), Segments: inlineSegs("x")}, CodeResourceExhausted)
	if e.Quota != QuotaFiles || e.Limit != 2 || e.Used != 2 || e.Requested != 1 {
		t.Fatalf("file quota error: %+v", e)
	}
	// An overwrite adds no file; it may grow bytes up to the limit and no further.
	mustOK(Put{Agent: "a", Workspace: "w", Path: "f1", Size: 6, Digest: digestOf([]byte("123456")), Segments: inlineSegs("123456")})
	e = rejectedWhole(t, h, Append{Agent: "a", Workspace: "w", Path: "f2", ExpectGeneration: h.f.View().mustFile(t, "w", "f2").Generation,
		Segments: inlineSegs("e"), AppendedBytes: 1, NewSize: 5, NewDigest: digestOf([]byte("abcde"))}, CodeResourceExhausted)
	if e.Quota != QuotaBytes || e.Limit != 10 || e.Used != 10 {
		t.Fatalf("byte quota error: %+v", e)
	}
	// Deleting frees a file; a smaller overwrite is allowed while at the limit.
	mustOK(Delete{Agent: "a", Workspace: "w", Path: "f2"})
	mustOK(Put{Agent: "a", Workspace: "w", Path: "f1", Size: 1, Digest: digestOf([]byte("1")), Segments: inlineSegs("1")})
	mustOK(CreateWorkspace{Agent: "a", Name: "w2"})
	e = rejectedWhole(t, h, CreateWorkspace{Agent: "a", Name: "w3"}, CodeResourceExhausted)
	if e.Quota != QuotaWorkbenches || e.Limit != 2 {
		t.Fatalf("workbench quota error: %+v", e)
	}
	rejectedWhole(t, h, Put{Agent: "a", Workspace: "w3", Path: "f", CreateWorkspace: true, Size: 1, Digest: digestOf([]byte("x")), Segments: inlineSegs("x")}, CodeResourceExhausted)
	snap := mustOK(SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1}).Snapshot
	e = rejectedWhole(t, h, SnapshotMint{Agent: "a", Workspace: "w2", TTLDays: 1}, CodeResourceExhausted)
	if e.Quota != QuotaSnapshots || e.Limit != 1 || e.Used != 1 {
		t.Fatalf("snapshot quota error: %+v", e)
	}
	src, _ := h.f.View().Workspace("a", "w")
	rejectedWhole(t, h, RestoreBegin{Agent: "a", OpID: hexID(1), Source: "w", SourceIncarnation: src.Incarnation, SnapshotID: snap.ID, Destination: "d"}, CodeResourceExhausted)
	mustOK(SnapshotRetire{Agent: "a", Workspace: "w", ID: snap.ID})
	mustOK(SnapshotMint{Agent: "a", Workspace: "w2", TTLDays: 1})
	// Another root is not limited; a quota of zero lifts the limit.
	mustOK(Put{Agent: "b", Workspace: "w", Path: "f3", CreateWorkspace: true, Size: 1, Digest: digestOf([]byte("x")), Segments: inlineSegs("x")})
	mustOK(SetQuota{Agent: "a"})
	mustOK(CreateWorkspace{Agent: "a", Name: "w3"})
	if r := h.do(SetQuota{Agent: "a", Quota: Quota{MaxFiles: -1}}); CodeOf(r.Err) != CodeInvalidArguments || r.Err.Field != "max_files" {
		t.Fatalf("negative quota: %v", r.Err)
	}
	if err := checkUsage(h.f); err != nil {
		t.Fatal(err)
	}
	if u := h.f.View().Usage("a"); u != (Usage{Files: 1, Bytes: 1, Workbenches: 3, Snapshots: 1}) {
		t.Fatalf("usage %+v", u)
	}
}

func (v *View) mustFile(t *testing.T, ws, path string) *Entry {
	t.Helper()
	w, err := v.Workspace("a", ws)
	if err != nil {
		t.Fatal(err)
	}
	e, err := v.File(w, path)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRestoreIsPausedAtTheQuotaNotHalfCopied(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	for i := 0; i < 4; i++ {
		h.put(fmt.Sprintf("f%d", i), "x")
	}
	snap := h.do(SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1}).Snapshot
	h.do(SetQuota{Agent: "a", Quota: Quota{MaxFiles: 6}})
	src, _ := h.f.View().Workspace("a", "w")
	op := hexID(5)
	if r := h.do(RestoreBegin{Agent: "a", OpID: op, Source: "w", SourceIncarnation: src.Incarnation, SnapshotID: snap.ID, Destination: "d"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	r := h.do(RestoreCopy{Agent: "a", OpID: op, Limit: 2})
	if r.Err != nil || r.Restore.Copied != 2 {
		t.Fatalf("first batch: %+v", r)
	}
	e := rejectedWhole(t, h, RestoreCopy{Agent: "a", OpID: op, After: r.Restore.After, Limit: 2}, CodeResourceExhausted)
	if e.Quota != QuotaFiles || e.Used != 6 || e.Requested != 2 {
		t.Fatalf("%+v", e)
	}
	h.do(SetQuota{Agent: "a", Quota: Quota{MaxFiles: 10}})
	if r := h.do(RestoreCopy{Agent: "a", OpID: op, After: r.Restore.After, Limit: 4}); r.Err != nil || !r.Restore.CopyDone {
		t.Fatalf("after raising the quota: %+v", r)
	}
	if err := checkUsage(h.f); err != nil {
		t.Fatal(err)
	}
}

func TestDeletingAWorkbenchReleasesEverythingInBoundedSteps(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{RetentionBatch: 1})}
	const files = 150 // more than two purge steps of paths
	for i := 0; i < files; i++ {
		body := fmt.Sprintf("body %d", i)
		h.do(Put{Agent: "a", Workspace: "w", Path: fmt.Sprintf("input/d%d/f%d", i%7, i), CreateWorkspace: true,
			Size: int64(len(body)), Digest: digestOf([]byte(body)), Segments: []Segment{{Digest: blobDigest(byte(i)), Size: int64(len(body))}}})
	}
	h.put("keep", "inline")
	ws, _ := h.f.View().Workspace("a", "w")
	snap := h.do(SnapshotMint{Agent: "a", Workspace: "w", Name: "s1", TTLDays: 1}).Snapshot
	h.do(Commit{Agent: "a", Workspace: "w", ExpectRevision: ws.Revision, Identity: hexID(1), ContentDigestURI: uri(1),
		ManifestDigestURI: uri(2), TreeDigestURI: uri(3), Envelope: envBody("{}")})
	ws, _ = h.f.View().Workspace("a", "w")
	// Refused while a restore reads it or while it is a staging destination.
	op := hexID(9)
	h.do(RestoreBegin{Agent: "a", OpID: op, Source: "w", SourceIncarnation: ws.Incarnation, SnapshotID: snap.ID, Destination: "d"})
	rejectedWhole(t, h, DeleteWorkspace{Agent: "a", Name: "w"}, CodeForkRetentionActive)
	rejectedWhole(t, h, DeleteWorkspace{Agent: "a", Name: "d"}, CodeInvalidState)
	rejectedWhole(t, h, PurgeRoot{Agent: "a", Limit: 10}, CodeForkRetentionActive)
	for after := ""; ; {
		r := h.do(RestoreCopy{Agent: "a", OpID: op, After: after, Limit: MaxRestoreBatch})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if r.Restore.CopyDone {
			break
		}
		after = r.Restore.After
	}
	h.do(RestoreFinish{Agent: "a", OpID: op, Manifest: envBody(`{"r":1}`), Identity: hexID(2), ContentDigestURI: uri(1),
		ManifestDigestURI: uri(2), TreeDigestURI: uri(3), Envelope: envBody(`{"c":1}`)})
	ws, _ = h.f.View().Workspace("a", "w")
	rejectedWhole(t, h, DeleteWorkspace{Agent: "a", Name: "w", IfRevision: ws.Revision - 1}, CodeConflict)
	if r := h.do(DeleteWorkspace{Agent: "a", Name: "w", IfRevision: ws.Revision}); r.Err != nil || r.Deleted != 1 {
		t.Fatalf("delete: %+v", r)
	}
	rejectedWhole(t, h, DeleteWorkspace{Agent: "a", Name: "w"}, CodeNotFound)
	if err := checkUsage(h.f); err != nil {
		t.Fatal(err)
	}
	// The name is free at once, and a new workbench of it sees nothing of the old one.
	if r := h.do(CreateWorkspace{Agent: "a", Name: "w"}); r.Err != nil || !r.Created {
		t.Fatalf("re-create: %+v", r)
	}
	v := h.f.View()
	nw, _ := v.Workspace("a", "w")
	if nw.Files != 0 || len(filesAt(v, nw)) != 0 || nw.HeadIdentity != "" {
		t.Fatalf("the new workbench sees old state: %+v", nw)
	}
	if _, err := v.Lifecycle().Snapshot("a", "w", 0, "s1"); CodeOf(err) != CodeSnapshotNotFound {
		t.Fatalf("old snapshot name resolves: %v", err)
	}
	if len(v.Lifecycle().Snapshots("a", "w")) != 0 {
		t.Fatal("old snapshots listed under the new workbench")
	}
	// The purge runs in bounded retention steps: keep ticking until it is done.
	oldPrefix := u64(ws.Incarnation)
	left := func() int {
		st := h.f.Snapshot().st
		n := 0
		for _, m := range []func(func(string) bool){
			func(fn func(string) bool) { st.paths.Scan(func(k string, _ *pathRecord) bool { return fn(k) }) },
			func(fn func(string) bool) { st.dirs.Scan(func(k string, _ dirRecord) bool { return fn(k) }) },
			func(fn func(string) bool) { st.commits.Scan(func(k string, _ *CommitRecord) bool { return fn(k) }) },
			func(fn func(string) bool) { st.holds.Scan(func(k string, _ int64) bool { return fn(k) }) },
			func(fn func(string) bool) { st.index.Scan(func(k string, _ struct{}) bool { return fn(k) }) },
		} {
			m(func(k string) bool {
				if len(k) >= 8 && k[:8] == oldPrefix {
					n++
				}
				return true
			})
		}
		st.snapshots.Scan(func(_ string, s *WorkbenchSnapshot) bool {
			if s.Incarnation == ws.Incarnation {
				n++
			}
			return true
		})
		return n
	}
	steps := 0
	for ; left() > 0; steps++ {
		if steps > 100 {
			t.Fatalf("purge did not finish: %d records left", left())
		}
		h.do(Tick{})
	}
	if steps < 3 {
		t.Fatalf("the purge took %d steps; it should be bounded per command", steps)
	}
	// Blobs only the deleted workbench referenced are candidates now; the restored copy
	// keeps its own references.
	v = h.f.View()
	d, _ := v.Workspace("a", "d")
	if len(filesAt(v, d)) != files+3 { // the files, "keep", both manifests
		t.Fatalf("restored workbench lost files: %d", len(filesAt(v, d)))
	}
	if err := checkRefcounts(h.f); err != nil {
		t.Fatal(err)
	}
	if err := checkUsage(h.f); err != nil {
		t.Fatal(err)
	}
	h.do(DeleteWorkspace{Agent: "a", Name: "d"})
	for i := 0; i < 100; i++ { // enough bounded steps for its purge
		h.do(Tick{})
	}
	zero := 0
	v = h.f.View()
	root, _ := v.Root("a")
	v.Shard().Blobs(root.UID, func(b BlobRef) bool {
		if b.Count == 0 && b.ZeroSinceMs != 0 {
			zero++
		}
		return true
	})
	if zero != files {
		t.Fatalf("%d blobs released to collection, want %d", zero, files)
	}
}

func TestPurgeRootDeletesEveryWorkbenchInBoundedCommands(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{RetentionBatch: 1 << 20})}
	h.do(SetQuota{Agent: "a", Quota: Quota{MaxFiles: 100}})
	for i := 0; i < 5; i++ {
		h.do(Put{Agent: "a", Workspace: fmt.Sprintf("w%d", i), Path: "f", CreateWorkspace: true, Size: 1, Digest: digestOf([]byte("x")), Segments: inlineSegs("x")})
	}
	h.do(SnapshotMint{Agent: "a", Workspace: "w1", TTLDays: 1})
	h.do(Put{Agent: "b", Workspace: "w", Path: "f", CreateWorkspace: true, Size: 1, Digest: digestOf([]byte("x")), Segments: inlineSegs("x")})
	total := int64(0)
	for i := 0; ; i++ {
		r := h.do(PurgeRoot{Agent: "a", Limit: 2})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		total += r.Deleted
		if !r.More {
			break
		}
		if i > 5 {
			t.Fatal("purge does not end")
		}
	}
	v := h.f.View()
	if ws, _ := v.Workspaces("a", "", 10); total != 5 || len(ws) != 0 {
		t.Fatalf("purged %d, left %d", total, len(ws))
	}
	if u := v.Usage("a"); u != (Usage{}) {
		t.Fatalf("usage after purge: %+v", u)
	}
	if q, ok := v.Quota("a"); !ok || q.MaxFiles != 100 {
		t.Fatal("purge dropped the quota")
	}
	if _, err := v.Workspace("b", "w"); err != nil {
		t.Fatal("purge touched another root")
	}
	if err := checkUsage(h.f); err != nil {
		t.Fatal(err)
	}
	if err := checkRefcounts(h.f); err != nil {
		t.Fatal(err)
	}
}

// TestUsageMatchesTheTreeAndQuotasHold is a property test: random puts, overwrites,
// appends, deletes, snapshots, restores, workbench deletes, purges and quota changes.
// After every command the maintained usage equals a recomputation from the tree, no
// command that grew a dimension left it above its quota, blob reference counts match the
// chains, and snapshot → restore reproduces the state, quotas and usage included.
func TestUsageMatchesTheTreeAndQuotasHold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := New(Options{RetentionBatch: 1 << 20})
		var index uint64
		var now int64 = 1000
		names := []string{"w1", "w2", "w3"}
		paths := []string{"input/a", "input/b", "logs/c", "outputs/d/e"}
		var snaps []uint64
		restores := 0
		n := rapid.IntRange(1, 120).Draw(t, "n")
		for i := 0; i < n; i++ {
			ws := rapid.SampledFrom(names).Draw(t, "ws")
			p := rapid.SampledFrom(paths).Draw(t, "path")
			size := rapid.Int64Range(0, 20).Draw(t, "size")
			data := bytes.Repeat([]byte{byte(i)}, int(size))
			segs := inlineSegs(string(data))
			if size > 0 && rapid.Bool().Draw(t, "blob") {
				segs = []Segment{{Digest: blobDigest(byte(rapid.IntRange(0, 5).Draw(t, "blobid"))), Size: size}}
			}
			v := f.View()
			var cur *Entry
			if w, err := v.Workspace("a", ws); err == nil {
				cur, _ = v.File(w, p)
			}
			var b Body
			switch rapid.IntRange(0, 10).Draw(t, "op") {
			case 0, 1, 2:
				b = Put{Agent: "a", Workspace: ws, Path: p, CreateWorkspace: true, Size: size, Digest: digestOf(data), Segments: segs}
			case 3:
				var gen, old int64
				if cur != nil {
					gen, old = int64(cur.Generation), cur.Size
				}
				b = Append{Agent: "a", Workspace: ws, Path: p, CreateWorkspace: true, ExpectGeneration: uint64(gen), Segments: segs,
					AppendedBytes: size, NewSize: old + size, NewDigest: digestOf(data)}
			case 4:
				b = Delete{Agent: "a", Workspace: ws, Path: p}
			case 5:
				b = SnapshotMint{Agent: "a", Workspace: ws, TTLDays: 1}
			case 6:
				if len(snaps) == 0 {
					b = Tick{}
					break
				}
				b = SnapshotRetire{Agent: "a", Workspace: ws, ID: rapid.SampledFrom(snaps).Draw(t, "snap")}
			case 7:
				w, err := v.Workspace("a", ws)
				held := v.Lifecycle().Snapshots("a", ws)
				if err != nil || len(held) == 0 {
					b = Tick{}
					break
				}
				restores++
				b = RestoreBegin{Agent: "a", OpID: hexID(restores), Source: ws, SourceIncarnation: w.Incarnation,
					SnapshotID: held[len(held)-1].ID, Destination: rapid.SampledFrom(names).Draw(t, "dst")}
			case 8:
				b = DeleteWorkspace{Agent: "a", Name: ws}
			case 9:
				b = SetQuota{Agent: "a", Quota: Quota{MaxFiles: rapid.Int64Range(0, 8).Draw(t, "qf"), MaxBytes: rapid.Int64Range(0, 80).Draw(t, "qb"),
					MaxWorkbenches: rapid.Int64Range(0, 3).Draw(t, "qw"), MaxSnapshots: rapid.Int64Range(0, 3).Draw(t, "qs")}}
			default:
				b = PurgeRoot{Agent: "a", Limit: rapid.IntRange(1, 3).Draw(t, "limit")}
			}
			before := f.View().Usage("a")
			index++
			now += 1000
			r := f.ApplyBody(index, Header{TimeMs: now}, b)
			if r.Err == nil && r.Snapshot != nil {
				snaps = append(snaps, r.Snapshot.ID)
			}
			if r.Err == nil && r.Restore != nil {
				// Drive the restore to its end (or to a quota) in the same iteration.
				for op := r.Restore; op.State == RestoreCopying; {
					index++
					now += 1000
					var rr Result
					if op.CopyDone {
						rr = f.ApplyBody(index, Header{TimeMs: now}, RestoreFinish{Agent: "a", OpID: op.ID, Manifest: envBody("{}"),
							Identity: hexID(1000 + restores), ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3), Envelope: envBody("{}")})
					} else {
						rr = f.ApplyBody(index, Header{TimeMs: now}, RestoreCopy{Agent: "a", OpID: op.ID, After: op.After, Limit: 2})
					}
					if rr.Err != nil {
						if rr.Err.Code != CodeResourceExhausted {
							t.Fatalf("restore step: %v", rr.Err)
						}
						break // paused at a quota
					}
					op = rr.Restore
				}
			}
			after := f.View().Usage("a")
			if q, ok := f.View().Quota("a"); ok && r.Err == nil {
				for _, d := range []struct {
					name            string
					lim, was, isNow int64
				}{{"files", q.MaxFiles, before.Files, after.Files}, {"bytes", q.MaxBytes, before.Bytes, after.Bytes},
					{"workbenches", q.MaxWorkbenches, before.Workbenches, after.Workbenches}, {"snapshots", q.MaxSnapshots, before.Snapshots, after.Snapshots}} {
					if d.lim > 0 && d.isNow > d.was && d.isNow > d.lim {
						t.Fatalf("command %d %T grew %s from %d to %d past the quota %d", i, b, d.name, d.was, d.isNow, d.lim)
					}
				}
			}
			if err := checkUsage(f); err != nil {
				t.Fatalf("after command %d %T: %v", i, b, err)
			}
			if err := checkRefcounts(f); err != nil {
				t.Fatalf("after command %d %T: %v", i, b, err)
			}
		}
		if g := restored(t, f); g.View().Usage("a") != f.View().Usage("a") {
			t.Fatal("snapshot → restore changed the state")
		}
	})
}

func TestLifecycleCommandsRoundTripTheirEncoding(t *testing.T) {
	for _, b := range []Body{
		SetQuota{Agent: "a", Quota: Quota{MaxBytes: 1, MaxFiles: 2, MaxWorkbenches: 3, MaxSnapshots: 4}},
		DeleteWorkspace{Agent: "a", Name: "w", IfRevision: 7},
		PurgeRoot{Agent: "a", Limit: 3},
	} {
		data, err := EncodeCommand(Header{TimeMs: 5}, b)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := DecodeCommand(data)
		if err != nil || got != b {
			t.Fatalf("%T: decoded %+v, %v", b, got, err)
		}
	}
}

// TestAFormatOneSnapshotRestoresWithItsUsageRecomputed: a snapshot written before usage
// was kept (format 1, no usage or quota records) restores with the usage the tree implies.
func TestAFormatOneSnapshotRestoresWithItsUsageRecomputed(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	h.put("input/a", "12345")
	h.put("input/b", "1")
	h.do(CreateWorkspace{Agent: "a", Name: "w2"})
	h.do(SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1})
	want := h.f.View().Usage("a")
	var cur bytes.Buffer
	if _, err := h.f.Snapshot().WriteTo(&cur); err != nil {
		t.Fatal(err)
	}
	// Re-encode as format 1: the same records without the usage and quota ones.
	dec := snapDecMode.NewDecoder(&cur)
	var old bytes.Buffer
	enc := encMode.NewEncoder(&old)
	var hdr snapHeader
	if err := dec.Decode(&hdr); err != nil {
		t.Fatal(err)
	}
	hdr.Format = 1
	enc.Encode(hdr)
	for {
		var rec snapRecord
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.T != recUsage && rec.T != recQuota {
			enc.Encode(rec)
		}
		if rec.T == recEnd {
			break
		}
	}
	g := New(Options{})
	if err := g.Restore(&old); err != nil {
		t.Fatal(err)
	}
	if got := g.View().Usage("a"); got != want || want != (Usage{Files: 2, Bytes: 6, Workbenches: 2, Snapshots: 1}) {
		t.Fatalf("usage %+v, want %+v", got, want)
	}
}
