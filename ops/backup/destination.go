package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNoDestination: the destination a backup is read from does not exist (a directory
// that is not there).
var ErrNoDestination = errors.New("backup destination not found")

// ErrNotADirectory: a directory destination names a file that is not a directory.
var ErrNotADirectory = errors.New("backup destination is not a directory")

// ErrOtherBackup: the destination holds another backup (*OtherBackupError says which).
var ErrOtherBackup = errors.New("the destination holds another backup")

// OtherBackupError is a destination that holds backup Backup where backup Want was
// expected: whole (Complete: its manifest names it) or cut off before its manifest (its
// identity.json names it).
type OtherBackupError struct {
	Dest, Backup, Want string
	Complete           bool
}

func (e *OtherBackupError) Error() string {
	state := "a backup cut off before its manifest"
	if e.Complete {
		state = "a complete backup"
	}
	return fmt.Sprintf("%s holds backup %q (%s), not %q", e.Dest, e.Backup, state, e.Want)
}

func (e *OtherBackupError) Is(target error) bool { return target == ErrOtherBackup }

// DestinationOf names t as a backup hold records it (meta.BackupHold.Dest): a directory
// by its absolute path ("dir:///abs/path"), an s3:// prefix by its bucket, prefix and
// endpoint host. Two runs of one backup into one destination name it alike, so the second
// keeps the first's hold; another destination under the same id is refused.
func DestinationOf(t Target) string {
	switch d := t.(type) {
	case dirTarget:
		p, err := filepath.Abs(string(d))
		if err != nil {
			p = filepath.Clean(string(d))
		}
		return "dir://" + p
	case *s3Target:
		return "s3://" + strings.TrimSuffix(d.bucket+"/"+d.prefix, "/") + " at " + strings.ToLower(d.host)
	}
	return t.String()
}

// CheckDestination checks, before a backup of id places any hold, that it can be written
// to t: a directory destination is a directory (created when missing) that takes a file,
// and t holds no other backup (CheckBackupID: the same id is the same backup run again).
// Errors: ErrNotADirectory, an *OtherBackupError, or the destination's error.
func CheckDestination(ctx context.Context, t Target, id string) error {
	if d, ok := t.(dirTarget); ok {
		if err := d.prepare(); err != nil {
			return err
		}
	}
	return CheckBackupID(ctx, t, id)
}

// prepare creates the directory when missing and writes and removes a temporary file in
// it.
func (d dirTarget) prepare() error {
	dir := string(d)
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("%w: %s is a file", ErrNotADirectory, dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("%w: %s: %v", ErrNotADirectory, dir, err)
		}
		return err
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// missing reports whether the directory does not exist.
func (d dirTarget) missing() bool {
	_, err := os.Stat(string(d))
	return errors.Is(err, os.ErrNotExist)
}

// ErrHoldGone: the node no longer keeps a backup's hold on some shard (released, or the
// hold under that id is another backup's), so garbage collection may have deleted blobs
// the backup references and its restore may miss data.
var ErrHoldGone = errors.New("the backup's hold is gone")

// CheckHolds compares the holds a node keeps of m's backup (shard → the version its hold
// was placed at, as the node lists them) with the hold versions m records: every shard of
// m must keep a hold placed at the version m names. Errors: ErrHoldGone naming the first
// shard that does not.
func (m *Manifest) CheckHolds(holds map[int]uint64) error {
	id := m.Identity.Backup
	for _, s := range m.Identity.Shards {
		v, ok := holds[s.Shard]
		switch {
		case !ok:
			return fmt.Errorf("%w: shard %d keeps no hold of backup %s (it was released): blobs the backup references may have been collected, and its restore may miss data", ErrHoldGone, s.Shard, id)
		case v != s.HoldVersion:
			return fmt.Errorf("%w: shard %d's hold of backup %s was placed at version %d, this backup's at %d: the hold is another backup's under the same id, "+
				"and blobs this backup references may have been collected", ErrHoldGone, s.Shard, id, v, s.HoldVersion)
		}
	}
	return nil
}
