package shard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Integrity of a replica's storage (issue 10): every log entry this build writes carries a
// CRC-32C, the FSM snapshot carries raft's own CRC-64 (FileSnapshotStore), and Open checks
// both before Raft starts, so damage is a clear error naming the file instead of a bbolt
// panic, a start loop, or damaged commands applied as if they were good.

// ErrDamaged: a replica's Raft log or snapshot cannot be read back as it was written
// (truncated, bytes changed). Returned as a *DamagedError. Retrying does not help.
var ErrDamaged = errors.New("shard: replica storage damaged")

// DamagedError names the damaged file and says what to do. It wraps ErrDamaged.
type DamagedError struct {
	// What is "Raft log" or "Raft snapshot".
	What string
	// File is the damaged file or snapshot directory.
	File string
	// Cause says what is wrong with it.
	Cause error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%s %s is damaged (%v); the replica cannot start from it. Restore the data directory from a backup; "+
		"on a cluster, move this node's data directory away and start the node with a new --node-id, so that it joins empty and "+
		"catches up from its peers", e.What, e.File, e.Cause)
}

// Unwrap returns ErrDamaged.
func (e *DamagedError) Unwrap() error { return ErrDamaged }

func logDamaged(path string, format string, args ...any) *DamagedError {
	return &DamagedError{What: "Raft log", File: path, Cause: fmt.Errorf(format, args...)}
}

// guard turns a panic (bbolt asserts on pages it cannot make sense of) or a memory fault
// (a truncated file mapped beyond its end) in the calling goroutine into a *DamagedError
// for path. Use as: defer guard(path, &err)() after nothing else was deferred that could
// panic. Faults become panics only in a goroutine that asked for it (SetPanicOnFault).
func guard(path string, err *error) func() {
	old := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			*err = logDamaged(path, "reading it failed: %v", p)
		}
	}
}

// checkLogFile reads every page of the bbolt file at path that a key of the log can reach,
// read-only, before the store opens it for writing. An absent file is fine (a new replica);
// an empty one is not.
func checkLogFile(path string) (err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("shard: open log %s: %w", path, err)
	}
	if fi.Size() == 0 {
		// bbolt would initialize it as a new log, and the replica would start without the
		// entries it acknowledged. bbolt writes its first pages before Open returns, so an
		// empty file is damage (or a crash inside the very first open).
		return logDamaged(path, "the file is empty")
	}
	defer guard(path, &err)()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: boltOpenTimeout})
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) || errors.Is(err, berrors.ErrTimeout) {
			return fmt.Errorf("shard: open log %s: %w", path, err)
		}
		return logDamaged(path, "%v", err)
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		if need := tx.Size(); fi.Size() < need {
			return logDamaged(path, "the file is %d bytes, its pages run to %d bytes: it was cut short", fi.Size(), need)
		}
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return walkBucket(b)
		})
	})
}

// walkBucket touches every key and value of b and of the buckets below it.
func walkBucket(b *bbolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if sub := b.Bucket(k); sub != nil {
				return walkBucket(sub)
			}
		}
		return nil
	})
}

// openBolt opens the log file at path (boltLog), turning a panic into a *DamagedError.
func openBolt(path string) (bs *boltLog, err error) {
	defer guard(path, &err)()
	bs, err = openBoltLog(path, &bbolt.Options{Timeout: boltOpenTimeout})
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) || errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("shard: open log %s: %w", path, err)
		}
		return nil, logDamaged(path, "%v", err)
	}
	return bs, nil
}

// Entry checksums. A sealed entry's Extensions are
//
//	[0:4] sealMagic, [4] sealVersion, [5:9] CRC-32C (Castagnoli) big-endian, [9:] the
//	entry's own Extensions
//
// and the CRC covers Index, Term and Type (8, 8 and 1 bytes big-endian), the length of Data
// (8 bytes), Data, and the entry's own Extensions. logStore seals what it stores and
// unseals (verifies and strips) what it returns, so Raft, its followers and the FSM never
// see the seal; every replica seals its own copy.
const (
	sealMagic   = "CRNL"
	sealVersion = 1
	sealBytes   = 9
)

// sealedFromKey is the stable-store key holding the first log index this build sealed:
// entries below it may come from a build that wrote no checksums and are read as they are;
// an unsealed entry at or above it lost its seal to damage.
var sealedFromKey = []byte("CairnLogSealedFrom")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumHeaderBytes is the length of what entrySum covers before Data: Index, Term, Type and
// the length of Data.
const sumHeaderBytes = 25

func entrySum(l *raft.Log, ext []byte) uint32 {
	var hdr [sumHeaderBytes]byte
	return entrySumWith(&hdr, l, ext)
}

// entrySumWith is entrySum assembling the header in hdr (which the CRC's assembly makes
// escape: a caller that keeps one spares an allocation per entry).
func entrySumWith(hdr *[sumHeaderBytes]byte, l *raft.Log, ext []byte) uint32 {
	binary.BigEndian.PutUint64(hdr[0:8], l.Index)
	binary.BigEndian.PutUint64(hdr[8:16], l.Term)
	hdr[16] = byte(l.Type)
	binary.BigEndian.PutUint64(hdr[17:25], uint64(len(l.Data)))
	c := crc32.Update(0, castagnoli, hdr[:])
	c = crc32.Update(c, castagnoli, l.Data)
	return crc32.Update(c, castagnoli, ext)
}

// appendSeal appends the sealed Extensions of l (the seal, then l's own Extensions),
// assembling entrySum's header in hdr.
func appendSeal(b []byte, l *raft.Log, hdr *[sumHeaderBytes]byte) []byte {
	b = append(append(b, sealMagic...), sealVersion)
	b = binary.BigEndian.AppendUint32(b, entrySumWith(hdr, l, l.Extensions))
	return append(b, l.Extensions...)
}

// unseal verifies and strips the seal of l, read as entry idx. sealed reports whether l
// carried one; an error means the entry is damaged.
func unseal(l *raft.Log, idx uint64) (sealed bool, err error) {
	if l.Index != idx {
		return false, fmt.Errorf("entry %d is stored as entry %d", idx, l.Index)
	}
	ext := l.Extensions
	if len(ext) < sealBytes || string(ext[:4]) != sealMagic {
		return false, nil
	}
	if ext[4] != sealVersion {
		return true, fmt.Errorf("entry %d has a checksum of unknown format %d", idx, ext[4])
	}
	own := ext[sealBytes:]
	if len(own) == 0 {
		own = nil
	}
	if got, want := entrySum(l, own), binary.BigEndian.Uint32(ext[5:9]); got != want {
		return true, fmt.Errorf("entry %d fails its checksum (CRC-32C %08x, stored %08x)", idx, got, want)
	}
	l.Extensions = own
	return true, nil
}

// verifyEntries reads every entry of the log back and checks its seal: the check a restart
// runs before Raft replays the log.
func (l *logStore) verifyEntries() (err error) {
	defer guard(l.path, &err)()
	first, err := l.boltLog.FirstIndex()
	if err != nil {
		return logDamaged(l.path, "first index: %v", err)
	}
	last, err := l.boltLog.LastIndex()
	if err != nil {
		return logDamaged(l.path, "last index: %v", err)
	}
	if first == 0 {
		return nil
	}
	var e raft.Log
	for i := first; i <= last; i++ {
		if err := l.GetLog(i, &e); err != nil {
			var de *DamagedError
			if errors.As(err, &de) {
				return err
			}
			return logDamaged(l.path, "entry %d of [%d, %d]: %v", i, first, last, err)
		}
	}
	return nil
}

// checkSnapshots runs before Raft restores the replica: the newest snapshot must read back
// with its CRC-64 (FileSnapshotStore.Open reads it whole and checks it), and the log must
// continue where it ends. Without the check raft would restore an older snapshot in its
// place, or none, and then fail on — or silently lack — the entries the log no longer holds.
func checkSnapshots(snaps *raft.FileSnapshotStore, dir string, log *logStore) error {
	metas, err := snaps.List()
	if err != nil {
		return fmt.Errorf("shard: list snapshots: %w", err)
	}
	var newest uint64
	if len(metas) > 0 {
		_, rc, err := snaps.Open(metas[0].ID)
		if err != nil {
			return &DamagedError{What: "Raft snapshot", File: filepath.Join(dir, "snapshots", metas[0].ID), Cause: err}
		}
		rc.Close()
		newest = metas[0].Index
	}
	first, err := log.FirstIndex()
	if err != nil {
		return logDamaged(log.path, "first index: %v", err)
	}
	if first > 1 && newest+1 < first {
		return logDamaged(log.path, "the log starts at entry %d, and no readable snapshot holds the entries before it (newest: %d)", first, newest)
	}
	return nil
}
