package shard

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// rawLog opens dir's raft.db without the sealing wrapper, as a build without entry
// checksums (or a damaged disk) would leave it.
func rawLog(t *testing.T, dir string) *raftboltdb.BoltStore {
	t.Helper()
	bs, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, logFile)})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

func wantDamaged(t *testing.T, what string, err error) {
	t.Helper()
	var de *DamagedError
	if !errors.Is(err, ErrDamaged) || !errors.As(err, &de) || de.What != "Raft log" {
		t.Fatalf("%s: %v, want a *DamagedError naming the Raft log", what, err)
	}
}

// Entries written by a build without checksums stay readable; entries written from then on
// carry checksums, which every read and the next open verify: a changed entry, or one whose
// checksum is gone, stops the open with a *DamagedError.
func TestLogEntriesCarryChecksumsVerifiedAtOpen(t *testing.T) {
	dir := t.TempDir()
	old := rawLog(t, dir)
	if err := old.StoreLogs(entries(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	old.Close()

	ls, err := openLog(dir)
	if err != nil {
		t.Fatalf("open a log written without checksums: %v", err)
	}
	if err := ls.StoreLogs(entries(4, 6, 1)); err != nil {
		t.Fatal(err)
	}
	checkLog(t, ls, 1, 6, func(uint64) uint64 { return 1 })
	var l raft.Log
	if err := ls.GetLog(5, &l); err != nil || l.Extensions != nil {
		t.Fatalf("GetLog(5): extensions %q, %v; want the entry as raft stored it", l.Extensions, err)
	}
	ls.Close()
	ls, err = openLog(dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	ls.Close()

	for _, c := range []struct {
		what   string
		damage func(e *raft.Log)
	}{
		{"a changed byte of the command", func(e *raft.Log) { e.Data[0] ^= 1 }},
		{"a changed term", func(e *raft.Log) { e.Term++ }},
		{"a lost checksum", func(e *raft.Log) { e.Extensions = nil }},
	} {
		t.Run(c.what, func(t *testing.T) {
			raw := rawLog(t, dir)
			var e raft.Log
			if err := raw.GetLog(5, &e); err != nil {
				t.Fatal(err)
			}
			good := e
			good.Data = append([]byte(nil), e.Data...)
			good.Extensions = append([]byte(nil), e.Extensions...)
			c.damage(&e)
			if err := raw.StoreLog(&e); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			_, err := openLog(dir)
			wantDamaged(t, "open", err)

			raw = rawLog(t, dir)
			if err := raw.StoreLog(&good); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			ls, err := openLog(dir)
			if err != nil {
				t.Fatalf("open after the entry was put back: %v", err)
			}
			ls.Close()
		})
	}
}
