package meta

import (
	"fmt"
	"testing"
	"time"
)

// TestAnAggregateFormsAtMostMaxAggregateGroups: grouping into exactly MaxAggregateGroups
// groups is answered; one more group is ResourceExhausted on group_by, whatever the limit
// of groups returned, so an aggregate's memory is bounded before it runs.
func TestAnAggregateFormsAtMostMaxAggregateGroups(t *testing.T) {
	x := newQFix(t)
	for i := range MaxAggregateGroups {
		x.put("w", fmt.Sprintf("f%05d", i), "", nil)
	}
	q := AggregateQuery{Scope: Scope{Agent: "a"}, Measures: []Measure{{Name: "n", Op: MeasureCount}}, GroupBy: []string{ArtifactName}, Limit: 1}
	res, err := x.f.View().Queries().Aggregate(q)
	if err != nil || res.TotalGroups != MaxAggregateGroups || len(res.Groups) != 1 {
		t.Fatalf("%d groups: %v, total %d, %d returned", MaxAggregateGroups, err, res.TotalGroups, len(res.Groups))
	}
	x.put("w", "one-more", "", nil)
	for _, mode := range []planMode{planScan, planIndex} {
		_, err = x.f.View().Queries().aggregate(q, mode)
		if err == nil || err.Code != CodeResourceExhausted || err.Field != "group_by" {
			t.Fatalf("%s: %d groups: %v, want ResourceExhausted on group_by", planName(mode), MaxAggregateGroups+1, err)
		}
	}
	q.GroupBy = []string{ArtifactSection} // one group: the bound is on groups, not files
	if res, err := x.f.View().Queries().Aggregate(q); err != nil || res.TotalGroups != 1 {
		t.Fatalf("grouped by section: %v %v", res, err)
	}
}

// TestSnapshotMintHonoursMaxHeldAcrossARestore: a mint with MaxHeld counts the
// workbench's snapshots that hold history (not retired, not reaped; other workbenches
// and older incarnations apart), also on a replica restored from a Raft snapshot, where
// that count is rebuilt; MaxHeld 0 (every older command) means no cap.
func TestSnapshotMintHonoursMaxHeldAcrossARestore(t *testing.T) {
	x := newQFix(t)
	x.put("w", "f", "x", nil)
	x.put("other", "f", "x", nil)
	mint := func(f *FSM, ws string, maxHeld int) Result {
		x.index++
		x.nowMs += 1000
		return f.ApplyBody(x.index, Header{TimeMs: x.nowMs}, SnapshotMint{Agent: "a", Workspace: ws, TTLDays: 1, MaxHeld: maxHeld})
	}
	first := mint(x.f, "w", 2).Snapshot.ID
	mint(x.f, "w", 2)
	if r := mint(x.f, "w", 2); r.Err == nil || r.Err.Code != CodeResourceExhausted {
		t.Fatalf("a third mint with MaxHeld 2: %+v", r.Err)
	}
	if r := mint(x.f, "other", 2); r.Err != nil {
		t.Fatalf("another workbench: %v", r.Err)
	}
	g := New(Options{RetentionWindow: 1000 * time.Hour, History: Retention{Versions: 1, Age: 1000 * time.Hour, MaxVersions: MaxRetentionVersions}})
	if err := g.Restore(snapshotBytes(t, x.f)); err != nil {
		t.Fatal(err)
	}
	if g.StateDigest() != x.f.StateDigest() {
		t.Fatal("the restored replica differs")
	}
	for name, f := range map[string]*FSM{"the replica": x.f, "the restored replica": g} {
		if r := mint(f, "w", 2); r.Err == nil || r.Err.Code != CodeResourceExhausted {
			t.Fatalf("%s: a mint past the cap: %+v", name, r.Err)
		}
		if r := mint(f, "w", 0); r.Err != nil {
			t.Fatalf("%s: MaxHeld 0: %v", name, r.Err)
		}
	}
	for _, f := range []*FSM{x.f, g} {
		x.index++
		x.nowMs += 1000
		if r := f.ApplyBody(x.index, Header{TimeMs: x.nowMs}, SnapshotRetire{Agent: "a", Workspace: "w", ID: first}); r.Err != nil {
			t.Fatal(r.Err)
		}
		if r := mint(f, "w", 3); r.Err != nil { // 2 held (one retired, one minted uncapped)
			t.Fatalf("after a retire: %v", r.Err)
		}
	}
}
