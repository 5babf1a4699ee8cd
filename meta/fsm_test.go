package meta

import (
	"strings"
	"testing"
	"time"
)

type applyHelper struct {
	t     *testing.T
	f     *FSM
	index uint64
	nowMs int64
}

func (h *applyHelper) do(b Body) Result {
	h.t.Helper()
	h.index++
	h.nowMs += 1000
	data, err := EncodeCommand(Header{TimeMs: h.nowMs}, b)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.f.Apply(h.index, data)
}

func (h *applyHelper) put(path string, data string) Result {
	h.t.Helper()
	return h.do(Put{Agent: "a", Workspace: "w", Path: path, CreateWorkspace: true, Size: int64(len(data)),
		Digest: digestOf([]byte(data)), Segments: inlineSegs(data)})
}

func inlineSegs(data string) []Segment {
	if data == "" {
		return nil
	}
	return []Segment{{Digest: digestOf([]byte(data)), Size: int64(len(data)), Inline: []byte(data)}}
}

func TestListingOrdersNamesComponentWiseAndPagesExactly(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	for _, p := range []string{"a/b", "a-b", "a.b", "a/c/d", "b", "a0"} {
		if r := h.put(p, "x"); r.Err != nil {
			t.Fatalf("put %s: %v", p, r.Err)
		}
	}
	v := h.f.View()
	ws, err := v.Workspace("a", "w")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	after := ""
	for pages := 0; ; pages++ {
		ents, more, err := v.List(ws, "", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			names = append(names, e.Name+":"+string(e.Kind))
		}
		if !more {
			break
		}
		after = ents[len(ents)-1].Name
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
	}
	want := "a:directory,a-b:file,a.b:file,a0:file,b:file"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("listing %s, want %s", got, want)
	}
	st, err := v.Stat(ws, "a")
	if err != nil || st.Kind != KindDirectory || st.Dir.Files != 2 || st.Dir.Children != 2 {
		t.Fatalf("stat a: %+v %v", st, err)
	}
	if _, _, err := v.List(ws, "a/b", "", 10); CodeOf(err) != CodeNotDirectory {
		t.Fatalf("listing a file: %v", err)
	}
	if _, _, err := v.List(ws, "nope", "", 10); CodeOf(err) != CodeNotFound {
		t.Fatalf("listing a missing directory: %v", err)
	}
}

func TestFileAndDirectoryNeverShareAPath(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	h.put("x/y", "1")
	if r := h.put("x/y/z", "2"); r.Err == nil || r.Err.Code != CodeNotDirectory || r.Err.Path != "x/y" {
		t.Fatalf("file below a file: %+v", r.Err)
	}
	if r := h.put("x", "3"); r.Err == nil || r.Err.Code != CodeAlreadyExists || r.Err.Kind != "directory" {
		t.Fatalf("file over a directory: %+v", r.Err)
	}
	if r := h.do(Delete{Agent: "a", Workspace: "w", Path: "x"}); r.Err == nil || r.Err.Code != CodeNotArtifact {
		t.Fatalf("delete of a directory: %+v", r.Err)
	}
	if r := h.do(Delete{Agent: "a", Workspace: "w", Path: "x/y"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := h.put("x", "3"); r.Err != nil {
		t.Fatalf("file where the directory emptied: %v", r.Err)
	}
}

func TestGenerationsNeverRepeatAfterDeleteAndRecreate(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	g1 := h.put("f", "1").Generation
	h.do(Delete{Agent: "a", Workspace: "w", Path: "f"})
	g2 := h.put("f", "1").Generation
	if g2 <= g1 {
		t.Fatalf("generation %d after %d", g2, g1)
	}
	if r := h.do(Put{Agent: "a", Workspace: "w", Path: "f", Cond: CondIfGeneration, IfGeneration: g1, Size: 0}); r.Err == nil || r.Err.Code != CodeConflict || r.Err.CurrentGeneration != g2 {
		t.Fatalf("stale generation accepted: %+v", r)
	}
}

func TestFailedCommandsHalfApplyNothing(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	// A replace-only put with implicit create on a missing workbench must not create it.
	r := h.do(Put{Agent: "a", Workspace: "w", Path: "f", CreateWorkspace: true, Cond: CondReplaceOnly})
	if r.Err == nil || r.Err.Code != CodeNotFound {
		t.Fatalf("%+v", r)
	}
	if _, err := h.f.View().Workspace("a", "w"); err == nil {
		t.Fatal("a failed put created the workbench")
	}
	g := New(Options{})
	g.ApplyBody(h.index, Header{TimeMs: h.nowMs}, Tick{})
	if h.f.StateDigest() != g.StateDigest() {
		t.Fatal("a failed command changed state")
	}
}

func TestDedupeReplaysAndRejectsReuse(t *testing.T) {
	f := New(Options{DedupeMaxPerRoot: 2})
	put := func(index uint64, id string, hash byte, path string) Result {
		return f.ApplyBody(index, Header{TimeMs: int64(index), RequestID: id, RequestHash: Digest{hash}},
			Put{Agent: "a", Workspace: "w", Path: path, CreateWorkspace: true})
	}
	first := put(1, "k1", 1, "f")
	again := put(2, "k1", 1, "f")
	if !again.Replayed || again.Generation != first.Generation || again.Version != first.Version {
		t.Fatalf("replay %+v of %+v", again, first)
	}
	if r := put(3, "k1", 2, "f"); r.Err == nil || r.Err.Field != "idempotency_key" {
		t.Fatalf("reuse with another request: %+v", r)
	}
	put(4, "k2", 1, "g")
	put(5, "k3", 1, "h") // evicts k1 (bound 2 per root)
	if r := put(6, "k1", 1, "f"); r.Replayed {
		t.Fatalf("evicted record still replayed")
	}
}

func TestCommandTimeNeverRunsBackwards(t *testing.T) {
	f := New(Options{})
	f.ApplyBody(1, Header{TimeMs: 5000}, Tick{})
	f.ApplyBody(2, Header{TimeMs: 1000}, Tick{})
	if got := f.View().NowMs(); got != 5000 {
		t.Fatalf("command time %d after a leader with a slow clock", got)
	}
}

func TestAppendMergesTinyInlineSegments(t *testing.T) {
	f := New(Options{})
	gen := uint64(0)
	size := int64(0)
	for i := 1; i <= 10; i++ {
		r := f.ApplyBody(uint64(i), Header{TimeMs: int64(i)}, Append{Agent: "a", Workspace: "w", Path: "log", CreateWorkspace: true,
			ExpectGeneration: gen, Segments: inlineSegs("0123456789"), AppendedBytes: 10, NewSize: size + 10, InlineMaxBytes: 4096})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		gen, size = r.Generation, r.Size
	}
	v := f.View()
	ws, _ := v.Workspace("a", "w")
	e, err := v.File(ws, "log")
	if err != nil || len(e.Segments) != 1 || e.Size != 100 || string(e.Segments[0].Inline) != strings.Repeat("0123456789", 10) {
		t.Fatalf("entry %+v %v", e, err)
	}
}

func TestRetentionDropsTombstonesAfterTheWindow(t *testing.T) {
	f := New(Options{RetentionWindow: time.Second, History: pruneAtOnce})
	f.ApplyBody(1, Header{TimeMs: 1}, Put{Agent: "a", Workspace: "w", Path: "f", CreateWorkspace: true})
	f.ApplyBody(2, Header{TimeMs: 2}, Delete{Agent: "a", Workspace: "w", Path: "f"})
	if f.Snapshot().st.paths.Len() != 1 {
		t.Fatal("tombstone dropped before the window")
	}
	f.ApplyBody(3, Header{TimeMs: 2000}, Tick{})
	if n := f.Snapshot().st.paths.Len(); n != 0 {
		t.Fatalf("%d path records after the window", n)
	}
}
