package meta

import (
	"fmt"
	"slices"
	"testing"
)

// History().List lists what List lists and also the deleted files and the directories
// that hold only deleted files; a deleted file whose name became a directory is both, the
// file first, never split across pages; an older view sees only what it covers.
func TestListHistoryListsDeletedPathsBesideLiveOnes(t *testing.T) {
	f := New(Options{})
	idx := uint64(0)
	apply := func(b Body) {
		t.Helper()
		idx++
		if res := f.ApplyBody(idx, Header{TimeMs: int64(idx)}, b); res.Err != nil {
			t.Fatalf("command %d: %v", idx, res.Err)
		}
	}
	put := func(path string) {
		apply(Put{Agent: "a", Workspace: "w", Path: path, CreateWorkspace: true, Size: 1, Digest: digestOf([]byte("x")),
			Segments: []Segment{{Digest: digestOf([]byte("x")), Size: 1, Inline: []byte("x")}}})
	}
	del := func(path string) { apply(Delete{Agent: "a", Workspace: "w", Path: path}) }
	put("d/a")
	put("d/gone/x")
	del("d/gone/x")
	put("d/b")
	del("d/b")
	before := idx
	put("d/b/c")
	put("d/z")
	v := f.View()
	ws, err := v.Workspace("a", "w")
	if err != nil {
		t.Fatal(err)
	}
	render := func(es []DirEntry) (out []string) {
		for _, e := range es {
			out = append(out, fmt.Sprintf("%s:%v:%v", e.Name, e.Kind, e.Entry != nil))
		}
		return out
	}
	file, dir := fmt.Sprint(KindFile), fmt.Sprint(KindDirectory)
	want := []string{"a:" + file + ":true", "b:" + file + ":false", "b:" + dir + ":false", "gone:" + dir + ":false", "z:" + file + ":true"}
	all, more, err := v.History().List(ws, "d", "", 100)
	if err != nil || more || !slices.Equal(render(all), want) {
		t.Fatalf("History().List(d) = %q, more %v, %v; want %q", render(all), more, err, want)
	}
	// Pages of two names: b's file and directory stay together.
	var paged []DirEntry
	after := ""
	for range 10 {
		page, more, err := v.History().List(ws, "d", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page...)
		if !more {
			break
		}
		after = page[len(page)-1].Name
	}
	if !slices.Equal(render(paged), want) {
		t.Fatalf("History().List(d) in pages of 2 = %q, want %q", render(paged), want)
	}
	if got, _, err := v.History().List(ws, "d/gone", "", 10); err != nil || !slices.Equal(render(got), []string{"x:" + file + ":false"}) {
		t.Fatalf("History().List(d/gone) = %q, %v", render(got), err)
	}
	if got, _, err := v.History().List(ws, "nowhere", "", 10); err != nil || len(got) != 0 {
		t.Fatalf("History().List of a directory that never was = %q, %v; want nothing", render(got), err)
	}
	old, err := v.At(before)
	if err != nil {
		t.Fatal(err)
	}
	wantOld := []string{"a:" + file + ":true", "b:" + file + ":false", "gone:" + dir + ":false"}
	if got, _, err := old.History().List(ws, "d", "", 100); err != nil || !slices.Equal(render(got), wantOld) {
		t.Fatalf("History().List(d) at version %d = %q, %v; want %q", before, render(got), err, wantOld)
	}
	if _, _, err := v.History().List(ws, "../x", "", 1); CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("a bad dir: %v, want InvalidArguments", err)
	}
}
