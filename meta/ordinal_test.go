package meta

import "testing"

// The Ordinal of a path counts its bodies within one life and restarts at 1 after a
// delete, while generations keep increasing (OpenWOP host.workspace version numbering).
func TestOrdinalCountsBodiesAndRestartsAfterADelete(t *testing.T) {
	f, apply, put := pathWriter(t)
	var gens []uint64
	want := []uint64{1, 2}
	for i, body := range []string{"one", "two"} {
		res := put(body)
		if res.Ordinal != want[i] {
			t.Fatalf("put %d: ordinal %d, want %d", i+1, res.Ordinal, want[i])
		}
		gens = append(gens, res.Generation)
	}
	del := apply(Delete{Agent: "a", Workspace: "w", Path: "p.md"})
	if del.Ordinal != 3 {
		t.Fatalf("delete: ordinal %d, want 3 (the tombstone counts on)", del.Ordinal)
	}
	again := put("three")
	if again.Ordinal != 1 {
		t.Fatalf("put after delete: ordinal %d, want 1", again.Ordinal)
	}
	if again.Generation <= gens[1] {
		t.Fatalf("generation %d after delete did not grow past %d", again.Generation, gens[1])
	}
	app := apply(Append{Agent: "a", Workspace: "w", Path: "p.md", ExpectGeneration: again.Generation,
		AppendedBytes: 1, NewSize: 6, NewDigest: digestOf([]byte("three!")),
		Segments: []Segment{{Digest: digestOf([]byte("!")), Size: 1, Inline: []byte("!")}}})
	if app.Ordinal != 2 {
		t.Fatalf("append: ordinal %d, want 2", app.Ordinal)
	}
	v := f.View()
	ws, err := v.Workspace("a", "w")
	if err != nil {
		t.Fatal(err)
	}
	fv, err := v.FileVersion(ws, "p.md")
	if err != nil {
		t.Fatal(err)
	}
	if fv.Ordinal != 2 || fv.Entry == nil || fv.Entry.Generation != app.Generation || fv.Version != app.Generation {
		t.Fatalf("FileVersion = %+v, want ordinal 2 at generation %d", fv, app.Generation)
	}
	apply(Delete{Agent: "a", Workspace: "w", Path: "p.md"})
	if _, err := f.View().FileVersion(ws, "p.md"); CodeOf(err) != CodeNotFound {
		t.Fatalf("FileVersion of a deleted path: %v, want NotFound", err)
	}
}
