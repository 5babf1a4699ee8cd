package meta

import (
	"fmt"

	"github.com/tidwall/btree"
)

// Backup holds (issue 17, `cairn admin backup`): a backup copies a shard's metadata at one
// shard version and leaves the blobs in the object store, so the blobs that metadata
// references must outlive the backup. A hold, placed before the backup's snapshot is
// taken, keeps them.
//
// The rule uses command time, the only time a blob record keeps: a hold placed at command
// time T protects every zero-count blob whose ZeroSinceMs ≥ T. A blob the backup's
// snapshot (taken at a version at or after the hold's) references has a positive count at
// that version, so if it is unreferenced now it reached zero later, at a command time ≥ T;
// a blob that reached zero before T was unreferenced at the hold and at the snapshot. So
// GCIntent never accepts a blob some backup may reference, and a released hold lets the
// next sweep collect what it kept. Orphans (no record) were never published and are not
// kept. The hold travels in Raft snapshots, so a cluster restored from a backup keeps the
// blobs of the backup it came from until that backup is deleted.
//
// One id is one backup: the hold records the destination its backup names, and a hold of
// the id for another destination is refused, so that deleting one backup (which releases
// its hold by id) never releases the hold another backup needs.

// Command operations of backup holds (never renumber).
const (
	OpBackupHold    Op = 32
	OpBackupRelease Op = 33
)

// MaxBackupHolds bounds the backup holds one shard keeps.
const MaxBackupHolds = 256

// recBackupHold is the snapshot record tag of a backup hold (never renumber).
const recBackupHold uint8 = 32

// BackupHold places the hold of backup ID (ValidateName syntax), written to destination
// Dest (the backup's archive, as `cairn admin backup` names it; "" from a caller that
// names none). Placing a hold that exists with the same Dest changes nothing
// (Result.Created false): a backup run again after a crash keeps the hold of its first run.
// A hold of ID that exists with another Dest is Conflict (reason backup_id_in_use): two
// backups under one id would share one hold, and deleting either would release it for
// both. More than MaxBackupHolds holds is ResourceExhausted.
type BackupHold struct {
	ID string `cbor:"1,keyasint"`
	// Dest needs cluster version BackupDestVersion (a replica of an older release would
	// ignore it and accept the hold of another destination).
	Dest string `cbor:"2,keyasint,omitempty"`
}

// BackupDestVersion is the cluster version of BackupHold.Dest.
const BackupDestVersion = 8

func (c BackupHold) fieldVersion() int {
	if c.Dest != "" {
		return BackupDestVersion
	}
	return 1
}

// MaxBackupDestBytes bounds BackupHold.Dest.
const MaxBackupDestBytes = 4096

// ReasonBackupIDInUse is the Reason of the Conflict of a hold whose id another
// destination's backup holds.
const ReasonBackupIDInUse = "backup_id_in_use"

// BackupRelease releases the hold of backup ID. Result.Retired says whether a hold was
// released (false: there was none, which is not an error).
type BackupRelease struct {
	ID string `cbor:"1,keyasint"`
}

func (BackupHold) Op() Op    { return OpBackupHold }
func (BackupRelease) Op() Op { return OpBackupRelease }

// BackupHoldRecord is one backup hold: the shard version and command time it was placed
// at, and the destination of the backup that placed it ("" for a hold placed without one,
// or by a release before BackupDestVersion).
type BackupHoldRecord struct {
	ID      string `cbor:"1,keyasint"`
	Version uint64 `cbor:"2,keyasint"`
	AtMs    int64  `cbor:"3,keyasint"`
	Dest    string `cbor:"4,keyasint,omitempty"`
}

func newBackupHolds() *btree.Map[string, BackupHoldRecord] {
	return new(btree.Map[string, BackupHoldRecord])
}

func (a *applier) backupHold(c BackupHold) Result {
	if err := ValidateName("backup", c.ID); err != nil {
		return Result{Err: err}
	}
	if len(c.Dest) > MaxBackupDestBytes {
		return Result{Err: invalidArg("destination", "is %d bytes long, at most %d", len(c.Dest), MaxBackupDestBytes)}
	}
	s := a.st
	if h, ok := s.backups.Get(c.ID); ok {
		if h.Dest != c.Dest {
			return Result{Err: backupIDInUse(h)}
		}
		return Result{}
	}
	if s.backups.Len() >= MaxBackupHolds {
		return Result{Err: errorf(CodeResourceExhausted, "the shard keeps %d backup holds already (at most %d): delete an old backup first", s.backups.Len(), MaxBackupHolds)}
	}
	s.backups.Set(c.ID, BackupHoldRecord{ID: c.ID, Version: s.version, AtMs: s.nowMs, Dest: c.Dest})
	return Result{Created: true}
}

// backupIDInUse is the Conflict of a hold of h's id for another destination.
func backupIDInUse(h BackupHoldRecord) *Error {
	dest := h.Dest
	if dest == "" {
		dest = "a destination it did not name"
	}
	return &Error{Code: CodeConflict, Reason: ReasonBackupIDInUse,
		Message: fmt.Sprintf("backup id %q is in use by another backup (written to %s, its hold placed at shard version %d): "+
			"pick another id, or delete that backup (`cairn admin backup delete`) or release its hold (`cairn admin backup release --id %s`) first",
			h.ID, dest, h.Version, h.ID)}
}

func (a *applier) backupRelease(c BackupRelease) Result {
	if err := ValidateName("backup", c.ID); err != nil {
		return Result{Err: err}
	}
	_, ok := a.st.backups.Delete(c.ID)
	return Result{Retired: ok}
}

// backupHeld reports whether a blob that reached a zero count at command time zeroSinceMs
// may be referenced by a backup (the rule at the top of this file).
func (s *state) backupHeld(zeroSinceMs int64) bool {
	held := false
	s.backups.Scan(func(_ string, h BackupHoldRecord) bool {
		held = h.AtMs <= zeroSinceMs
		return !held
	})
	return held
}

// BackupHold returns the hold of backup id the snapshot's state keeps.
func (s *Snapshot) BackupHold(id string) (BackupHoldRecord, bool) { return s.st.backups.Get(id) }

// BackupHolds returns the shard's backup holds in id order.
func (sv ShardView) BackupHolds() []BackupHoldRecord {
	var out []BackupHoldRecord
	sv.v.st.backups.Scan(func(_ string, h BackupHoldRecord) bool {
		out = append(out, h)
		return true
	})
	return out
}

// BackupHeld reports whether a backup hold keeps a zero-count blob that reached zero at
// command time zeroSinceMs (BlobRef.ZeroSinceMs): GCIntent refuses it.
func (sv ShardView) BackupHeld(zeroSinceMs int64) bool { return sv.v.st.backupHeld(zeroSinceMs) }
