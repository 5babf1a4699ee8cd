package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairnstore/cairn/internal/durable"
)

// RestoreMarker is the file a restore writes into the data directory before anything
// else and removes after everything else (node-id last but one): while it exists the
// directory holds a restore that did not finish (a kill -9, a full disk), which no node
// may start on (CheckRestoreMarker) and which the same command run again starts over.
const RestoreMarker = "restore-incomplete"

// ErrRestoreIncomplete: the data directory holds a restore that did not finish.
var ErrRestoreIncomplete = errors.New("the data directory holds a restore that did not finish")

// restoreMarker is the marker's content (JSON).
type restoreMarker struct {
	// Backup is the backup the first cut-off restore was of.
	Backup string `json:"backup"`
	// KeysBefore says the data directory held keys.json before the first restore began
	// (made with `cairn admin key create --data-dir`): a restore run again keeps it.
	KeysBefore bool `json:"keys_before"`
}

// CheckRestoreMarker fails with ErrRestoreIncomplete, saying how to finish it, when
// dataDir holds a restore that did not finish. `cairn serve` checks it before it writes
// anything into the directory.
func CheckRestoreMarker(dataDir string) error {
	m, err := readRestoreMarker(dataDir)
	if err != nil || m == nil {
		return err
	}
	return fmt.Errorf("%w (data directory %s, backup %q; %s exists): run `cairn admin restore --from BACKUP --data-dir %s` again, "+
		"which starts the restore over", ErrRestoreIncomplete, dataDir, m.Backup, RestoreMarker, dataDir)
}

// readRestoreMarker returns dataDir's marker, nil when there is none.
func readRestoreMarker(dataDir string) (*restoreMarker, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, RestoreMarker))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dataDir, err)
	}
	var m restoreMarker
	if err := json.Unmarshal(b, &m); err != nil {
		// Torn or edited: still a restore that did not finish; keys.json is kept.
		return &restoreMarker{KeysBefore: true}, nil
	}
	return &m, nil
}

// beginRestore prepares dataDir for a restore of backup id and writes the marker: a
// directory that holds one of nodeFiles (a node, or a restore that finished) is
// ErrNotEmpty; one with a marker (a restore cut off) is cleared of what that restore
// wrote (nodeFiles, and keys.json unless it was there before), keeping the marker of the
// first restore. Blob files a cut-off restore wrote stay: their names are their digests.
func beginRestore(dataDir, id string, nodeFiles []string) error {
	prev, err := readRestoreMarker(dataDir)
	if err != nil {
		return err
	}
	if prev == nil {
		for _, p := range nodeFiles {
			if _, err := os.Stat(filepath.Join(dataDir, p)); err == nil {
				return fmt.Errorf("%w: %s holds %s", ErrNotEmpty, dataDir, p)
			}
		}
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return err
		}
		_, kerr := os.Stat(filepath.Join(dataDir, KeysPart))
		b, err := json.Marshal(restoreMarker{Backup: id, KeysBefore: kerr == nil})
		if err != nil {
			return err
		}
		return writeFile(filepath.Join(dataDir, RestoreMarker), b)
	}
	drop := nodeFiles
	if !prev.KeysBefore {
		drop = append(drop[:len(drop):len(drop)], KeysPart)
	}
	for _, p := range drop {
		if err := os.RemoveAll(filepath.Join(dataDir, p)); err != nil {
			return fmt.Errorf("clear the restore that did not finish: %w", err)
		}
	}
	return nil
}

// finishRestore removes the marker, durably: the restore is whole.
func finishRestore(dataDir string) error {
	return durable.Remove(filepath.Join(dataDir, RestoreMarker))
}
