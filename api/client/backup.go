package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Admin routes of backups and scrubs (issue 17).
const (
	// AdminBackupPath streams a backup (POST, application/x-tar).
	AdminBackupPath = "/v1/admin/backup"
	// AdminBackupReleasePath releases a backup's hold (POST).
	AdminBackupReleasePath = "/v1/admin/backup/release"
	// AdminBackupHoldsPath lists the backup holds (GET).
	AdminBackupHoldsPath = "/v1/admin/backup/holds"
	// AdminScrubPath runs one bounded scrub call (POST).
	AdminScrubPath = "/v1/admin/scrub"
)

// Backup places backup id's hold on every shard for destination dest (where the caller
// writes the backup: backup.DestinationOf names it) and returns the backup stream (a tar
// stream of ops/backup's parts); the caller reads it to its end and closes it (backup.Write
// does). Errors: *Error (InvalidArguments, Conflict when another destination's backup
// holds id, RoutingUnavailable, …) when the server refused before streaming.
func (a *Admin) Backup(ctx context.Context, id, dest string) (io.ReadCloser, error) {
	body := map[string]string{"backup": id}
	if dest != "" {
		body["destination"] = dest
	}
	req, err := jsonRequest(ctx, http.MethodPost, a.tr.base+AdminBackupPath, body)
	if err != nil {
		return nil, err
	}
	// Replayable: placing a hold that exists for the same destination changes nothing.
	resp, err := a.tr.openStream(req, replayable)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ReleaseBackup releases backup id's hold on every shard; the answer says per shard
// (decimal id) whether a hold was released. Releasing twice is not an error.
func (a *Admin) ReleaseBackup(ctx context.Context, id string) (map[string]bool, error) {
	var out struct {
		Released map[string]bool `json:"released"`
	}
	if err := a.tr.postTool(ctx, a.tr.base+AdminBackupReleasePath, map[string]string{"backup": id}, &out, replayable); err != nil {
		return nil, err
	}
	return out.Released, nil
}

// BackupHold is one backup's hold on one shard (GET /v1/admin/backup/holds).
type BackupHold struct {
	Backup string `json:"backup"`
	Shard  int    `json:"shard"`
	// Version is the shard version the hold was placed at.
	Version uint64 `json:"version"`
	// PlacedAt is the command time it was placed at (RFC 3339).
	PlacedAt time.Time `json:"placed_at"`
	// Destination is where the backup that placed it was written, as it named it
	// (backup.DestinationOf); "" when it named none.
	Destination string `json:"destination,omitempty"`
}

// BackupHolds lists the backup holds of every shard, by shard, then backup id: those of
// finished backups and of backups a crash cut off alike.
func (a *Admin) BackupHolds(ctx context.Context) ([]BackupHold, error) {
	out, err := getJSON[struct {
		Holds []BackupHold `json:"holds"`
	}](ctx, a.tr, a.tr.base+AdminBackupHoldsPath)
	if err != nil {
		return nil, err
	}
	return out.Holds, nil
}

// ScrubRequest is one bounded scrub call (POST /v1/admin/scrub).
type ScrubRequest struct {
	// Agent limits the scrub to one agent root; "" scrubs every root.
	Agent string `json:"agent,omitempty"`
	// After is the Next of the previous call ("" starts at the top).
	After string `json:"after,omitempty"`
	// BytesPerSecond bounds the bytes read per second (0: unbounded).
	BytesPerSecond int64 `json:"bytes_per_second,omitempty"`
	// MaxBlobs and MaxDurationMs bound the call (0: the server's defaults).
	MaxBlobs      int   `json:"max_blobs,omitempty"`
	MaxDurationMs int64 `json:"max_duration_ms,omitempty"`
}

// ScrubDamage is one referenced blob that is missing or does not verify.
type ScrubDamage struct {
	Shard      int    `json:"shard"`
	Agent      string `json:"agent"`
	Digest     string `json:"digest"`
	Kind       string `json:"kind"` // missing or corrupt
	References int64  `json:"references"`
	Detail     string `json:"detail"`
}

// ScrubReport is the answer of one scrub call: Done, or Next to resume after.
type ScrubReport struct {
	Blobs   int           `json:"blobs"`
	Bytes   int64         `json:"bytes"`
	Missing int           `json:"missing"`
	Corrupt int           `json:"corrupt"`
	Damage  []ScrubDamage `json:"damage"`
	Done    bool          `json:"done"`
	Next    string        `json:"next"`
}

// Scrub runs one bounded scrub call on the shards the server leads. Errors: *Error
// InvalidArguments (a bad field or position), RoutingUnavailable (the node leads no
// shard), ObjectUnavailable (the object store failed; resume from the last Next).
func (a *Admin) Scrub(ctx context.Context, req ScrubRequest) (*ScrubReport, error) {
	if req.BytesPerSecond < 0 || req.MaxBlobs < 0 || req.MaxDurationMs < 0 {
		return nil, fmt.Errorf("client: ScrubRequest bounds must not be negative")
	}
	return postJSON[ScrubReport](ctx, a.tr, a.tr.base+AdminScrubPath, req, replayable)
}
