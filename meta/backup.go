package meta

import "github.com/tidwall/btree"

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

// Command operations of backup holds (never renumber).
const (
	OpBackupHold    Op = 32
	OpBackupRelease Op = 33
)

// MaxBackupHolds bounds the backup holds one shard keeps.
const MaxBackupHolds = 256

// recBackupHold is the snapshot record tag of a backup hold (never renumber).
const recBackupHold uint8 = 32

// BackupHold places the hold of backup ID (ValidateName syntax). Placing a hold that
// exists changes nothing (Result.Created false). More than MaxBackupHolds holds is
// ResourceExhausted.
type BackupHold struct {
	ID string `cbor:"1,keyasint"`
}

// BackupRelease releases the hold of backup ID. Result.Retired says whether a hold was
// released (false: there was none, which is not an error).
type BackupRelease struct {
	ID string `cbor:"1,keyasint"`
}

func (BackupHold) Op() Op    { return OpBackupHold }
func (BackupRelease) Op() Op { return OpBackupRelease }

// BackupHoldRecord is one backup hold: the shard version and command time it was placed
// at.
type BackupHoldRecord struct {
	ID      string `cbor:"1,keyasint"`
	Version uint64 `cbor:"2,keyasint"`
	AtMs    int64  `cbor:"3,keyasint"`
}

func newBackupHolds() *btree.Map[string, BackupHoldRecord] {
	return new(btree.Map[string, BackupHoldRecord])
}

func (a *applier) backupHold(c BackupHold) Result {
	if err := ValidateName("backup", c.ID); err != nil {
		return Result{Err: err}
	}
	s := a.st
	if _, ok := s.backups.Get(c.ID); ok {
		return Result{}
	}
	if s.backups.Len() >= MaxBackupHolds {
		return Result{Err: errorf(CodeResourceExhausted, "the shard keeps %d backup holds already (at most %d): delete an old backup first", s.backups.Len(), MaxBackupHolds)}
	}
	s.backups.Set(c.ID, BackupHoldRecord{ID: c.ID, Version: s.version, AtMs: s.nowMs})
	return Result{Created: true}
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
