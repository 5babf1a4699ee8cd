package meta

import (
	"bytes"
	"sync"
	"testing"
)

// TestViewsBetweenAppliesAreSharedAndNeverSeeLaterOnes checks FSM.View's promise: calls
// with no apply or restore between them return one View of the live state; the first call
// after an apply (failed or not) or a restore returns a new one at the new version, and a
// View taken before keeps reading the state it was taken at while applies go on beside
// concurrent readers (run with -race).
func TestViewsBetweenAppliesAreSharedAndNeverSeeLaterOnes(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	if r := h.put("input/f", "one"); r.Err != nil {
		t.Fatal(r.Err)
	}
	v1 := h.f.View()
	if v2 := h.f.View(); v2 != v1 {
		t.Fatal("two views with no apply between them are two copies of the state")
	}
	if r := h.put("input/f", "two"); r.Err != nil {
		t.Fatal(r.Err)
	}
	v3 := h.f.View()
	if v3 == v1 || v3.Version() != v1.Version()+1 {
		t.Fatalf("view after an apply: same view %v, version %d after %d", v3 == v1, v3.Version(), v1.Version())
	}
	read := func(v *View) string {
		e := v.mustFile(t, "w", "input/f")
		return string(e.Segments[0].Inline)
	}
	if got := read(v1); got != "one" {
		t.Fatalf("the view taken before the apply reads %q, want %q", got, "one")
	}
	if got := read(v3); got != "two" {
		t.Fatalf("the view taken after the apply reads %q, want %q", got, "two")
	}
	// A command that fails still moves the version: the next view is a new one.
	if r := h.do(Delete{Agent: "a", Workspace: "w", Path: "input/missing"}); r.Err == nil {
		t.Fatal("deleting a missing file succeeded")
	}
	if v4 := h.f.View(); v4 == v3 || v4.Version() != v3.Version()+1 {
		t.Fatalf("view after a failed apply: same view %v, version %d", v4 == v3, v4.Version())
	}
	// Restore replaces the state, and with it the shared view.
	var snap bytes.Buffer
	if _, err := h.f.Snapshot().WriteTo(&snap); err != nil {
		t.Fatal(err)
	}
	before := h.f.View()
	if err := h.f.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if after := h.f.View(); after == before {
		t.Fatal("the view after a restore is the one from before it")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				v := h.f.View()
				ws, err := v.Workspace("a", "w")
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := v.File(ws, "input/f"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 200 {
		if r := h.put("input/g", string(rune('a'+i%26))); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	wg.Wait()
}
