package meta

import (
	"reflect"
	"testing"
)

// Put.MaxWorkbenchFiles caps a workbench's live files in the command that writes: with a
// cap of 3, the fourth create is refused whole (ResourceExhausted naming
// files_per_workbench, the cap, the count and the one file asked for), whatever its
// condition; replacing a live file at the cap is never refused, nor is a create once a
// delete made room, a create in a workbench the put creates, a create in another
// workbench, or a create without the cap; a negative cap is InvalidArguments; a replay of
// a create that went through answers its first answer even at the cap.
func TestAPutUnderAFilesCapRefusesTheCreateBeyondItWhole(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{})}
	capped := func(path, data string, limit int64) Put {
		return Put{Agent: "a", Workspace: "w", Path: path, CreateWorkspace: true, Size: int64(len(data)),
			Digest: digestOf([]byte(data)), Segments: inlineSegs(data), MaxWorkbenchFiles: limit}
	}
	mustOK := func(b Body) Result {
		t.Helper()
		r := h.do(b)
		if r.Err != nil {
			t.Fatalf("%+v: %v", b, r.Err)
		}
		return r
	}
	for _, p := range []string{"f1", "d/f2", "d/e/f3"} {
		mustOK(capped(p, "x", 3))
	}
	for _, cond := range []Condition{CondNone, CondCreateOnly} {
		b := capped("d/f4", "y", 3)
		b.Cond = cond
		e := rejectedWhole(t, h, b, CodeResourceExhausted)
		if e.Quota != QuotaFilesPerWorkbench || e.Limit != 3 || e.Used != 3 || e.Requested != 1 {
			t.Fatalf("condition %d: the refusal is %+v, want quota %q, limit 3, used 3, requested 1", cond, e, QuotaFilesPerWorkbench)
		}
	}
	// A lower cap than the count refuses too; a replace at or over the cap does not.
	rejectedWhole(t, h, capped("g", "y", 1), CodeResourceExhausted)
	if r := mustOK(capped("d/f2", "replaced", 3)); r.Created {
		t.Fatalf("a replace at the cap answered Created")
	}
	mustOK(capped("d/e/f3", "again", 1))
	// Other workbenches, a workbench the put creates, a put without the cap.
	other := capped("f1", "x", 1)
	other.Workspace = "new"
	mustOK(other)
	mustOK(capped("nocap", "x", 0))
	if ws, _ := h.f.View().Workspace("a", "w"); ws.Files != 4 {
		t.Fatalf("workbench w holds %d files, want 4", ws.Files)
	}
	// A delete makes room for one create under the cap of 4.
	mustOK(Delete{Agent: "a", Workspace: "w", Path: "nocap"})
	mustOK(capped("room", "x", 4))
	rejectedWhole(t, h, capped("no-room", "x", 4), CodeResourceExhausted)
	if r := h.do(capped("neg", "x", -1)); CodeOf(r.Err) != CodeInvalidArguments || r.Err.Field != "max_workbench_files" {
		t.Fatalf("a negative cap: %v, want InvalidArguments naming max_workbench_files", r.Err)
	}
	// A replay is answered from the dedupe record before any check.
	h.index++
	h.nowMs += 1000
	rid := Header{TimeMs: h.nowMs, RequestID: "k", RequestHash: Digest{1}}
	if r := h.f.ApplyBody(h.index, rid, capped("last", "x", 5)); r.Err != nil {
		t.Fatalf("a create under the cap of 5: %v", r.Err)
	}
	h.index++
	if r := h.f.ApplyBody(h.index, rid, capped("last", "x", 5)); r.Err != nil || !r.Replayed {
		t.Fatalf("its replay at the cap: %+v, want the first answer replayed", r)
	}
	if err := checkUsage(h.f); err != nil {
		t.Fatal(err)
	}
}

// The cap is a field of cluster version 9 (WorkbenchFilesVersion): a put that sets it
// needs 9, one without it still 1, and it survives the hand-written encoder and decoder.
func TestAFilesCapNeedsItsClusterVersionAndRoundTrips(t *testing.T) {
	plain := Put{Agent: "a", Workspace: "w", Path: "p", Size: 1, Digest: Digest{1}, Segments: []Segment{{Digest: Digest{1}, Size: 1}}}
	capped := plain
	capped.MaxWorkbenchFiles = 256
	if got := CommandVersion(capped); got != WorkbenchFilesVersion || WorkbenchFilesVersion != 9 || ClusterVersion < 9 {
		t.Fatalf("a capped put needs cluster version %d (WorkbenchFilesVersion %d, ClusterVersion %d), want 9", got, WorkbenchFilesVersion, ClusterVersion)
	}
	if got := CommandVersion(plain); got != 1 {
		t.Fatalf("a put without the cap needs cluster version %d, want 1", got)
	}
	for _, b := range []Put{plain, capped} {
		data, err := EncodeCommand(Header{TimeMs: 7}, b)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := decodeHotCommand(data); !ok {
			t.Fatalf("the hand-written decoder leaves a put of cap %d to decMode", b.MaxWorkbenchFiles)
		}
		_, got, err := DecodeCommand(data)
		if err != nil || !reflect.DeepEqual(got, b) {
			t.Fatalf("round trip: %+v, %v; want %+v", got, err, b)
		}
		ref, err := encodeCommandReflect(Header{TimeMs: 7}, b)
		if err != nil || string(ref) != string(data) {
			t.Fatalf("the hand-written encoding of a put of cap %d differs from encMode's", b.MaxWorkbenchFiles)
		}
	}
}
