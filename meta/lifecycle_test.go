package meta

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func filesAt(v *View, ws *Workspace) map[string]uint64 {
	out := map[string]uint64{}
	v.Files(ws, "", func(p string, e *Entry) bool {
		out[p] = e.Generation
		return true
	})
	return out
}

func bodyAt(t *testing.T, v *View, ws *Workspace, p string) string {
	t.Helper()
	e, err := v.File(ws, p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	var b strings.Builder
	for _, sg := range e.Segments {
		b.Write(sg.Inline)
	}
	return b.String()
}

// TestSnapshotReadsStayFrozenAndHistoryIsReleased: a snapshot sees the workbench as it was
// while the live tree changes; retiring it lets pruning drop the history it pinned.
func TestSnapshotReadsStayFrozenAndHistoryIsReleased(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.put("input/a.txt", "one")
	h.put("input/b.txt", "bee")
	res := h.do(SnapshotMint{Agent: "a", Workspace: "w", Name: "before", TTLDays: 7, Reason: "baseline"})
	if res.Err != nil || res.Snapshot.ID != 1 || res.Snapshot.ReadVersion != res.Version {
		t.Fatalf("mint: %+v %v", res.Snapshot, res.Err)
	}
	h.put("input/a.txt", "two")
	h.do(Delete{Agent: "a", Workspace: "w", Path: "input/b.txt"})
	h.put("input/c.txt", "sea")

	v := h.f.View()
	sv, sws, snap, err := v.Lifecycle().SnapshotView("a", "w", 0, "before")
	if err != nil || snap.ID != 1 {
		t.Fatalf("snapshot view: %v", err)
	}
	if got := bodyAt(t, sv, sws, "input/a.txt"); got != "one" {
		t.Fatalf("snapshot a.txt = %q", got)
	}
	if got := bodyAt(t, sv, sws, "input/b.txt"); got != "bee" {
		t.Fatalf("snapshot b.txt = %q", got)
	}
	if _, err := sv.File(sws, "input/c.txt"); CodeOf(err) != CodeNotFound {
		t.Fatalf("snapshot sees a later file: %v", err)
	}
	if ents, _, err := sv.List(sws, "input", "", 10); err != nil || len(ents) != 2 {
		t.Fatalf("snapshot listing: %v %v", ents, err)
	}
	live, _ := v.Workspace("a", "w")
	if got := bodyAt(t, v, live, "input/a.txt"); got != "two" {
		t.Fatalf("live a.txt = %q", got)
	}

	res = h.do(SnapshotRetire{Agent: "a", Workspace: "w", ID: 1, Reason: "done"})
	if res.Err != nil || !res.Retired {
		t.Fatalf("retire: %+v", res)
	}
	again := h.do(SnapshotRetire{Agent: "a", Workspace: "w", Name: "before", Reason: "other"})
	if again.Err != nil || again.Retired || again.Snapshot.RetireReason != "done" {
		t.Fatalf("retire retry: %+v %v", again.Snapshot, again.Err)
	}
	if _, _, _, err := h.f.View().Lifecycle().SnapshotView("a", "w", 1, ""); CodeOf(err) != CodeSnapshotExpired {
		t.Fatalf("read of a retired snapshot: %v", err)
	}
	// The history the snapshot pinned is gone; the tombstone of b.txt waits for retention.
	st := h.f.Snapshot().st
	if rec, _ := st.paths.Get(pathKey(live.Incarnation, "input/a.txt")); len(rec.Chain) != 1 {
		t.Fatalf("a.txt keeps %d versions after the retire", len(rec.Chain))
	}
	if rec, _ := st.paths.Get(pathKey(live.Incarnation, "input/b.txt")); len(rec.Chain) != 1 || rec.Chain[0].Entry != nil {
		t.Fatalf("b.txt chain after the retire: %+v", rec)
	}
	if st.holds.Len() != 0 {
		t.Fatalf("holds left: %d", st.holds.Len())
	}
}

// TestSnapshotLeaseLifecycle: alive → expired (renew revives) → reaped (nothing revives),
// renew never shortens, names resolve to the newest snapshot minted with them.
func TestSnapshotLeaseLifecycle(t *testing.T) {
	f := New(Options{SnapshotGrace: time.Hour})
	h := &applyHelper{t: t, f: f}
	h.put("logs/x", "x")
	mint := h.do(SnapshotMint{Agent: "a", Workspace: "w", Name: "n", TTLDays: 1})
	lease := mint.Snapshot.LeaseExpiresMs
	if lease != h.nowMs+dayMs {
		t.Fatalf("lease %d, want %d", lease, h.nowMs+dayMs)
	}
	if r := h.do(SnapshotRenew{Agent: "a", Workspace: "w", ID: 1, TTLDays: 1}); r.Err != nil || r.Snapshot.LeaseExpiresMs <= lease {
		t.Fatalf("renew by one day later: %+v %v", r.Snapshot, r.Err)
	}
	cur, _ := h.f.View().Lifecycle().Snapshot("a", "w", 1, "")
	// A renew that would shorten (or keep) the lease is a no-op returning the current record.
	h.nowMs -= 1000 // the next command runs at the same command time as the last renew
	if r := h.do(SnapshotRenew{Agent: "a", Workspace: "w", ID: 1, TTLDays: 1}); r.Err != nil || r.Snapshot.LeaseExpiresMs != cur.LeaseExpiresMs || r.Snapshot.RenewedAtMs != cur.RenewedAtMs {
		t.Fatalf("shortening renew: %+v %v", r.Snapshot, r.Err)
	}
	cur, _ = h.f.View().Lifecycle().Snapshot("a", "w", 1, "")

	// Past the lease: expired; reads fail; a renew revives it.
	h.nowMs = cur.LeaseExpiresMs
	h.do(Tick{})
	if _, _, _, err := h.f.View().Lifecycle().SnapshotView("a", "w", 1, ""); CodeOf(err) != CodeSnapshotExpired || err.(*Error).State != "expired" {
		t.Fatalf("read past the lease: %v", err)
	}
	if r := h.do(SnapshotRenew{Agent: "a", Workspace: "w", Name: "n", TTLDays: 2}); r.Err != nil || r.Snapshot.StateAt(h.nowMs) != SnapshotAlive {
		t.Fatalf("renew of an expired snapshot: %+v %v", r.Snapshot, r.Err)
	}
	if _, _, _, err := h.f.View().Lifecycle().SnapshotView("a", "w", 1, ""); err != nil {
		t.Fatalf("read after revival: %v", err)
	}
	// Past lease + grace: reaped by an idle tick; nothing revives it.
	cur, _ = h.f.View().Lifecycle().Snapshot("a", "w", 1, "")
	h.nowMs = cur.LeaseExpiresMs + time.Hour.Milliseconds()
	h.do(Tick{})
	cur, _ = h.f.View().Lifecycle().Snapshot("a", "w", 1, "")
	if cur.StateAt(h.nowMs) != SnapshotReaped {
		t.Fatalf("state after lease+grace: %s", cur.StateAt(h.nowMs))
	}
	if r := h.do(SnapshotRenew{Agent: "a", Workspace: "w", ID: 1, TTLDays: 90}); CodeOf(r.Err) != CodeSnapshotExpired {
		t.Fatalf("renew of a reaped snapshot: %v", r.Err)
	}
	// Names resolve to the newest snapshot with that name, even when it is retired.
	second := h.do(SnapshotMint{Agent: "a", Workspace: "w", Name: "n", TTLDays: 1})
	h.do(SnapshotRetire{Agent: "a", Workspace: "w", ID: second.Snapshot.ID})
	if _, _, _, err := h.f.View().Lifecycle().SnapshotView("a", "w", 0, "n"); CodeOf(err) != CodeSnapshotExpired {
		t.Fatalf("name of a retired newest snapshot: %v", err)
	}
	if s, _ := h.f.View().Lifecycle().Snapshot("a", "w", 0, "n"); s.ID != second.Snapshot.ID {
		t.Fatalf("name resolves to %d, want %d", s.ID, second.Snapshot.ID)
	}
	// Errors: bad ttl, unknown snapshot, snapshot of another workbench, both selectors.
	if r := h.do(SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 91}); CodeOf(r.Err) != CodeInvalidArguments || r.Err.Field != "ttl_days" {
		t.Fatalf("ttl 91: %v", r.Err)
	}
	if r := h.do(SnapshotMint{Agent: "a", Workspace: "nope", TTLDays: 1}); CodeOf(r.Err) != CodeNotFound {
		t.Fatalf("snapshot of a missing workbench: %v", r.Err)
	}
	h.do(CreateWorkspace{Agent: "a", Name: "other"})
	if r := h.do(SnapshotRenew{Agent: "a", Workspace: "other", ID: 1, TTLDays: 1}); CodeOf(r.Err) != CodeSnapshotNotFound {
		t.Fatalf("snapshot of another workbench: %v", r.Err)
	}
	if r := h.do(SnapshotRetire{Agent: "a", Workspace: "w", ID: 1, Name: "n"}); CodeOf(r.Err) != CodeInvalidArguments {
		t.Fatalf("both selectors: %v", r.Err)
	}
	if got := len(h.f.View().Lifecycle().Snapshots("a", "w")); got != 2 {
		t.Fatalf("listed %d snapshots", got)
	}
}

func hexID(n int) string { return fmt.Sprintf("%064x", n) }

func uri(n int) string { return "sha256:" + hexID(n) }

func envBody(s string) FileBody {
	return FileBody{Size: int64(len(s)), Digest: digestOf([]byte(s)), ContentType: "application/json", Segments: inlineSegs(s)}
}

// TestCommitReplayConflictAndReplace follows docs/workbench.md, workbench_commit in the FSM.
func TestCommitReplayConflictAndReplace(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.put("outputs/r.txt", "v1")
	ws, _ := h.f.View().Workspace("a", "w")
	commit := func(id int, rev uint64, head string, replace bool) Result {
		return h.do(Commit{Agent: "a", Workspace: "w", ExpectRevision: rev, ExpectHead: head, Replace: replace,
			Identity: hexID(id), ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3),
			Envelope: envBody(fmt.Sprintf(`{"commit":%d}`, id))})
	}
	first := commit(1, ws.Revision, "", false)
	if first.Err != nil || first.Commit.Version != first.Version {
		t.Fatalf("commit: %+v", first)
	}
	v := h.f.View()
	ws, _ = v.Workspace("a", "w")
	if ws.HeadIdentity != hexID(1) || bodyAt(t, v, ws, RunManifestPath) != `{"commit":1}` {
		t.Fatalf("head %q manifest %q", ws.HeadIdentity, bodyAt(t, v, ws, RunManifestPath))
	}
	// Exact replay (even after edits): the stored result.
	h.put("outputs/r2.txt", "more")
	if r := commit(1, 0, "", false); r.Err != nil || !r.Replayed || r.Commit.Version != first.Version {
		t.Fatalf("replay: %+v", r)
	}
	ws, _ = h.f.View().Workspace("a", "w")
	if r := commit(2, ws.Revision, "", false); CodeOf(r.Err) != CodeWorkbenchCommitConflict {
		t.Fatalf("second identity without replace: %v", r.Err)
	}
	if r := commit(2, ws.Revision, hexID(9), true); CodeOf(r.Err) != CodeWorkbenchCommitConflict {
		t.Fatalf("replace against a changed head: %v", r.Err)
	}
	if r := commit(2, ws.Revision-1, hexID(1), true); CodeOf(r.Err) != CodeConflict {
		t.Fatalf("stale revision: %v", r.Err)
	}
	second := commit(2, ws.Revision, hexID(1), true)
	if second.Err != nil {
		t.Fatal(second.Err)
	}
	// The older commit still replays with its original result, and its tree stays readable
	// (commits pin their version) although r.txt changed since.
	h.put("outputs/r.txt", "v2")
	if r := commit(1, 0, "", false); !r.Replayed || r.Commit.Version != first.Version {
		t.Fatalf("replay of a replaced commit: %+v", r)
	}
	v = h.f.View()
	ws, _ = v.Workspace("a", "w")
	cm, ok := v.Lifecycle().Commit(ws, hexID(1))
	if !ok {
		t.Fatal("commit 1 missing")
	}
	cv, cws, _ := v.Lifecycle().VersionView(ws, cm.Version)
	if got := bodyAt(t, cv, cws, "outputs/r.txt"); got != "v1" {
		t.Fatalf("commit 1 tree reads %q", got)
	}
	// Implicit create.
	if r := h.do(Commit{Agent: "a", Workspace: "fresh", CreateWorkspace: true, Identity: hexID(5), ContentDigestURI: uri(1),
		ManifestDigestURI: uri(2), TreeDigestURI: uri(3), Envelope: envBody("{}")}); r.Err != nil {
		t.Fatalf("commit creating its workbench: %v", r.Err)
	}
	if r := h.do(Commit{Agent: "a", Workspace: "w", Identity: "XYZ", ContentDigestURI: uri(1), ManifestDigestURI: uri(2),
		TreeDigestURI: uri(3), Envelope: envBody("{}")}); CodeOf(r.Err) != CodeInvalidArguments || r.Err.Field != "commit_identity" {
		t.Fatalf("bad identity: %v", r.Err)
	}
}

// TestRestoreStagesInBoundedStepsAndPublishesAtOnce: the destination is invisible and
// read-only until the finish command; bodies are shared (reference counts, no new
// segments); retries converge; stale steps are rejected.
func TestRestoreStagesInBoundedStepsAndPublishesAtOnce(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	blobSeg := func(s string) []Segment { return []Segment{{Digest: digestOf([]byte(s)), Size: int64(len(s))}} }
	for i := 0; i < 10; i++ {
		body := fmt.Sprintf("file %d", i)
		h.do(Put{Agent: "a", Workspace: "src", Path: fmt.Sprintf("input/f%02d", i), CreateWorkspace: true,
			Size: int64(len(body)), Digest: digestOf([]byte(body)), Segments: blobSeg(body)})
	}
	snap := h.do(SnapshotMint{Agent: "a", Workspace: "src", TTLDays: 1}).Snapshot
	h.put("input/late", "not in the snapshot") // workbench "w", unrelated
	h.do(Put{Agent: "a", Workspace: "src", Path: "input/f00", Size: 3, Digest: digestOf([]byte("new")), Segments: inlineSegs("new")})
	src, _ := h.f.View().Workspace("a", "src")
	op := hexID(77)
	begin := h.do(RestoreBegin{Agent: "a", OpID: op, Source: "src", SourceIncarnation: src.Incarnation, SnapshotID: snap.ID, Destination: "dst"})
	if begin.Err != nil {
		t.Fatal(begin.Err)
	}
	if _, err := h.f.View().Workspace("a", "dst"); CodeOf(err) != CodeNotFound {
		t.Fatalf("staging destination visible: %v", err)
	}
	if r := h.put("x", "y"); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := h.do(Put{Agent: "a", Workspace: "dst", Path: "input/x", Size: 1, Digest: digestOf([]byte("y")), Segments: inlineSegs("y")}); CodeOf(r.Err) != CodeInvalidState {
		t.Fatalf("write to staging: %v", r.Err)
	}
	if r := h.do(RestoreBegin{Agent: "a", OpID: op, Source: "src", SourceIncarnation: src.Incarnation, SnapshotID: snap.ID, Destination: "dst"}); CodeOf(r.Err) != CodeConflict || r.Err.OperationID != op {
		t.Fatalf("retry while running: %+v", r.Err)
	}
	if r := h.do(SnapshotRetire{Agent: "a", Workspace: "src", ID: snap.ID}); CodeOf(r.Err) != CodeForkRetentionActive {
		t.Fatalf("retire while restoring: %v", r.Err)
	}
	after, steps := "", 0
	for {
		r := h.do(RestoreCopy{Agent: "a", OpID: op, After: after, Limit: 3})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		steps++
		if r.Restore.CopyDone {
			break
		}
		after = r.Restore.After
	}
	if steps != 4 {
		t.Fatalf("10 files in batches of 3 took %d steps", steps)
	}
	if r := h.do(RestoreCopy{Agent: "a", OpID: op, After: "", Limit: 3}); CodeOf(r.Err) != CodeConflict {
		t.Fatalf("a stale copy step: %v", r.Err)
	}
	fin := h.do(RestoreFinish{Agent: "a", OpID: op, Manifest: envBody(`{"restore":1}`), Identity: hexID(8),
		ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3), Envelope: envBody(`{"run":1}`)})
	if fin.Err != nil || fin.Restore.State != RestoreComplete || fin.Restore.DestinationGeneration != fin.Version {
		t.Fatalf("finish: %+v", fin)
	}
	v := h.f.View()
	dst, err := v.Workspace("a", "dst")
	if err != nil || dst.HeadIdentity != hexID(8) {
		t.Fatalf("destination: %+v %v", dst, err)
	}
	got := filesAt(v, dst)
	if len(got) != 12 || bodyAt(t, v, dst, RestoreManifestPath) != `{"restore":1}` {
		t.Fatalf("destination files: %v", got)
	}
	for i := 0; i < 10; i++ {
		e, _ := v.File(dst, fmt.Sprintf("input/f%02d", i))
		if want := digestOf([]byte(fmt.Sprintf("file %d", i))); e.Digest != want {
			t.Fatalf("f%02d restored with another body", i)
		}
		if br, _ := v.st.blobs.Get(blobKey("r1", e.Segments[0].Digest)); br.Count < 2 {
			t.Fatalf("f%02d: reference count %d; the body should be shared", i, br.Count)
		}
	}
	if err := checkRefcounts(h.f); err != nil {
		t.Fatal(err)
	}
	if r := h.do(RestoreBegin{Agent: "a", OpID: op, Source: "src", SourceIncarnation: src.Incarnation, SnapshotID: snap.ID, Destination: "dst"}); r.Err != nil || !r.Replayed {
		t.Fatalf("retry after success: %+v", r)
	}
	if r := h.do(RestoreBegin{Agent: "a", OpID: hexID(78), Source: "src", SourceIncarnation: src.Incarnation, SnapshotID: snap.ID, Destination: "dst"}); CodeOf(r.Err) != CodeAlreadyExists {
		t.Fatalf("restore onto an existing workbench: %v", r.Err)
	}
	if r := h.do(SnapshotRetire{Agent: "a", Workspace: "src", ID: snap.ID}); r.Err != nil {
		t.Fatalf("retire after the restore: %v", r.Err)
	}
	if _, more := v.Workspaces("a", "", 10); more {
		t.Fatal("more workbenches than expected")
	}
}

// TestSnapshotsStayFrozenUnderPruning is a property test: random writes, snapshot mints
// and retires with short retention; every alive snapshot keeps reading exactly what the
// model held at its version, and reference counts always match the retained chains.
func TestSnapshotsStayFrozenUnderPruning(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newModel()
		m.retentionMs = time.Minute.Milliseconds()
		f := New(Options{RetentionWindow: time.Minute, RetentionBatch: 1 << 20, History: pruneAtOnce})
		type snapRef struct {
			agent, ws string
			id, at    uint64
		}
		var alive []snapRef
		var index uint64
		n := rapid.IntRange(1, 120).Draw(t, "n")
		for i := 0; i < n; i++ {
			index++
			switch op := rapid.IntRange(0, 9).Draw(t, "kind"); {
			case op == 0 || op == 1 && len(alive) == 0:
				ws := rapid.SampledFrom(append([]string{"nope/w"}, keys(m.workspaces)...)).Draw(t, "snapws")
				agent, name, _ := cutSlash(ws)
				h := Header{TimeMs: m.nowMs + 1}
				res := f.ApplyBody(index, h, SnapshotMint{Agent: agent, Workspace: name, TTLDays: 1})
				m.apply(index, h, Tick{})
				if (res.Err == nil) != m.workspaces[ws] {
					t.Fatalf("mint on %s: %v", ws, res.Err)
				}
				if res.Err == nil {
					alive = append(alive, snapRef{agent, name, res.Snapshot.ID, res.Snapshot.ReadVersion})
				}
			case op == 1:
				k := rapid.IntRange(0, len(alive)-1).Draw(t, "retire")
				s := alive[k]
				h := Header{TimeMs: m.nowMs + 1}
				if res := f.ApplyBody(index, h, SnapshotRetire{Agent: s.agent, Workspace: s.ws, ID: s.id}); res.Err != nil || !res.Retired {
					t.Fatalf("retire: %+v", res)
				}
				m.apply(index, h, Tick{})
				alive = append(alive[:k], alive[k+1:]...)
			default:
				h, b := genHeader(t, m), genBody(t, m)
				want := m.apply(index, h, b)
				if err := sameAnswer(f.ApplyBody(index, h, b), want); err != nil {
					t.Fatalf("command %d %T: %v", i, b, err)
				}
			}
			if err := checkRefcounts(f); err != nil {
				t.Fatalf("after command %d: %v", i, err)
			}
			v := f.View()
			for _, s := range alive {
				sv, sws, _, err := v.Lifecycle().SnapshotView(s.agent, s.ws, s.id, "")
				if err != nil {
					t.Fatalf("snapshot %d: %v", s.id, err)
				}
				got := filesAt(sv, sws)
				want := m.files(s.agent+"/"+s.ws, s.at)
				if len(got) != len(want) {
					t.Fatalf("snapshot %d at %d: %d files, model %d", s.id, s.at, len(got), len(want))
				}
				for p, e := range want {
					if got[p] != e.Generation {
						t.Fatalf("snapshot %d at %d: %s generation %d, model %d", s.id, s.at, p, got[p], e.Generation)
					}
				}
			}
		}
		// Retire everything; past the retention window no history is left.
		for _, s := range alive {
			index++
			f.ApplyBody(index, Header{TimeMs: m.nowMs}, SnapshotRetire{Agent: s.agent, Workspace: s.ws, ID: s.id})
		}
		f.ApplyBody(index+1, Header{TimeMs: m.nowMs + 2*time.Minute.Milliseconds()}, Tick{})
		st := f.Snapshot().st
		st.paths.Scan(func(k string, rec *pathRecord) bool {
			if len(rec.Chain) != 1 || rec.Chain[0].Entry == nil {
				t.Fatalf("path %q keeps %d versions after every snapshot was retired", keyPath(k), len(rec.Chain))
			}
			return true
		})
		if st.holds.Len() != 0 || st.history.Len() != 0 {
			t.Fatalf("holds %d history %d left", st.holds.Len(), st.history.Len())
		}
		if err := checkRefcounts(f); err != nil {
			t.Fatal(err)
		}
	})
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// A completed restore whose destination is gone begins again under the same operation id
// with Again (the plain begin keeps replaying it, as a replica of version 6 does); while its
// destination lives, Again replays. The record begun again keeps for its own retention
// window, not its first run's, and a name another workbench took is AlreadyExists.
func TestARestoreBegunAgainAfterItsDestinationWent(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{RetentionWindow: 10 * time.Second, History: pruneAtOnce})}
	h.do(Put{Agent: "a", Workspace: "src", Path: "input/f", CreateWorkspace: true, Size: 1, Digest: digestOf([]byte("x")), Segments: inlineSegs("x")})
	snap := h.do(SnapshotMint{Agent: "a", Workspace: "src", TTLDays: 1}).Snapshot
	src, _ := h.f.View().Workspace("a", "src")
	op := hexID(91)
	begin := RestoreBegin{Agent: "a", OpID: op, Source: "src", SourceIncarnation: src.Incarnation, SnapshotID: snap.ID, Destination: "dst"}
	again := begin
	again.Again = true
	run := func(b RestoreBegin) *RestoreOp {
		t.Helper()
		if r := h.do(b); r.Err != nil || r.Replayed {
			t.Fatalf("begin %+v = %+v", b, r)
		}
		if r := h.do(RestoreCopy{Agent: "a", OpID: op, Limit: 10}); r.Err != nil {
			t.Fatal(r.Err)
		}
		fin := h.do(RestoreFinish{Agent: "a", OpID: op, Manifest: envBody(`{"restore":1}`), Identity: hexID(8),
			ContentDigestURI: uri(1), ManifestDigestURI: uri(2), TreeDigestURI: uri(3), Envelope: envBody(`{"run":1}`)})
		if fin.Err != nil {
			t.Fatal(fin.Err)
		}
		return fin.Restore
	}
	first := run(begin)
	if r := h.do(again); r.Err != nil || !r.Replayed || r.Restore.DestIncarnation != first.DestIncarnation {
		t.Fatalf("Again while the destination lives = %+v, want the replay", r)
	}
	if r := h.do(DeleteWorkspace{Agent: "a", Name: "dst"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := h.do(begin); r.Err != nil || !r.Replayed {
		t.Fatalf("the plain begin after the destination went = %+v, want the replay (version 6's answer)", r)
	}
	second := run(again)
	if second.Again != 1 || second.DestIncarnation == first.DestIncarnation || second.RetainUntilMs != h.nowMs+10_000 {
		t.Fatalf("the operation begun again: %+v", second)
	}
	if dst, err := h.f.View().Workspace("a", "dst"); err != nil || dst.Incarnation != second.DestIncarnation {
		t.Fatalf("destination after the second run: %+v %v", dst, err)
	}
	if r := h.do(again); r.Err != nil || !r.Replayed || r.Restore.DestIncarnation != second.DestIncarnation {
		t.Fatalf("Again while the second destination lives = %+v, want its replay", r)
	}
	// The first run's retention item comes due: the record begun again stays.
	for h.nowMs < first.FinishedAtMs+10_000 {
		h.do(Tick{})
	}
	if _, ok := h.f.View().Lifecycle().Restore("a", op); !ok {
		t.Fatal("the first run's retention item dropped the record begun again")
	}
	for h.nowMs < second.RetainUntilMs {
		h.do(Tick{})
	}
	if _, ok := h.f.View().Lifecycle().Restore("a", op); ok {
		t.Fatal("the record begun again outlived its own retention window")
	}
	// A name another workbench holds is not an absent destination.
	if r := h.do(DeleteWorkspace{Agent: "a", Name: "dst"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	run(begin) // the record is gone: the plain begin begins again
	if r := h.do(DeleteWorkspace{Agent: "a", Name: "dst"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	h.do(Put{Agent: "a", Workspace: "dst", Path: "input/g", CreateWorkspace: true, Size: 1, Digest: digestOf([]byte("y")), Segments: inlineSegs("y")})
	if r := h.do(again); CodeOf(r.Err) != CodeAlreadyExists {
		t.Fatalf("Again onto a workbench that replaced the destination = %+v, want AlreadyExists", r)
	}
	if err := checkRefcounts(h.f); err != nil {
		t.Fatal(err)
	}
}
