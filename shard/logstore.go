package shard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"
)

// The Raft log and stable store of a replica: one bbolt file, Dir/raft.db, in
// hashicorp/raft-boltdb's layout (boltlog.go). Every StoreLogs is one transaction and one fsync, so the leader's
// batched appends (group commit) cost one fsync per batch.
//
// Replicas written by earlier builds kept their log in hashicorp/raft-wal segments
// (Dir/wal). raft-wal v0.4.0 marks the tail segment sealed when Raft truncates a log
// suffix (a follower dropping entries a new leader never committed) without writing the
// segment's index, and then cannot reopen the log ("sealed segment has no index block",
// hashicorp/raft-wal#31; the fix was never released): a replica that ever dropped a suffix
// could not restart. openLog moves such a log into raft.db once, then renames Dir/wal to
// Dir/wal.migrated.

const (
	logFile        = "raft.db"
	legacyLogDir   = "wal"
	legacyMigrated = "wal.migrated"
	// boltOpenTimeout bounds waiting for bbolt's file lock (the shard's own LOCK file is
	// taken first, so a wait here means something outside Cairn holds the file).
	boltOpenTimeout = 5 * time.Second
	// migrateBatch is how many entries one migration transaction copies.
	migrateBatch = 4096
)

// Keys raft's StableStore uses (hashicorp/raft api.go); a migration copies them.
var (
	stableUint64Keys = [][]byte{[]byte("CurrentTerm"), []byte("LastVoteTerm")}
	stableBytesKeys  = [][]byte{[]byte("LastVoteCand")}
)

// logStore is raft's LogStore and StableStore over bbolt, counting log writes. It seals
// every entry it stores with a checksum and verifies the seal of every entry it returns
// (logcheck.go).
type logStore struct {
	*boltLog
	path string
	// sealedFrom is the first index this build sealed (sealedFromKey).
	sealedFrom       uint64
	appends, entries atomic.Uint64
	// seals holds the sealed copies StoreLogs makes of a batch, reused by the next.
	seals sealBuffers
}

// sealBuffers is where StoreLogs seals a batch (raft calls it from one goroutine; mu
// serialises any other caller): copies of the entries, pointers to them, their sealed
// Extensions end to end, and entrySum's header.
type sealBuffers struct {
	mu     sync.Mutex
	copies []raft.Log
	ptrs   []*raft.Log
	exts   []byte
	hdr    [sumHeaderBytes]byte
}

// maxKeptSealEntries bounds the batch whose seal buffers StoreLogs keeps for the next.
const maxKeptSealEntries = 4096

// StoreLog writes one entry (one transaction, one fsync).
func (l *logStore) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

// StoreLogs writes entries, each sealed with its checksum, in one transaction with one
// fsync. The caller's entries are not changed: the sealed copies live in l.seals until
// the write returns (boltLog keeps no reference to them), and the next batch reuses them.
func (l *logStore) StoreLogs(logs []*raft.Log) error {
	b := &l.seals
	b.mu.Lock()
	defer b.mu.Unlock()
	n, size := len(logs), 0
	for _, e := range logs {
		size += sealBytes + len(e.Extensions)
	}
	if cap(b.copies) < n {
		b.copies, b.ptrs = make([]raft.Log, n), make([]*raft.Log, n)
	}
	if cap(b.exts) < size {
		b.exts = make([]byte, 0, size)
	}
	copies, ptrs, exts := b.copies[:n], b.ptrs[:n], b.exts[:0]
	for i, e := range logs {
		start := len(exts)
		exts = appendSeal(exts, e, &b.hdr)
		copies[i] = *e
		copies[i].Extensions = exts[start:len(exts):len(exts)]
		ptrs[i] = &copies[i]
	}
	err := l.boltLog.StoreLogs(ptrs)
	clear(copies) // the buffers keep no entry's Data alive
	if n > maxKeptSealEntries {
		b.copies, b.ptrs, b.exts = nil, nil, nil
	}
	if err != nil {
		return err
	}
	l.appends.Add(1)
	l.entries.Add(uint64(len(logs)))
	return nil
}

// size returns how many entries the log holds and the size of its file in bytes; 0 for
// what it cannot read (a closed store).
func (l *logStore) size() (entries uint64, fileBytes int64) {
	first, ferr := l.boltLog.FirstIndex()
	last, lerr := l.boltLog.LastIndex()
	if ferr == nil && lerr == nil && first > 0 && last >= first {
		entries = last - first + 1
	}
	if fi, err := os.Stat(l.path); err == nil {
		fileBytes = fi.Size()
	}
	return entries, fileBytes
}

// GetLog reads entry idx and verifies its checksum: a damaged entry is a *DamagedError
// (wrapping ErrDamaged), never returned as if it were good.
func (l *logStore) GetLog(idx uint64, out *raft.Log) error {
	if err := l.boltLog.GetLog(idx, out); err != nil {
		return err
	}
	sealed, err := unseal(out, idx)
	switch {
	case err != nil:
		return &DamagedError{What: "Raft log", File: l.path, Cause: err}
	case !sealed && idx >= l.sealedFrom:
		return logDamaged(l.path, "entry %d has lost its checksum", idx)
	}
	return nil
}

// openLog opens (creating) dir's Raft log, first moving a legacy raft-wal log into it. It
// checks the file and every entry before it returns (logcheck.go): damage is a
// *DamagedError naming the file.
func openLog(dir string) (*logStore, error) {
	path := filepath.Join(dir, logFile)
	legacy := filepath.Join(dir, legacyLogDir)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(legacy); err == nil {
			if err := migrateLegacyLog(legacy, path); err != nil {
				return nil, fmt.Errorf("shard: move the raft-wal log of %s into %s: %w", dir, logFile, err)
			}
		}
	}
	if err := checkLogFile(path); err != nil {
		return nil, err
	}
	bs, err := openBolt(path)
	if err != nil {
		return nil, err
	}
	l := &logStore{boltLog: bs, path: path}
	if err := l.initSealedFrom(); err != nil {
		bs.Close()
		return nil, err
	}
	if err := l.verifyEntries(); err != nil {
		bs.Close()
		return nil, err
	}
	return l, nil
}

// initSealedFrom loads sealedFromKey, recording it on the first open by a build that seals:
// every entry from the next index on is sealed.
func (l *logStore) initSealedFrom() error {
	v, err := l.boltLog.GetUint64(sealedFromKey)
	if err == nil && v > 0 {
		l.sealedFrom = v
		return nil
	}
	if err != nil && !errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return logDamaged(l.path, "%s: %v", sealedFromKey, err)
	}
	last, err := l.boltLog.LastIndex()
	if err != nil {
		return logDamaged(l.path, "last index: %v", err)
	}
	if err := l.boltLog.SetUint64(sealedFromKey, last+1); err != nil {
		return fmt.Errorf("shard: open log %s: %w", l.path, err)
	}
	l.sealedFrom = last + 1
	return nil
}

// migrateLegacyLog copies every entry and the stable keys of the raft-wal log in
// legacy into a new bbolt log at path (written as path.tmp, synced, renamed), then
// renames legacy to wal.migrated. A crash at any point leaves either the legacy log
// alone (retried at the next open) or the complete new log.
func migrateLegacyLog(legacy, path string) (err error) {
	meta := &metadb.BoltMetaDB{}
	defer meta.Close()
	w, err := wal.Open(legacy, wal.WithMetaStore(meta))
	if err != nil {
		return err
	}
	defer w.Close()
	tmp := path + ".tmp"
	os.Remove(tmp)
	bs, err := openBoltLog(tmp, &bbolt.Options{Timeout: boltOpenTimeout})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := bs.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tmp)
		}
	}()
	first, err := w.FirstIndex()
	if err != nil {
		return err
	}
	last, err := w.LastIndex()
	if err != nil {
		return err
	}
	for lo := first; first > 0 && lo <= last; lo += migrateBatch {
		hi := min(last, lo+migrateBatch-1)
		batch := make([]*raft.Log, 0, hi-lo+1)
		for i := lo; i <= hi; i++ {
			l := new(raft.Log)
			if err := w.GetLog(i, l); err != nil {
				return fmt.Errorf("read entry %d: %w", i, err)
			}
			batch = append(batch, l)
		}
		if err := bs.StoreLogs(batch); err != nil {
			return err
		}
	}
	for _, k := range stableUint64Keys {
		if v, err := w.GetUint64(k); err == nil && v != 0 {
			if err := bs.SetUint64(k, v); err != nil {
				return err
			}
		}
	}
	for _, k := range stableBytesKeys {
		if v, err := w.Get(k); err == nil && len(v) > 0 {
			if err := bs.Set(k, v); err != nil {
				return err
			}
		}
	}
	if err := bs.Sync(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	return os.Rename(legacy, filepath.Join(filepath.Dir(legacy), legacyMigrated))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lastCommand returns the index of the last command in the log in (after, upTo], 0 when
// there is none: the entries after the FSM's last command may be Raft's own (a leader's
// no-op, a barrier, a configuration), which the FSM never applies. An index the log no
// longer holds was compacted into a snapshot of the FSM's state, which holds it and every
// entry before it; an index the log cannot read counts as a command (waited for).
func (l *logStore) lastCommand(after, upTo uint64) uint64 {
	var e raft.Log
	for i := upTo; i > after; i-- {
		err := l.GetLog(i, &e)
		switch {
		case errors.Is(err, raft.ErrLogNotFound):
			return 0
		case err != nil || e.Type == raft.LogCommand:
			return i
		}
	}
	return 0
}
