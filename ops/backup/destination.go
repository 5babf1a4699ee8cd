package backup

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

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
