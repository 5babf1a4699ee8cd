package meta

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// hEl is one element of a path's full history in the retention model.
type hEl struct {
	version   uint64
	tombstone bool
	atMs      int64
	dropped   bool // pruned once: it never comes back
}

// retentionModel is the naive model of history retention: every path's full history,
// newest first, and the rule of retention.go applied to it by definition, not by a walk:
// kept = (newest Versions of the current life ∪ superseded less than Age ago, capped at
// MaxVersions) ∪ what holds pin, minus what was pruned before; the head stays unless it is
// a tombstone older than the window that nothing older needs.
type retentionModel struct {
	window int64
	pol    map[string]Retention // agent → policy
	hist   map[string][]hEl     // agent/path → newest first
	holds  map[string][]uint64  // agent → hold versions
}

func (m *retentionModel) keep(agent, path string, nowMs int64) []uint64 {
	h := m.hist[agent+"/"+path]
	pol := m.pol[agent]
	keep := make([]bool, len(h))
	for i := 1; i < len(h); i++ {
		life := !h[0].tombstone
		for j := 1; j <= i; j++ {
			life = life && !h[j].tombstone
		}
		byCount := life && i < pol.Versions
		byAge := h[i-1].atMs+pol.Age.Milliseconds() > nowMs
		keep[i] = i < pol.MaxVersions && (byCount || byAge)
		for _, v := range m.holds[agent] {
			if h[i].version <= v && v < h[i-1].version {
				keep[i] = true
			}
		}
	}
	if len(h) > 0 {
		older := false
		for i := 1; i < len(h); i++ {
			older = older || keep[i] && !h[i].dropped
		}
		keep[0] = !h[0].tombstone || h[0].atMs+m.window > nowMs || older
	}
	var out []uint64
	for i := range h {
		if keep[i] && !h[i].dropped {
			out = append(out, h[i].version)
		} else {
			h[i].dropped = true
		}
	}
	return out
}

// TestHistoryRetentionMatchesNaiveModel: after any sequence of writes, deletes, snapshot
// mints and retires and time steps, under a random retention per root (node default or a
// root's own policy), every path keeps exactly the elements the naive model keeps, and
// blob reference counts equal a recomputation from the kept chains.
func TestHistoryRetentionMatchesNaiveModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		genPol := func(label string) Retention {
			v := rapid.IntRange(1, 6).Draw(t, label+".versions")
			return Retention{Versions: v, Age: time.Duration(rapid.IntRange(0, 8).Draw(t, label+".age_s")) * time.Second,
				MaxVersions: rapid.IntRange(v, 8).Draw(t, label+".max")}
		}
		def := genPol("default")
		f := New(Options{RetentionWindow: 3 * time.Second, RetentionBatch: 1 << 20, History: def})
		m := &retentionModel{window: 3000, pol: map[string]Retention{"a": def, "b": def},
			hist: map[string][]hEl{}, holds: map[string][]uint64{}}
		var index uint64
		var nowMs int64 = 1_000_000
		apply := func(b Body) Result {
			index++
			return f.ApplyBody(index, Header{TimeMs: nowMs}, b)
		}
		if rapid.Bool().Draw(t, "own policy") {
			p := genPol("b")
			if r := apply(SetRetention{Agent: "b", Retention: p}); r.Err != nil || r.Retention == nil || *r.Retention != p {
				t.Fatalf("set retention: %+v", r)
			}
			m.pol["b"] = p
		}
		live := map[string]bool{}
		snaps := map[string][]uint64{} // agent → alive snapshot ids
		held := map[string]uint64{}    // agent/snapshot id → version
		paths := []string{"x", "y"}
		n := rapid.IntRange(1, 60).Draw(t, "n")
		for i := 0; i < n; i++ {
			nowMs += int64(rapid.IntRange(0, 3).Draw(t, "dt")) * 1000
			agent := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "agent")
			path := rapid.SampledFrom(paths).Draw(t, "path")
			key := agent + "/" + path
			switch op := rapid.IntRange(0, 6).Draw(t, "op"); op {
			case 0, 1: // put one non-inline blob
				blob := byte(rapid.IntRange(1, 4).Draw(t, "blob"))
				r := apply(Put{Agent: agent, Workspace: "w", Path: path, CreateWorkspace: true, Size: 100,
					Digest: Digest{blob}, Segments: []Segment{{Digest: blobDigest(blob), Size: 100}}})
				if r.Err != nil {
					t.Fatalf("put: %v", r.Err)
				}
				m.hist[key] = append([]hEl{{version: index, atMs: nowMs}}, m.hist[key]...)
				live[key] = true
			case 2: // append one blob (shares the segment list)
				if !live[key] {
					continue
				}
				v := f.View()
				ws, _ := v.Workspace(agent, "w")
				cur, _ := v.File(ws, path)
				blob := byte(rapid.IntRange(5, 8).Draw(t, "blob"))
				r := apply(Append{Agent: agent, Workspace: "w", Path: path, ExpectGeneration: cur.Generation,
					Segments: []Segment{{Digest: blobDigest(blob), Size: 10}}, AppendedBytes: 10,
					NewSize: cur.Size + 10, NewDigest: Digest{blob, 1}})
				if r.Err != nil {
					t.Fatalf("append: %v", r.Err)
				}
				m.hist[key] = append([]hEl{{version: index, atMs: nowMs}}, m.hist[key]...)
			case 3: // delete
				if !live[key] {
					continue
				}
				if r := apply(Delete{Agent: agent, Workspace: "w", Path: path}); r.Err != nil {
					t.Fatalf("delete: %v", r.Err)
				}
				m.hist[key] = append([]hEl{{version: index, atMs: nowMs, tombstone: true}}, m.hist[key]...)
				live[key] = false
			case 4: // retire the oldest snapshot (releases a hold)
				ids := snaps[agent]
				if len(ids) == 0 {
					continue
				}
				if r := apply(SnapshotRetire{Agent: agent, Workspace: "w", ID: ids[0]}); r.Err != nil {
					t.Fatalf("retire: %v", r.Err)
				}
				snaps[agent] = ids[1:]
				hs := m.holds[agent]
				for j, v := range hs {
					if v == held[fmt.Sprint(agent, ids[0])] {
						m.holds[agent] = append(hs[:j:j], hs[j+1:]...)
						break
					}
				}
			case 6: // mint a snapshot (a hold)
				if _, err := f.View().Workspace(agent, "w"); err != nil {
					continue // no workbench yet
				}
				r := apply(SnapshotMint{Agent: agent, Workspace: "w", TTLDays: 90})
				if r.Err != nil {
					t.Fatalf("mint: %v", r.Err)
				}
				snaps[agent] = append(snaps[agent], r.Snapshot.ID)
				held[fmt.Sprint(agent, r.Snapshot.ID)] = r.Snapshot.ReadVersion
				m.holds[agent] = append(m.holds[agent], r.Snapshot.ReadVersion)
			case 5:
				apply(Tick{})
			}
			if err := checkRefcounts(f); err != nil {
				t.Fatalf("after command %d: %v", i, err)
			}
			v := f.View()
			for _, ag := range []string{"a", "b"} {
				for _, p := range paths {
					want := m.keep(ag, p, v.NowMs())
					var got []uint64
					if ws, err := v.Workspace(ag, "w"); err == nil {
						if rec, ok := v.st.paths.Get(pathKey(ws.Incarnation, p)); ok {
							for _, el := range rec.Chain {
								got = append(got, el.Version)
							}
						}
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("after command %d, %s/%s keeps %v, model %v (policy %+v)", i, ag, p, got, want, m.pol[ag])
					}
				}
			}
		}
		restoredWith(t, f, Options{RetentionWindow: 3 * time.Second, RetentionBatch: 1 << 20, History: def})
	})
}

// TestLoweringARootsRetentionReprunesItsPathsAndReleasesBlobs: ten versions under the
// default retention are all readable; a lower policy for the root re-prunes it (no write
// needed) and the blobs of the dropped versions reach zero references, while another
// root keeps its history.
func TestLoweringARootsRetentionReprunesItsPathsAndReleasesBlobs(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	for n := byte(1); n <= 10; n++ {
		h.putBlob("f", n, 0)
		h.index++
		h.nowMs += 1000
		h.f.ApplyBody(h.index, Header{TimeMs: h.nowMs}, Put{Agent: "other", Workspace: "w", Path: "f", CreateWorkspace: true,
			Size: 100, Digest: Digest{n}, Segments: []Segment{{Digest: blobDigest(n), Size: 100}}})
	}
	versions := func(agent string) int {
		v := h.f.View()
		ws, err := v.Workspace(agent, "w")
		if err != nil {
			t.Fatal(err)
		}
		rows, _, err := v.History().Versions(ws, "f", 0, MaxHistoryLimit)
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	if n := versions("a"); n != 10 {
		t.Fatalf("default retention keeps %d of 10 versions", n)
	}
	r := h.do(SetRetention{Agent: "a", Retention: Retention{Versions: 3}})
	if r.Err != nil || r.Retention == nil || *r.Retention != (Retention{Versions: 3, MaxVersions: DefaultHistoryMaxVersions}) || r.RetentionDefault {
		t.Fatalf("set retention: %+v %+v", r, r.Retention)
	}
	if n := versions("a"); n != 3 {
		t.Fatalf("after lowering the root's retention it keeps %d versions, want 3", n)
	}
	if n := versions("other"); n != 10 {
		t.Fatalf("another root keeps %d versions, want 10", n)
	}
	for n := byte(1); n <= 10; n++ {
		br, _ := h.ref(n)
		want := int64(0)
		if n >= 8 {
			want = 1
		}
		if br.Count != want {
			t.Fatalf("blob %d: %d references, want %d", n, br.Count, want)
		}
	}
	if r := h.intent(0, zero(1), zero(8)); accepted(r) != 1 || r.GC.Accepted[0] != blobDigest(1) {
		t.Fatalf("intent after retention released blob 1 (and kept blob 8): %+v", r.GC)
	}
	pol, own := h.f.View().Retention("a")
	if !own || pol.Versions != 3 {
		t.Fatalf("view retention %+v own %v", pol, own)
	}
	if r := h.do(SetRetention{Agent: "a"}); r.Err != nil || !r.RetentionDefault || *r.Retention != DefaultRetention() {
		t.Fatalf("reset: %+v", r)
	}
	if _, own := h.f.View().Retention("a"); own {
		t.Fatal("the root still has its own policy after a reset")
	}
}

// TestRetentionByAgeExpiresThroughTheRetentionQueue: with Versions 1 and an Age, a
// superseded version stays readable until Age after it was superseded, then a tick (no
// write) drops it and releases its blob.
func TestRetentionByAgeExpiresThroughTheRetentionQueue(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: Retention{Versions: 1, Age: 10 * time.Second}})}
	h.putBlob("f", 1, 0)
	h.putBlob("f", 2, 0)
	superseded := h.nowMs
	if br, _ := h.ref(1); br.Count != 1 {
		t.Fatalf("blob 1 inside Age: %+v", br)
	}
	for h.nowMs < superseded+10_000 {
		if br, _ := h.ref(1); br.Count != 1 {
			t.Fatalf("blob 1 released %d ms after it was superseded", h.nowMs-superseded)
		}
		h.do(Tick{})
	}
	if br, _ := h.ref(1); br.Count != 0 {
		t.Fatalf("blob 1 past Age: %+v", br)
	}
}

func TestSetRetentionRejectsBadPolicies(t *testing.T) {
	for _, tt := range []struct {
		name  string
		r     Retention
		field string
	}{
		{"versions beyond the bound", Retention{Versions: MaxRetentionVersions + 1}, "versions"},
		{"a negative versions", Retention{Versions: -1}, "versions"},
		{"a negative age", Retention{Versions: 1, Age: -time.Second}, "age"},
		{"an age beyond the bound", Retention{Versions: 1, Age: MaxRetentionAge + time.Hour}, "age"},
		{"a cap below versions", Retention{Versions: 5, MaxVersions: 4}, "max_versions"},
		{"a cap beyond the bound", Retention{Versions: 5, MaxVersions: MaxRetentionVersions + 1}, "max_versions"},
		{"an age without versions", Retention{Age: time.Hour}, "versions"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := New(Options{})
			r := f.ApplyBody(1, Header{TimeMs: 1}, SetRetention{Agent: "a", Retention: tt.r})
			if r.Err == nil || r.Err.Code != CodeInvalidArguments || r.Err.Field != tt.field {
				t.Fatalf("got %+v, want InvalidArguments on %q", r.Err, tt.field)
			}
			if _, ok := f.View().Root("a"); ok {
				t.Fatal("a rejected policy created the root")
			}
		})
	}
}

// TestRetentionPolicySurvivesSnapshotAndRestore: a root's policy is written in snapshot
// format 3 and restores to the identical state; without one the format stays older.
func TestRetentionPolicySurvivesSnapshotAndRestore(t *testing.T) {
	// Without the change feed (FeedMaxPerRoot < 0), which needs format 3 itself.
	h := &applyHelper{t: t, f: New(Options{FeedMaxPerRoot: -1})}
	h.put("a.txt", "one")
	h.put("a.txt", "two")
	var buf bytes.Buffer
	if _, err := h.f.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if f := formatOf(t, buf.Bytes()); f != 1 {
		t.Fatalf("format %d without a policy, want 1", f)
	}
	h.do(SetRetention{Agent: "a", Retention: Retention{Versions: 7, Age: time.Hour, MaxVersions: 9}})
	for h.f.Snapshot().st.retention.Len() > 0 {
		h.do(Tick{}) // let the re-prune steps run
	}
	buf.Reset()
	if _, err := h.f.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if f := formatOf(t, buf.Bytes()); f != 3 {
		t.Fatalf("format %d with a policy, want 3", f)
	}
	g := New(Options{FeedMaxPerRoot: -1})
	if err := g.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if g.StateDigest() != h.f.StateDigest() {
		t.Fatal("restored state differs")
	}
	if pol, own := g.View().Retention("a"); !own || pol != (Retention{Versions: 7, Age: time.Hour, MaxVersions: 9}) {
		t.Fatalf("restored policy %+v %v", pol, own)
	}
}

func formatOf(t *testing.T, stream []byte) uint16 {
	t.Helper()
	var hdr snapHeader
	if err := decMode.NewDecoder(bytes.NewReader(stream)).Decode(&hdr); err != nil {
		t.Fatal(err)
	}
	return hdr.Format
}

// TestHistoryListsVersionsNewestFirstAndFileAtReadsThem: rows carry generation, ordinal,
// digest, time, producer and tombstones; paging with before is exact; FileAt returns a
// retained body and NotFound naming "generation" for a delete's version, a pruned one and
// an unknown one.
func TestHistoryListsVersionsNewestFirstAndFileAtReadsThem(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: Retention{Versions: 4}})}
	var gens []uint64
	for _, s := range []string{"v1", "v2", "v3"} {
		gens = append(gens, h.put("a.txt", s).Generation)
	}
	h.index++
	h.nowMs += 1000
	del := h.f.ApplyBody(h.index, Header{TimeMs: h.nowMs, Principal: "alice", Surface: "rest/delete"},
		Delete{Agent: "a", Workspace: "w", Path: "a.txt"})
	gens = append(gens, h.put("a.txt", "v4").Generation, h.put("a.txt", "v5").Generation)
	v := h.f.View()
	ws, _ := v.Workspace("a", "w")
	rows, more, err := v.History().Versions(ws, "a.txt", 0, 1)
	if err != nil || !more || len(rows) != 1 || rows[0].Version != gens[4] {
		t.Fatalf("first page %+v more %v err %v", rows, more, err)
	}
	if rows[0].Ordinal != 2 || rows[0].Entry.Digest != digestOf([]byte("v5")) {
		t.Fatalf("newest row %+v", rows[0])
	}
	rest, more, err := v.History().Versions(ws, "a.txt", rows[0].Version, 10)
	// Versions 4 keeps the current life (v4, v5) and, by age (0), nothing older: the
	// delete ends the count; its tombstone and v3 went.
	if err != nil || more || len(rest) != 1 || rest[0].Version != gens[3] {
		t.Fatalf("second page %+v more %v err %v", rest, more, err)
	}
	if _, err := v.History().FileAt(ws, "a.txt", gens[1]); CodeOf(err) != CodeNotFound || err.(*Error).Field != "generation" {
		t.Fatalf("pruned generation: %v", err)
	}
	fv, err := v.History().FileAt(ws, "a.txt", gens[3])
	if err != nil || fv.Entry.Digest != digestOf([]byte("v4")) || fv.Version != gens[3] {
		t.Fatalf("FileAt v4: %+v %v", fv, err)
	}
	if _, err := v.History().FileAt(ws, "a.txt", 999); CodeOf(err) != CodeNotFound {
		t.Fatalf("unknown generation: %v", err)
	}
	if _, _, err := v.History().Versions(ws, "a.txt", 0, 0); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("limit 0: %v", err)
	}
	if _, _, err := v.History().Versions(ws, "nothing.txt", 0, 1); CodeOf(err) != CodeNotFound {
		t.Fatalf("missing path: %v", err)
	}

	// With age retention the deleted life stays: the tombstone row names its producer.
	g := &applyHelper{t: t, f: New(Options{History: Retention{Versions: 1, Age: time.Hour}})}
	g.put("b.txt", "one")
	g.index++
	g.nowMs += 1000
	del = g.f.ApplyBody(g.index, Header{TimeMs: g.nowMs, Principal: "alice", Surface: "rest/delete"},
		Delete{Agent: "a", Workspace: "w", Path: "b.txt"})
	g.put("b.txt", "two")
	v = g.f.View()
	ws, _ = v.Workspace("a", "w")
	rows, _, err = v.History().Versions(ws, "b.txt", 0, 10)
	if err != nil || len(rows) != 3 || rows[1].Entry != nil || rows[1].Version != del.Generation ||
		rows[1].Producer != (Producer{Principal: "alice", Surface: "rest/delete"}) || rows[2].Entry == nil {
		t.Fatalf("rows with a tombstone %+v %v", rows, err)
	}
	if _, err := v.History().FileAt(ws, "b.txt", del.Generation); CodeOf(err) != CodeNotFound || err.(*Error).Field != "generation" {
		t.Fatalf("a delete's generation: %v", err)
	}
	old, err := v.History().FileAt(ws, "b.txt", rows[2].Version)
	if err != nil || old.Entry.Digest != digestOf([]byte("one")) {
		t.Fatalf("FileAt the deleted life's body: %+v %v", old, err)
	}
}

// BenchmarkAppendUnderHistoryRetention measures one append to a hot log whose history is
// pruned at once, and one whose chain sits at the default cap of 1,000 kept versions: the
// cost of keeping history is a copy of the chain per write (retention.go), not of its
// segment list.
func BenchmarkAppendUnderHistoryRetention(b *testing.B) {
	for _, tt := range []struct {
		name string
		pol  Retention
	}{{"prune-at-once", pruneAtOnce}, {"default-1000-kept", DefaultRetention()}} {
		b.Run(tt.name, func(b *testing.B) {
			f := New(Options{History: tt.pol})
			index, gen, size := uint64(0), uint64(0), int64(0)
			appendOne := func() {
				index++
				r := f.ApplyBody(index, Header{TimeMs: 1}, Append{Agent: "a", Workspace: "w", Path: "logs/run.log", CreateWorkspace: true,
					ExpectGeneration: gen, Segments: []Segment{{Digest: Digest{byte(index), byte(index >> 8), byte(index >> 16)}, Size: 10}},
					AppendedBytes: 10, NewSize: size + 10})
				if r.Err != nil {
					b.Fatal(r.Err)
				}
				gen, size = r.Generation, size+10
			}
			for range DefaultHistoryMaxVersions {
				appendOne()
			}
			b.ReportAllocs()
			for b.Loop() {
				appendOne()
			}
		})
	}
}
