package meta

import (
	"fmt"
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
