package meta

import (
	"slices"
	"testing"
)

// changeSetFixture is a workbench w of root a with files written through the FSM, and
// what a change set needs to name them. Every command it applies also goes to twin, so a
// test can compare x's state after a refused command with twin's after a Tick.
type changeSetFixture struct {
	*applyHelper
	twin *FSM
	inc  uint64
}

func newChangeSetFixture(t *testing.T) *changeSetFixture {
	x := &changeSetFixture{applyHelper: &applyHelper{t: t, f: New(Options{})}, twin: New(Options{})}
	x.put("keep", "k")
	ws, err := x.f.View().Workspace("a", "w")
	if err != nil {
		t.Fatal(err)
	}
	x.inc = ws.Incarnation
	return x
}

// do applies b to the fixture and its twin.
func (x *changeSetFixture) do(b Body) Result {
	x.t.Helper()
	res := x.applyHelper.do(b)
	data, err := EncodeCommand(Header{TimeMs: x.nowMs}, b)
	if err != nil {
		x.t.Fatal(err)
	}
	x.twin.Apply(x.index, data)
	return res
}

func (x *changeSetFixture) put(path, data string) Result {
	x.t.Helper()
	return x.do(Put{Agent: "a", Workspace: "w", Path: path, CreateWorkspace: true, Size: int64(len(data)),
		Digest: digestOf([]byte(data)), Segments: inlineSegs(data)})
}

// putBlob writes a non-inline body: its segment counts as a blob reference.
func (x *changeSetFixture) putBlob(path, data string) Result {
	x.t.Helper()
	d := digestOf([]byte(data))
	r := x.do(Put{Agent: "a", Workspace: "w", Path: path, Size: int64(len(data)), Digest: d,
		Segments: []Segment{{Digest: d, Size: int64(len(data))}}})
	if r.Err != nil {
		x.t.Fatalf("put %s: %v", path, r.Err)
	}
	return r
}

func (x *changeSetFixture) set(changes ...PathChange) ChangeSet {
	return ChangeSet{Agent: "a", Workspace: "w", Incarnation: x.inc, SourceWorkspace: "w", SourceIncarnation: x.inc, Changes: changes}
}

func (x *changeSetFixture) live(path string) *Entry {
	ws, _ := x.f.View().Workspace("a", "w")
	e, err := x.f.View().File(ws, path)
	if err != nil {
		return nil
	}
	return e
}

func (x *changeSetFixture) refs(data string) int64 {
	root, _ := x.f.st.roots.Get("a")
	br, _ := x.f.st.blobs.Get(blobKey(root.UID, digestOf([]byte(data))))
	return br.Count
}

// A change set sets paths to retained bodies (the same digest and segments, one more
// blob reference each) and deletes others, in one command: every changed path gets a new
// version at the command's version with the command's producer, and history keeps what
// it replaced.
func TestChangeSetSetsRetainedBodiesAndDeletesAtOnce(t *testing.T) {
	x := newChangeSetFixture(t)
	v1 := x.putBlob("doc/a", "first body of a")
	x.putBlob("doc/a", "second body of a")
	gone := x.put("doc/new", "made after the point")
	cur := x.live("doc/a")
	x.index++
	x.nowMs += 1000
	res := x.f.ApplyBody(x.index, Header{TimeMs: x.nowMs, Principal: "p1", Surface: "rest/rewind"}, x.set(
		PathChange{Path: "doc/a", ExpectGeneration: cur.Generation, SourcePath: "doc/a", SourceGeneration: v1.Generation},
		PathChange{Path: "doc/new", ExpectGeneration: gone.Generation}))
	if res.Err != nil {
		t.Fatalf("change set: %v", res.Err)
	}
	a := x.live("doc/a")
	if a == nil || a.Digest != digestOf([]byte("first body of a")) || a.Generation != res.Version || a.Generation == v1.Generation {
		t.Fatalf("doc/a after the change set = %+v, want the first body at generation %d", a, res.Version)
	}
	if a.Producer != (Producer{Principal: "p1", Surface: "rest/rewind"}) {
		t.Fatalf("doc/a's producer = %+v", a.Producer)
	}
	if x.live("doc/new") != nil {
		t.Fatal("doc/new is still live")
	}
	if got := x.refs("first body of a"); got != 2 {
		t.Fatalf("the first body has %d references, want 2 (its retained version and the new one)", got)
	}
	ws, _ := x.f.View().Workspace("a", "w")
	hist, _, err := x.f.View().History().Versions(ws, "doc/a", 0, 10)
	if err != nil || len(hist) != 3 {
		t.Fatalf("history of doc/a = %d versions, %v; want 3 (both writes and the rewind)", len(hist), err)
	}
	evs, _, err := x.f.View().Feed().Events("a", FeedPosition{}, EventFilter{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		if e.Generation >= res.Version && e.Path != "" {
			kinds = append(kinds, string(e.Kind)+" "+e.Path)
		}
	}
	if want := []string{string(EventFileDelete) + " doc/new", string(EventFilePut) + " doc/a"}; !slices.Equal(kinds, want) {
		t.Fatalf("feed after the change set = %q, want %q", kinds, want)
	}
}

// One failing guard refuses the whole change set: the state is what a Tick would have
// left, and the answer lists every path that failed.
func TestChangeSetIsAllOrNothingWhenOneGuardFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bad   func(x *changeSetFixture, c *ChangeSet)
		code  Code
		paths []string
	}{
		{"a path changed since the plan", func(x *changeSetFixture, c *ChangeSet) { x.put("doc/b", "a concurrent write") }, CodeConflict, []string{"doc/b"}},
		{"a path that must be absent exists", func(x *changeSetFixture, c *ChangeSet) { c.Changes[0].ExpectGeneration = 0 }, CodeConflict, []string{"doc/a"}},
		{"a source version is not retained", func(x *changeSetFixture, c *ChangeSet) { c.Changes[0].SourceGeneration = 999_999 }, CodeNotFound, []string{"doc/a"}},
		{"the scope changed since the plan", func(x *changeSetFixture, c *ChangeSet) {
			c.Unchanged = &ScopeGuard{Dir: "doc", Since: x.index}
			x.put("doc/other", "new in the scope")
		}, CodeConflict, []string{"doc/other"}},
		{"the workbench was created again", func(x *changeSetFixture, c *ChangeSet) { c.Incarnation++ }, CodeNotFound, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newChangeSetFixture(t)
			v1 := x.putBlob("doc/a", "old a")
			x.putBlob("doc/a", "new a")
			b := x.put("doc/b", "b")
			c := x.set(
				PathChange{Path: "doc/a", ExpectGeneration: x.live("doc/a").Generation, SourcePath: "doc/a", SourceGeneration: v1.Generation},
				PathChange{Path: "doc/b", ExpectGeneration: b.Generation})
			tc.bad(x, &c)
			res := x.applyHelper.do(c) // the twin applies a Tick instead
			if res.Err == nil || res.Err.Code != tc.code || !slices.Equal(res.Err.Paths, tc.paths) {
				t.Fatalf("change set = %+v, want %s listing %q", res.Err, tc.code, tc.paths)
			}
			x.twin.ApplyBody(x.index, Header{TimeMs: x.nowMs}, Tick{})
			if x.f.StateDigest() != x.twin.StateDigest() {
				t.Fatal("a refused change set changed the state")
			}
			if x.live("doc/a").Digest != digestOf([]byte("new a")) || x.live("doc/b") == nil {
				t.Fatal("a refused change set changed a path")
			}
		})
	}
}

// A change set replayed with the same request id answers its first result and applies
// nothing again; the same id with another change set is InvalidArguments.
func TestChangeSetReplaysByRequestID(t *testing.T) {
	x := newChangeSetFixture(t)
	v1 := x.put("f", "one")
	v2 := x.put("f", "two")
	c := x.set(PathChange{Path: "f", ExpectGeneration: v2.Generation, SourcePath: "f", SourceGeneration: v1.Generation})
	h := Header{TimeMs: x.nowMs + 1000, RequestID: "rewind-1", RequestHash: Digest{1}, Principal: "p"}
	first := x.f.ApplyBody(x.index+1, h, c)
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	again := x.f.ApplyBody(x.index+2, h, c)
	if !again.Replayed || again.Generation != first.Generation {
		t.Fatalf("replay = %+v, want the first answer %+v", again, first)
	}
	ws, _ := x.f.View().Workspace("a", "w")
	if hist, _, _ := x.f.View().History().Versions(ws, "f", 0, 10); len(hist) != 3 {
		t.Fatalf("f has %d versions after a replay, want 3", len(hist))
	}
	h.RequestHash = Digest{2}
	if r := x.f.ApplyBody(x.index+3, h, c); r.Err == nil || r.Err.Field != "idempotency_key" {
		t.Fatalf("the same id for another request = %+v, want InvalidArguments on idempotency_key", r)
	}
}

// Deletes apply before sets, and the shape rule holds for the tree the change set leaves:
// a file may replace a directory whose files the same change set deletes, not one that
// keeps a file.
func TestChangeSetChecksTheShapeOfTheTreeItLeaves(t *testing.T) {
	x := newChangeSetFixture(t)
	old := x.put("d", "d was a file")
	x.do(Delete{Agent: "a", Workspace: "w", Path: "d"})
	in := x.put("d/in", "now d is a directory")
	ok := x.set(
		PathChange{Path: "d", SourcePath: "d", SourceGeneration: old.Generation},
		PathChange{Path: "d/in", ExpectGeneration: in.Generation})
	bad := ok
	bad.Changes = ok.Changes[:1]
	if r := x.do(bad); r.Err == nil || r.Err.Code != CodeAlreadyExists || r.Err.Kind != "directory" {
		t.Fatalf("a file over a directory that keeps a file = %+v, want AlreadyExists (directory)", r.Err)
	}
	if r := x.do(ok); r.Err != nil {
		t.Fatalf("a file over a directory the change set empties: %v", r.Err)
	}
	if e := x.live("d"); e == nil || e.Digest != digestOf([]byte("d was a file")) {
		t.Fatalf("d = %+v", e)
	}
}

// Bad change sets are InvalidArguments naming the field, before anything is read.
func TestChangeSetRefusesBadInput(t *testing.T) {
	x := newChangeSetFixture(t)
	many := make([]PathChange, MaxChangeSetChanges+1)
	for _, tc := range []struct {
		name  string
		c     ChangeSet
		field string
	}{
		{"no changes", x.set(), "changes"},
		{"too many changes", x.set(many...), "changes"},
		{"paths out of order", x.set(PathChange{Path: "b", ExpectGeneration: 1}, PathChange{Path: "a", ExpectGeneration: 1}), "changes"},
		{"a repeated path", x.set(PathChange{Path: "a", ExpectGeneration: 1}, PathChange{Path: "a", ExpectGeneration: 1}), "changes"},
		{"a delete of nothing", x.set(PathChange{Path: "a"}), "changes"},
		{"a manifest", x.set(PathChange{Path: RunManifestPath, ExpectGeneration: 1}), "changes"},
		{"a bad path", x.set(PathChange{Path: "../x", ExpectGeneration: 1}), "changes"},
	} {
		if r := x.do(tc.c); r.Err == nil || r.Err.Code != CodeInvalidArguments || r.Err.Field != tc.field {
			t.Errorf("%s: %+v, want InvalidArguments on %s", tc.name, r.Err, tc.field)
		}
	}
}
