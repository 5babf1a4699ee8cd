package shard

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// compatEntries are entries of every shape the log holds: empty and large Data, with and
// without Extensions, each entry type, zero and set AppendedAt, indexes past 2^32.
func compatEntries() []*raft.Log {
	at := time.Date(2026, 12, 7, 4, 30, 0, 123456789, time.UTC)
	return []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: []byte("cfg")},
		{Index: 2, Term: 1, Type: raft.LogNoop},
		{Index: 3, Term: 2, Type: raft.LogCommand, Data: bytes.Repeat([]byte{0xa5}, 1200), AppendedAt: at},
		{Index: 4, Term: 2, Type: raft.LogCommand, Data: []byte{}, Extensions: []byte("CRNL\x01abcd"), AppendedAt: at.Local()},
		{Index: 5, Term: 3, Type: raft.LogBarrier, Data: bytes.Repeat([]byte("x"), 70_000), Extensions: []byte{0}},
		{Index: 1<<40 + 6, Term: 1 << 33, Type: raft.LogCommand, Data: []byte("far")},
	}
}

// rawValues returns every key and value of bucket name of the bbolt file at path.
func rawValues(t *testing.T, path, name string) map[string][]byte {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string][]byte{}
	if err := db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(name)).ForEach(func(k, v []byte) error {
			out[string(k)] = bytes.Clone(v)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A file boltLog writes holds the bytes raft-boltdb writes for the same entries and stable
// keys, whether the batch's buffer holds every entry or none (entryOverhead 0), and each
// reads what the other wrote: replicas written by either build open with the other.
func TestBoltLogMatchesRaftBoltDB(t *testing.T) {
	for _, overhead := range []int{entryOverhead, 0} {
		t.Run(fmt.Sprintf("overhead-%d", overhead), func(t *testing.T) {
			defer func(o int) { entryOverhead = o }(entryOverhead)
			entryOverhead = overhead
			dir := t.TempDir()
			theirs, ours := filepath.Join(dir, "theirs.db"), filepath.Join(dir, "ours.db")
			rb, err := raftboltdb.New(raftboltdb.Options{Path: theirs})
			if err != nil {
				t.Fatal(err)
			}
			bl, err := openBoltLog(ours, nil)
			if err != nil {
				t.Fatal(err)
			}
			es := compatEntries()
			for _, s := range []interface {
				StoreLogs([]*raft.Log) error
				StoreLog(*raft.Log) error
				SetUint64([]byte, uint64) error
				Set([]byte, []byte) error
			}{rb, bl} {
				if err := s.StoreLogs(es[:5]); err != nil {
					t.Fatal(err)
				}
				if err := s.StoreLog(es[5]); err != nil {
					t.Fatal(err)
				}
				if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
					t.Fatal(err)
				}
				if err := s.Set([]byte("LastVoteCand"), []byte("node-2")); err != nil {
					t.Fatal(err)
				}
			}
			rb.Close()
			bl.Close()
			for _, bucket := range []string{"logs", "conf"} {
				want, got := rawValues(t, theirs, bucket), rawValues(t, ours, bucket)
				if len(want) != len(got) {
					t.Fatalf("bucket %s: %d keys, raft-boltdb wrote %d", bucket, len(got), len(want))
				}
				for k, v := range want {
					if !bytes.Equal(got[k], v) {
						t.Fatalf("bucket %s key %x: %x, raft-boltdb wrote %x", bucket, k, got[k], v)
					}
				}
			}
			checkCrossRead(t, theirs, ours, es)
		})
	}
}

// checkCrossRead opens the file raft-boltdb wrote with boltLog and the other way round,
// and reads every entry and stable key back.
func checkCrossRead(t *testing.T, theirs, ours string, es []*raft.Log) {
	t.Helper()
	bl, err := openBoltLog(theirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	rb, err := raftboltdb.New(raftboltdb.Options{Path: ours})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	for _, r := range []raft.LogStore{bl, rb} {
		for _, e := range es {
			var got raft.Log
			if err := r.GetLog(e.Index, &got); err != nil {
				t.Fatal(err)
			}
			if got.Index != e.Index || got.Term != e.Term || got.Type != e.Type || !bytes.Equal(got.Data, e.Data) ||
				!bytes.Equal(got.Extensions, e.Extensions) || !got.AppendedAt.Equal(e.AppendedAt) {
				t.Fatalf("%T entry %d: %+v, want %+v", r, e.Index, got, *e)
			}
		}
		if first, err := r.FirstIndex(); err != nil || first != 1 {
			t.Fatalf("%T first index %d (%v), want 1", r, first, err)
		}
		if last, err := r.LastIndex(); err != nil || last != es[len(es)-1].Index {
			t.Fatalf("%T last index %d (%v), want %d", r, last, err, es[len(es)-1].Index)
		}
		if err := r.GetLog(6, new(raft.Log)); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("%T entry 6: %v, want raft.ErrLogNotFound", r, err)
		}
	}
	for _, s := range []raft.StableStore{bl, rb} {
		if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
			t.Fatalf("%T CurrentTerm %d (%v), want 7", s, v, err)
		}
		if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-2" {
			t.Fatalf("%T LastVoteCand %q (%v)", s, v, err)
		}
		if _, err := s.Get([]byte("LastVoteTerm")); !errors.Is(err, raftboltdb.ErrKeyNotFound) {
			t.Fatalf("%T unset key: %v, want raftboltdb.ErrKeyNotFound", s, err)
		}
	}
}

// DeleteRange deletes the entries in its range, inclusive, and no other; an empty log
// has first and last index 0.
func TestBoltLogDeleteRange(t *testing.T) {
	bl, err := openBoltLog(filepath.Join(t.TempDir(), logFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	if first, err := bl.FirstIndex(); err != nil || first != 0 {
		t.Fatalf("empty log: first index %d (%v)", first, err)
	}
	if last, err := bl.LastIndex(); err != nil || last != 0 {
		t.Fatalf("empty log: last index %d (%v)", last, err)
	}
	if err := bl.StoreLogs(entries(1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := bl.DeleteRange(3, 5); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 10; i++ {
		err := bl.GetLog(i, new(raft.Log))
		if gone := errors.Is(err, raft.ErrLogNotFound); gone != (i >= 3 && i <= 5) || !gone && err != nil {
			t.Fatalf("entry %d after DeleteRange(3, 5): %v", i, err)
		}
	}
	if err := bl.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	if first, err := bl.FirstIndex(); err != nil || first != 6 {
		t.Fatalf("first index %d (%v), want 6", first, err)
	}
}

// StoreLogs seals copies of the entries in buffers the next batch reuses: batches of
// different sizes, with and without Extensions, read back whole and verified, and the
// caller's entries are left as they were.
func TestLogStoreBatchesReuseTheirSealBuffers(t *testing.T) {
	dir := t.TempDir()
	l, err := openLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []*raft.Log
	next := uint64(1)
	for _, n := range []int{5, 1, 9, 3} {
		batch := make([]*raft.Log, n)
		for i := range batch {
			e := &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", next))}
			if next%2 == 0 {
				e.Extensions = []byte(fmt.Sprintf("ext %d", next))
			}
			batch[i] = e
			next++
		}
		if err := l.StoreLogs(batch); err != nil {
			t.Fatal(err)
		}
		for _, e := range batch {
			if want := fmt.Sprintf("ext %d", e.Index); e.Index%2 == 0 && string(e.Extensions) != want || e.Index%2 == 1 && e.Extensions != nil {
				t.Fatalf("StoreLogs changed the caller's entry %d: Extensions %q", e.Index, e.Extensions)
			}
		}
		all = append(all, batch...)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = openLog(dir) // verifies every entry's seal
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, e := range all {
		var got raft.Log
		if err := l.GetLog(e.Index, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Data, e.Data) || !bytes.Equal(got.Extensions, e.Extensions) {
			t.Fatalf("entry %d: Data %q Extensions %q, want %q %q", e.Index, got.Data, got.Extensions, e.Data, e.Extensions)
		}
	}
}

// bbolt's values are valid only while their transaction is open (v1.4.3, bucket.go: Get
// returns the memory-mapped page), and raft keeps the entries and stable values it reads
// long after: the log hands out copies. Read, then close the file (bbolt unmaps it), then
// use what was read: an entry or value that aliased the map would fault or change here.
func TestWhatTheLogReadsOutlivesTheFile(t *testing.T) {
	bl, err := openBoltLog(filepath.Join(t.TempDir(), logFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := compatEntries()
	if err := bl.StoreLogs(want); err != nil {
		t.Fatal(err)
	}
	if err := bl.Set([]byte("k"), bytes.Repeat([]byte("v"), 5000)); err != nil {
		t.Fatal(err)
	}
	got := make([]*raft.Log, len(want))
	for i, e := range want {
		got[i] = new(raft.Log)
		if err := bl.GetLog(e.Index, got[i]); err != nil {
			t.Fatal(err)
		}
	}
	stable, err := bl.Get([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bl.Close(); err != nil {
		t.Fatal(err)
	}
	for i, e := range want {
		if !bytes.Equal(got[i].Data, e.Data) || !bytes.Equal(got[i].Extensions, e.Extensions) {
			t.Errorf("entry %d after the file closed: %d data bytes, %q extensions; want %d, %q", e.Index, len(got[i].Data), got[i].Extensions, len(e.Data), e.Extensions)
		}
	}
	if !bytes.Equal(stable, bytes.Repeat([]byte("v"), 5000)) {
		t.Errorf("stable value after the file closed: %d bytes", len(stable))
	}
}
