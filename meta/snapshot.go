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
// policy change queues (retention.go). Format 4 added the move records, the incarnation
// maps of imported roots (move.go) and the version shift.
const SnapshotFormat = 4

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
	VersionShift    uint64 `cbor:"8,keyasint,omitempty"`
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
	Move      *MoveRecord        `cbor:"38,keyasint,omitempty"`
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
	if st.moves.Len() > 0 || st.moveIncs.Len() > 0 || st.shift != 0 {
		return 4 // format 4: a move (move.go); a format-3 reader would fail on it
	}
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
	st := s.st
	sw := &snapWriter{w: w, buf: make([]byte, 0, snapWriteBytes+4<<10)}
	var err error
	sw.buf, err = appendReflected(sw.buf, snapHeader{Format: format, Version: st.version, NowMs: st.nowMs,
		NextRootUID: st.nextRootUID, NextIncarnation: st.nextIncarnation, Seq: st.seq, NextListID: st.nextListID,
		VersionShift: st.shift})
	if err != nil {
		return 0, err
	}
	for _, t := range snapTables {
		if format >= t.since {
			t.write(st, sw.record)
		}
	}
	sw.record("", &snapRecord{T: recEnd})
	sw.flush()
	return sw.n, sw.err
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
	f.st, f.view = st, nil
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
	st.nextListID, st.shift = h.NextListID, h.VersionShift
	for n := 0; ; n++ {
		var rec snapRecord
		if err := dec.Decode(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("snapshot record %d: %w", n, err)
		}
		if rec.T == recEnd {
			st.rebuildHistory()
			st.props.rebuild()
			if h.Format < 2 {
				st.rebuildHeldSnapshots()
				st.usage = st.recomputeUsage()
			}
			return st, nil
		}
		t := snapTableByTag[rec.T]
		if t == nil {
			return nil, fmt.Errorf("snapshot record %d: unknown tag %d", n, rec.T)
		}
		if !t.read(st, rec) {
			return nil, fmt.Errorf("snapshot record %d (tag %d, %s): value missing", n, rec.T, t.name)
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
