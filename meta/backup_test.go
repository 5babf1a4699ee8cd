package meta

import (
	"fmt"
	"strings"
	"testing"
)

func TestBackupHoldKeepsBlobsThatReachedZeroAfterIt(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	h.putBlob("g", 2, 0)
	h.putBlob("g", 3, 0) // blob 2 unreferenced before the hold: not kept
	if r := h.do(BackupHold{ID: "b1"}); r.Err != nil || !r.Created {
		t.Fatalf("hold: %+v", r)
	}
	if r := h.do(BackupHold{ID: "b1"}); r.Err != nil || r.Created {
		t.Fatalf("second hold of the same id: %+v", r)
	}
	h.putBlob("f", 4, 0) // blob 1 reaches zero after the hold: kept
	if r := h.intent(0, zero(1), zero(2)); accepted(r) != 1 || r.GC.Accepted[0] != blobDigest(2) {
		t.Fatalf("intent under a backup hold accepted %+v, want only blob 2", r.GC)
	}
	if !h.f.View().Shard().BackupHeld(mustRef(h, 1).ZeroSinceMs) {
		t.Fatal("ShardView.BackupHeld does not report the kept blob")
	}
	g := New(Options{History: pruneAtOnce})
	if err := g.Restore(snapshotBytes(t, h.f)); err != nil {
		t.Fatal(err)
	}
	if got := g.View().Shard().BackupHolds(); len(got) != 1 || got[0].ID != "b1" || got[0].Version != 4 {
		t.Fatalf("holds after restore: %+v", got)
	}
	if g.StateDigest() != h.f.StateDigest() {
		t.Fatal("restored state differs")
	}
	if r := h.do(BackupRelease{ID: "b1"}); r.Err != nil || !r.Retired {
		t.Fatalf("release: %+v", r)
	}
	if r := h.do(BackupRelease{ID: "b1"}); r.Err != nil || r.Retired {
		t.Fatalf("second release: %+v", r)
	}
	if r := h.intent(0, zero(1)); accepted(r) != 1 {
		t.Fatal("a released hold still keeps its blob")
	}
}

// A backup id is one backup's: its hold placed again for the same destination is kept (a
// backup run again after a crash), for another destination refused, and the hold keeps the
// version and destination of its first placing.
func TestBackupHoldOfAnIDInUseByAnotherDestinationIsAConflict(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	h.putBlob("f", 1, 0)
	if r := h.do(BackupHold{ID: "x", Dest: "dir:///bk/a"}); r.Err != nil || !r.Created {
		t.Fatalf("hold: %+v", r)
	}
	placed := h.f.View().Shard().BackupHolds()[0]
	if r := h.do(BackupHold{ID: "x", Dest: "dir:///bk/a"}); r.Err != nil || r.Created {
		t.Fatalf("the same backup run again: %+v", r)
	}
	for _, dest := range []string{"dir:///bk/b", ""} {
		r := h.do(BackupHold{ID: "x", Dest: dest})
		if r.Err == nil || r.Err.Code != CodeConflict || r.Err.Reason != ReasonBackupIDInUse ||
			!strings.Contains(r.Err.Message, `backup id "x" is in use by another backup`) || !strings.Contains(r.Err.Message, "dir:///bk/a") {
			t.Fatalf("a hold of x for %q: %+v, want the Conflict of an id in use naming the other destination", dest, r.Err)
		}
	}
	if got := h.f.View().Shard().BackupHolds(); len(got) != 1 || got[0] != placed || got[0].Dest != "dir:///bk/a" {
		t.Fatalf("holds %+v, want only the first %+v", got, placed)
	}
	if r := h.do(BackupHold{ID: "y", Dest: strings.Repeat("d", MaxBackupDestBytes+1)}); r.Err == nil || r.Err.Field != "destination" {
		t.Fatalf("a destination past the bound: %+v", r.Err)
	}
	if CommandVersion(BackupHold{ID: "x", Dest: "d"}) != BackupDestVersion || CommandVersion(BackupHold{ID: "x"}) != 2 {
		t.Fatal("BackupHold.Dest is not gated by BackupDestVersion")
	}
}

func TestBackupHoldValidatesAndBoundsIDs(t *testing.T) {
	h := &applyHelper{t: t, f: New(Options{History: pruneAtOnce})}
	for _, tc := range []struct {
		name string
		body Body
		code Code
	}{
		{"an empty id is invalid", BackupHold{}, CodeInvalidArguments},
		{"an id with a slash is invalid", BackupHold{ID: "a/b"}, CodeInvalidArguments},
		{"an empty release is invalid", BackupRelease{}, CodeInvalidArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(tc.body)
			if r.Err == nil || r.Err.Code != tc.code || r.Err.Field != "backup" {
				t.Fatalf("got %+v, want %s on field backup", r.Err, tc.code)
			}
		})
	}
	for i := range MaxBackupHolds {
		if r := h.do(BackupHold{ID: fmt.Sprintf("b%d", i)}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if r := h.do(BackupHold{ID: "one-more"}); r.Err == nil || r.Err.Code != CodeResourceExhausted {
		t.Fatalf("hold past the bound: %+v", r.Err)
	}
}

func mustRef(h *applyHelper, n byte) BlobRef {
	h.t.Helper()
	br, ok := h.ref(n)
	if !ok {
		h.t.Fatalf("no record of blob %d", n)
	}
	return br
}
