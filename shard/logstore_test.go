package shard

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

func entries(lo, hi uint64, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := lo; i <= hi; i++ {
		out = append(out, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d/%d", i, term))})
	}
	return out
}

func checkLog(t *testing.T, ls raft.LogStore, first, last uint64, termOf func(uint64) uint64) {
	t.Helper()
	if got, err := ls.FirstIndex(); err != nil || got != first {
		t.Fatalf("FirstIndex = %d, %v; want %d", got, err, first)
	}
	if got, err := ls.LastIndex(); err != nil || got != last {
		t.Fatalf("LastIndex = %d, %v; want %d", got, err, last)
	}
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := ls.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if want := fmt.Sprintf("entry %d/%d", i, termOf(i)); l.Index != i || string(l.Data) != want {
			t.Fatalf("GetLog(%d) = index %d %q, want %q", i, l.Index, l.Data, want)
		}
	}
}

// A follower drops a log suffix a new leader never committed, appends the leader's
// entries, and restarts: the log reopens with exactly the kept and new entries (the
// raft-wal store this replaced could not reopen after a suffix truncation).
func TestLogReopensAfterSuffixTruncation(t *testing.T) {
	dir := t.TempDir()
	ls, err := openLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.StoreLogs(entries(1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := ls.DeleteRange(8, 10); err != nil { // the suffix the new leader overwrites
		t.Fatal(err)
	}
	if err := ls.StoreLogs(entries(8, 12, 2)); err != nil {
		t.Fatal(err)
	}
	if err := ls.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatal(err)
	}
	if st := ls.appends.Load(); st != 2 || ls.entries.Load() != 15 {
		t.Fatalf("counted %d appends of %d entries, want 2 of 15", st, ls.entries.Load())
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	ls, err = openLog(dir)
	if err != nil {
		t.Fatalf("reopen after a suffix truncation: %v", err)
	}
	defer ls.Close()
	checkLog(t, ls, 1, 12, func(i uint64) uint64 { return map[bool]uint64{true: 1, false: 2}[i < 8] })
	if v, err := ls.GetUint64([]byte("CurrentTerm")); err != nil || v != 2 {
		t.Fatalf("CurrentTerm = %d, %v; want 2", v, err)
	}
	// A prefix truncation (after a snapshot) also survives a reopen.
	if err := ls.DeleteRange(1, 5); err != nil {
		t.Fatal(err)
	}
	ls.Close()
	if ls, err = openLog(dir); err != nil {
		t.Fatal(err)
	}
	checkLog(t, ls, 6, 12, func(i uint64) uint64 { return map[bool]uint64{true: 1, false: 2}[i < 8] })
}

// A replica directory written by an earlier build (a raft-wal log in Dir/wal) opens with
// every entry and the stable keys (term, vote) moved into raft.db.
func TestLegacyRaftWALLogIsMigrated(t *testing.T) {
	dir := t.TempDir()
	legacy := filepath.Join(dir, legacyLogDir)
	if err := os.MkdirAll(legacy, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(legacy, wal.WithMetaStore(meta), wal.WithSegmentSize(4096)) // several segments
	if err != nil {
		t.Fatal(err)
	}
	if err := w.StoreLogs(entries(1, 5000, 3)); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteRange(1, 100); err != nil { // a snapshot truncated the head
		t.Fatal(err)
	}
	if err := w.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if err := w.SetUint64([]byte("LastVoteTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if err := w.Set([]byte("LastVoteCand"), []byte("node-b")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	meta.Close()

	ls, err := openLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkLog(t, ls, 101, 5000, func(uint64) uint64 { return 3 })
	for k, want := range map[string]uint64{"CurrentTerm": 3, "LastVoteTerm": 3} {
		if v, err := ls.GetUint64([]byte(k)); err != nil || v != want {
			t.Fatalf("%s = %d, %v; want %d", k, v, err, want)
		}
	}
	if v, err := ls.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-b" {
		t.Fatalf("LastVoteCand = %q, %v", v, err)
	}
	ls.Close()
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Fatalf("the legacy log is still at %s (%v)", legacy, err)
	}
	if _, err := os.Stat(filepath.Join(dir, legacyMigrated)); err != nil {
		t.Fatalf("the legacy log was not kept as %s: %v", legacyMigrated, err)
	}
	// The next open uses raft.db alone.
	if ls, err = openLog(dir); err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	checkLog(t, ls, 101, 5000, func(uint64) uint64 { return 3 })
}
