package meta

import "testing"

// TestUnassignedRootsAreNotOwned: in cluster mode a shard answers NotOwner for every
// command of a root it does not hold, creates roots only by AssignRoot, and then serves
// them like the embedded node does.
func TestUnassignedRootsAreNotOwned(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{RequireRootAssignment: true})}
	for _, b := range []Body{CreateRoot{Agent: "a"}, CreateWorkspace{Agent: "a", Name: "w"},
		Put{Agent: "a", Workspace: "w", Path: "x", CreateWorkspace: true}, SnapshotMint{Agent: "a", Workspace: "w", TTLDays: 1}} {
		if r := h.do(b); CodeOf(r.Err) != CodeNotOwner {
			t.Fatalf("%T before assignment: %v", b, r.Err)
		}
	}
	if h.f.View().Shard().HoldsRoot("a") {
		t.Fatal("a failed command created the root")
	}
	r := h.do(AssignRoot{Agent: "a"})
	if r.Err != nil || !r.Created || r.RootUID == "" {
		t.Fatalf("assign: %+v", r)
	}
	if again := h.do(AssignRoot{Agent: "a"}); again.Err != nil || again.Created || again.RootUID != r.RootUID {
		t.Fatalf("assign again: %+v", again)
	}
	if r := h.put("input/x", "data"); r.Err != nil {
		t.Fatalf("put after assignment: %v", r.Err)
	}
	if r := h.do(AssignRoot{Agent: "bad agent"}); CodeOf(r.Err) != CodeInvalidArguments {
		t.Fatalf("bad agent: %v", r.Err)
	}
	// The embedded default needs no assignment.
	e := &applyHelper{t: t, f: New(Options{})}
	if r := e.put("input/x", "data"); r.Err != nil {
		t.Fatal(r.Err)
	}
}
