package host

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A node told to host a replica of a shard recovered since its directory was written
// moves that directory aside and starts empty; a directory of the current epoch, and one
// without Raft state, are kept.
func TestAlignEpochMovesAsideOnlyAReplicaOlderThanTheShardsRecovery(t *testing.T) {
	h, _ := newHost(Config{DataDir: t.TempDir(), NodeID: "n0", Logger: quietLog})
	dir := h.replicas.dir(0)
	if err := os.MkdirAll(filepath.Join(dir, "snapshots"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "raft.db"), []byte("old group"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.recovery.alignEpoch(0, 0); err != nil || readEpoch(dir) != 0 {
		t.Fatalf("epoch 0: %v, epoch file %d", err, readEpoch(dir))
	}
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); err != nil {
		t.Fatalf("a record of epoch 0 moved the replica: %v", err)
	}

	if err := h.recovery.alignEpoch(0, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale log is still in place: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir+".before-epoch-2", "raft.db")); err != nil || string(b) != "old group" {
		t.Fatalf("the stale replica was not moved aside whole: %q %v", b, err)
	}
	if got := readEpoch(dir); got != 2 {
		t.Fatalf("epoch file %d, want 2", got)
	}

	// Current: kept as it is.
	if err := os.WriteFile(filepath.Join(dir, "raft.db"), []byte("recovered group"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.recovery.alignEpoch(0, 2); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "raft.db")); err != nil || string(b) != "recovered group" {
		t.Fatalf("a replica of the current epoch was touched: %q %v", b, err)
	}

	// No Raft state (a new replica): nothing to move, the epoch is recorded.
	if err := h.recovery.alignEpoch(1, 3); err != nil || readEpoch(h.replicas.dir(1)) != 3 {
		t.Fatalf("new replica: %v, epoch file %d", err, readEpoch(h.replicas.dir(1)))
	}
	if _, err := os.Stat(h.replicas.dir(1) + ".before-epoch-3"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an empty directory was moved aside: %v", err)
	}
}
