package meta

import "testing"

// History().Life lists the current life of a path newest first, never an element of the
// life a delete ended, and honours its limit.
func TestFileVersionsListsTheCurrentLifeNewestFirst(t *testing.T) {
	f, apply, put := pathWriter(t)
	put("old one")
	put("old two")
	del := apply(Delete{Agent: "a", Workspace: "w", Path: "p.md"})
	put("new one")
	last := put("new two")
	v := f.View()
	ws, err := v.Workspace("a", "w")
	if err != nil {
		t.Fatal(err)
	}
	all, err := v.History().Life(ws, "p.md", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 || all[0].Ordinal != 2 || all[0].Version != last.Generation {
		t.Fatalf("History().Life = %+v, want the live element (ordinal 2, version %d) first", all, last.Generation)
	}
	for i, fv := range all {
		if fv.Entry == nil || fv.Version <= del.Generation || fv.Ordinal != uint64(2-i) {
			t.Fatalf("element %d = %+v: want a body of the current life with ordinal %d", i, fv, 2-i)
		}
	}
	if one, _ := v.History().Life(ws, "p.md", 1); len(one) != 1 || one[0].Version != last.Generation {
		t.Fatalf("limit 1: %+v", one)
	}
	apply(Delete{Agent: "a", Workspace: "w", Path: "p.md"})
	if gone, err := f.View().History().Life(ws, "p.md", 0); err != nil || len(gone) != 0 {
		t.Fatalf("History().Life of a deleted path = %+v, %v; want none", gone, err)
	}
	if _, err := v.History().Life(ws, "../x", 0); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("a bad path: %v, want InvalidArguments", err)
	}
}

// pathWriter returns an FSM and helpers that apply a command (failing the test on an
// error) and put body at a/w/p.md, each at the next index with that index as its time.
func pathWriter(t *testing.T) (*FSM, func(Body) Result, func(string) Result) {
	f := New(Options{})
	idx := uint64(0)
	apply := func(b Body) Result {
		t.Helper()
		idx++
		res := f.ApplyBody(idx, Header{TimeMs: int64(idx)}, b)
		if res.Err != nil {
			t.Fatalf("command %d: %v", idx, res.Err)
		}
		return res
	}
	put := func(body string) Result {
		return apply(Put{Agent: "a", Workspace: "w", Path: "p.md", CreateWorkspace: true,
			Size: int64(len(body)), Digest: digestOf([]byte(body)),
			Segments: []Segment{{Digest: digestOf([]byte(body)), Size: int64(len(body)), Inline: []byte(body)}}})
	}
	return f, apply, put
}
