package meta

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/fxamacker/cbor/v2"
)

// SnapshotFormat is the newest version of the snapshot stream this binary writes (WriteTo
// writes the oldest one that holds the state). Format 2 added the usage, quota and backup
// hold records and the purge steps of deleted workbenches; a format-1 stream restores with
// its usage recomputed. Format 3 added the proposal records (proposal.go), the change
// feed (feed.go), the roots' history retention policies and the root re-prune steps a
// policy change queues (retention.go).
const SnapshotFormat = 3

// Snapshot is a point-in-time copy of an FSM's state, taken in O(1); writing it streams
// record by record.
type Snapshot struct{ st *state }

// Snapshot returns a copy of the current state for persisting. Applies may continue while
// the snapshot is written.
func (f *FSM) Snapshot() *Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &Snapshot{st: f.st.copy()}
}

// Version returns the shard version the snapshot captures.
func (s *Snapshot) Version() uint64 { return s.st.version }

type snapHeader struct {
	Format          uint16 `cbor:"1,keyasint"`
	Version         uint64 `cbor:"2,keyasint"`
	NowMs           int64  `cbor:"3,keyasint"`
	NextRootUID     uint64 `cbor:"4,keyasint"`
	NextIncarnation uint64 `cbor:"5,keyasint"`
	Seq             uint64 `cbor:"6,keyasint"`
	NextListID      uint64 `cbor:"7,keyasint,omitempty"`
}

// Record tags of the snapshot stream. Never renumber.
const (
	recEnd uint8 = iota
	recRoot
	recWorkspace
	recPath
	recDir
	recBlob
	recDedupe
	recDedupeOrder
	recDedupeCount
	recRetention
	recSnapshot
	recSnapName
	recHold
	recCommit
	recRestore
	recUsage
	recQuota
)

type snapRecord struct {
	T         uint8              `cbor:"1,keyasint"`
	K         []byte             `cbor:"2,keyasint,omitempty"`
	Root      *Root              `cbor:"3,keyasint,omitempty"`
	Workspace *Workspace         `cbor:"4,keyasint,omitempty"`
	Path      *pathRecord        `cbor:"5,keyasint,omitempty"`
	Dir       *dirRecord         `cbor:"6,keyasint,omitempty"`
	Blob      *blobRef           `cbor:"7,keyasint,omitempty"`
	Dedupe    *dedupeRecord      `cbor:"8,keyasint,omitempty"`
	S         []byte             `cbor:"9,keyasint,omitempty"`
	N         int64              `cbor:"10,keyasint,omitempty"`
	Snap      *WorkbenchSnapshot `cbor:"11,keyasint,omitempty"`
	Commit    *CommitRecord      `cbor:"12,keyasint,omitempty"`
	Restore   *RestoreOp         `cbor:"13,keyasint,omitempty"`
	Backup    *BackupHoldRecord  `cbor:"32,keyasint,omitempty"`
	Usage     *Usage             `cbor:"14,keyasint,omitempty"`
	Quota     *Quota             `cbor:"15,keyasint,omitempty"`
	Retention *Retention         `cbor:"33,keyasint,omitempty"`
	Proposal  *Proposal          `cbor:"35,keyasint,omitempty"`
	Feed      *feedRecord        `cbor:"34,keyasint,omitempty"`
}

// recRetentionPolicy is the snapshot record tag of a root's history retention policy
// (never renumber).
const recRetentionPolicy uint8 = 33

// WriteTo streams the snapshot to w as a sequence of CBOR records (header, records in key
// order per map, end marker), in the oldest format that holds the state (formatFor): a
// replica of the previous release installs what this binary wrote while no command of
// the newer format was applied, as during a rolling upgrade. Equal states write equal
// bytes.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	return s.writeFormat(w, formatFor(s.st))
}

// formatFor returns 3 when st holds what format 3 added (a proposal, a change feed, a
// root's history retention policy: a format-2 reader would fail on their records; a root
// re-prune step, which it would drop), else 1 while st holds nothing format 2 added
// (backup holds, quotas, the purge steps of a deleted workbench: a format-1 reader would
// fail on the first two and drop the last), else 2. The usage records are left out of
// format 1: a format-1 stream restores with its usage recomputed, equal by the usage
// invariant. A shard with a feed (Options.FeedMaxPerRoot ≥ 0) writes format 3 from its
// first change on, so a rolling upgrade from a release without the feed runs with
// FeedMaxPerRoot < 0 until every replica runs this one.
func formatFor(st *state) uint16 {
	if st.props.byID.Len() > 0 || st.feed.roots.Len() > 0 || st.retentions.Len() > 0 {
		return 3
	}
	purging, repruning := false, false
	st.retention.Scan(func(_, v string) bool {
		purging = purging || v != "" && v[0] == retainPurge
		repruning = repruning || v != "" && v[0] == retainRootReprune
		return !repruning
	})
	switch {
	case repruning:
		return 3
	case purging || st.backups.Len() > 0 || st.quotas.Len() > 0:
		return 2
	}
	return 1
}

// writeFormat is WriteTo in the given format (1..SnapshotFormat).
func (s *Snapshot) writeFormat(w io.Writer, format uint16) (int64, error) {
	cw := &countingWriter{w: bufio.NewWriterSize(w, 64<<10)}
	enc := encMode.NewEncoder(cw)
	st := s.st
	if err := enc.Encode(snapHeader{Format: format, Version: st.version, NowMs: st.nowMs,
		NextRootUID: st.nextRootUID, NextIncarnation: st.nextIncarnation, Seq: st.seq, NextListID: st.nextListID}); err != nil {
		return cw.n, err
	}
	var err error
	emit := func(r snapRecord) bool {
		err = enc.Encode(r)
		return err == nil
	}
	st.roots.Scan(func(k string, v *Root) bool { return emit(snapRecord{T: recRoot, K: []byte(k), Root: v}) })
	st.workspaces.Scan(func(k string, v *Workspace) bool {
		return err == nil && emit(snapRecord{T: recWorkspace, K: []byte(k), Workspace: v})
	})
	st.paths.Scan(func(k string, v *pathRecord) bool {
		return err == nil && emit(snapRecord{T: recPath, K: []byte(k), Path: v})
	})
	st.dirs.Scan(func(k string, v dirRecord) bool {
		return err == nil && emit(snapRecord{T: recDir, K: []byte(k), Dir: &v})
	})
	st.blobs.Scan(func(k string, v blobRef) bool {
		return err == nil && emit(snapRecord{T: recBlob, K: []byte(k), Blob: &v})
	})
	st.dedupe.Scan(func(k string, v *dedupeRecord) bool {
		return err == nil && emit(snapRecord{T: recDedupe, K: []byte(k), Dedupe: v})
	})
	st.dedupeOrder.Scan(func(k, v string) bool {
		return err == nil && emit(snapRecord{T: recDedupeOrder, K: []byte(k), S: []byte(v)})
	})
	st.dedupeCount.Scan(func(k string, v int64) bool {
		return err == nil && emit(snapRecord{T: recDedupeCount, K: []byte(k), N: v})
	})
	st.retention.Scan(func(k, v string) bool {
		return err == nil && emit(snapRecord{T: recRetention, K: []byte(k), S: []byte(v)})
	})
	st.snapshots.Scan(func(k string, v *WorkbenchSnapshot) bool {
		return err == nil && emit(snapRecord{T: recSnapshot, K: []byte(k), Snap: v})
	})
	st.snapNames.Scan(func(k string, v uint64) bool {
		return err == nil && emit(snapRecord{T: recSnapName, K: []byte(k), N: int64(v)})
	})
	st.holds.Scan(func(k string, v int64) bool {
		return err == nil && emit(snapRecord{T: recHold, K: []byte(k), N: v})
	})
	st.commits.Scan(func(k string, v *CommitRecord) bool {
		return err == nil && emit(snapRecord{T: recCommit, K: []byte(k), Commit: v})
	})
	st.restores.Scan(func(k string, v *RestoreOp) bool {
		return err == nil && emit(snapRecord{T: recRestore, K: []byte(k), Restore: v})
	})
	st.backups.Scan(func(k string, v BackupHoldRecord) bool {
		return err == nil && emit(snapRecord{T: recBackupHold, K: []byte(k), Backup: &v})
	})
	st.usage.Scan(func(k string, v Usage) bool {
		return err == nil && format >= 2 && emit(snapRecord{T: recUsage, K: []byte(k), Usage: &v})
	})
	st.quotas.Scan(func(k string, v Quota) bool {
		return err == nil && emit(snapRecord{T: recQuota, K: []byte(k), Quota: &v})
	})
	st.retentions.Scan(func(k string, v Retention) bool {
		return err == nil && emit(snapRecord{T: recRetentionPolicy, K: []byte(k), Retention: &v})
	})
	st.props.byID.Scan(func(k string, v *Proposal) bool {
		return err == nil && format >= 3 && emit(snapRecord{T: recProposal, K: []byte(k), Proposal: v})
	})
	if err == nil && format >= 3 {
		st.feed.writeFeed(emit)
	}
	if err != nil {
		return cw.n, err
	}
	if err := enc.Encode(snapRecord{T: recEnd}); err != nil {
		return cw.n, err
	}
	return cw.n, cw.w.(*bufio.Writer).Flush()
}

// Restore replaces the whole state with the snapshot streamed from r. On any error the
// FSM keeps its previous state. The stream is decoded record by record.
func (f *FSM) Restore(r io.Reader) error {
	st, err := readSnapshot(r)
	if err != nil {
		return err
	}
	st.rebuildIndex()
	st.rebuildHeldSnapshots()
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}

var snapDecMode, _ = cbor.DecOptions{MaxArrayElements: 1 << 24, MaxMapPairs: 1 << 20, MaxNestedLevels: 16}.DecMode()

func readSnapshot(r io.Reader) (*state, error) {
	dec := snapDecMode.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	var h snapHeader
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	if h.Format == 0 || h.Format > SnapshotFormat {
		return nil, fmt.Errorf("snapshot format %d is not supported (this binary reads 1..%d)", h.Format, SnapshotFormat)
	}
	st := newState()
	st.version, st.nowMs, st.nextRootUID, st.nextIncarnation, st.seq = h.Version, h.NowMs, h.NextRootUID, h.NextIncarnation, h.Seq
	st.nextListID = h.NextListID
	for n := 0; ; n++ {
		var rec snapRecord
		if err := dec.Decode(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("snapshot record %d: %w", n, err)
		}
		missing := false
		switch rec.T {
		case recEnd:
			st.rebuildHistory()
			st.props.rebuild()
			if h.Format < 2 {
				st.rebuildHeldSnapshots()
				st.usage = st.recomputeUsage()
			}
			return st, nil
		case recRoot:
			missing = rec.Root == nil
			st.roots.Set(string(rec.K), rec.Root)
		case recWorkspace:
			missing = rec.Workspace == nil
			st.workspaces.Set(string(rec.K), rec.Workspace)
		case recPath:
			missing = rec.Path == nil
			st.paths.Set(string(rec.K), rec.Path)
		case recDir:
			missing = rec.Dir == nil
			if !missing {
				st.dirs.Set(string(rec.K), *rec.Dir)
			}
		case recBlob:
			missing = rec.Blob == nil
			if !missing {
				st.blobs.Set(string(rec.K), *rec.Blob)
			}
		case recDedupe:
			missing = rec.Dedupe == nil
			st.dedupe.Set(string(rec.K), rec.Dedupe)
		case recDedupeOrder:
			st.dedupeOrder.Set(string(rec.K), string(rec.S))
		case recDedupeCount:
			st.dedupeCount.Set(string(rec.K), rec.N)
		case recRetention:
			missing = len(rec.S) == 0
			st.retention.Set(string(rec.K), string(rec.S))
		case recSnapshot:
			missing = rec.Snap == nil
			st.snapshots.Set(string(rec.K), rec.Snap)
		case recSnapName:
			st.snapNames.Set(string(rec.K), uint64(rec.N))
		case recHold:
			missing = rec.N <= 0
			st.holds.Set(string(rec.K), rec.N)
		case recCommit:
			missing = rec.Commit == nil
			st.commits.Set(string(rec.K), rec.Commit)
		case recRestore:
			missing = rec.Restore == nil
			st.restores.Set(string(rec.K), rec.Restore)
		case recBackupHold:
			missing = rec.Backup == nil
			if !missing {
				st.backups.Set(string(rec.K), *rec.Backup)
			}
		case recUsage:
			missing = rec.Usage == nil || !quotaKeyOK(rec.K)
			if !missing {
				st.usage.Set(string(rec.K), *rec.Usage)
			}
		case recQuota:
			missing = rec.Quota == nil || !quotaKeyOK(rec.K)
			if !missing {
				st.quotas.Set(string(rec.K), *rec.Quota)
			}
		case recRetentionPolicy:
			missing = rec.Retention == nil || !quotaKeyOK(rec.K) || rec.Retention.Validate() != nil
			if !missing {
				st.retentions.Set(string(rec.K), *rec.Retention)
			}
		case recProposal:
			missing = rec.Proposal == nil
			st.props.byID.Set(string(rec.K), rec.Proposal)
		case recFeed:
			missing = !st.feed.readFeed(rec.K, rec.Feed)
		default:
			return nil, fmt.Errorf("snapshot record %d: unknown tag %d", n, rec.T)
		}
		if missing {
			return nil, fmt.Errorf("snapshot record %d (tag %d): value missing", n, rec.T)
		}
	}
}

// StateDigest returns the SHA-256 of the snapshot stream of the current state: two FSMs
// hold identical state exactly when their digests are equal.
func (f *FSM) StateDigest() Digest {
	h := sha256.New()
	// The current format always: it covers the maintained usage too.
	if _, err := f.Snapshot().writeFormat(h, SnapshotFormat); err != nil {
		panic(err) // writing to a hash cannot fail
	}
	var d Digest
	copy(d[:], h.Sum(nil))
	return d
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// rebuildHistory derives the history set from the path chains.
func (s *state) rebuildHistory() {
	s.paths.Scan(func(k string, rec *pathRecord) bool {
		if len(rec.Chain) > 1 || len(rec.Chain) == 1 && rec.Chain[0].Entry == nil {
			s.history.Set(k, struct{}{})
		}
		s.trackCompactable(k, rec.live())
		return true
	})
}
