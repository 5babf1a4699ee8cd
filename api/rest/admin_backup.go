package rest

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/shard/worker"
)

// Admin routes of backups and scrubs (issue 17), served on the admin listener.
const (
	adminBackupPath        = "/v1/admin/backup"
	adminBackupReleasePath = "/v1/admin/backup/release"
	adminBackupHoldsPath   = "/v1/admin/backup/holds"
	adminScrubPath         = "/v1/admin/scrub"
)

// Scrubber runs scrub calls over the shards this node leads: the node's leader workers
// (*worker.Set) implement it.
type Scrubber interface {
	Scrub(ctx context.Context, opts worker.ScrubOptions) (worker.ScrubReport, error)
}

// Backups writes and releases backups of the node (or cluster): api/server's Node
// implements it.
type Backups interface {
	// WriteBackup places backup id's hold for destination dest on every shard, then
	// writes the backup's parts (ops/backup's layout) to w as a tar stream, identity.json
	// last. start is called once before the first byte (the answer is committed from then
	// on). A hold of id that exists for another destination is Conflict (another backup
	// uses the id); one for the same destination is kept (the same backup run again).
	WriteBackup(ctx context.Context, id, dest string, start func() io.Writer) error
	// ReleaseBackup releases backup id's hold on every shard and reports per shard
	// whether one was held.
	ReleaseBackup(ctx context.Context, id string) (map[int]bool, error)
	// BackupHolds lists the backup holds every shard keeps, by shard, then backup id:
	// finished backups' and those of backups a crash cut off alike.
	BackupHolds(ctx context.Context) ([]BackupHold, error)
}

// BackupHold is one backup's hold on one shard: the shard version and the command time
// it was placed at, and the destination the backup named ("" when it named none).
type BackupHold struct {
	Backup      string
	Shard       int
	Version     uint64
	PlacedAt    time.Time
	Destination string
}

type backupRequest struct {
	// Backup is the backup's id (an agent-id-like name).
	Backup string `json:"backup"`
	// Destination names where the caller writes the backup (`cairn admin backup` sends
	// its --to, made absolute); the hold records it, so that the same id for another
	// destination is refused (409 Conflict) and a retry of the same backup is not.
	// Optional: a caller that names none is held as the same backup as every other
	// call without one under that id.
	Destination string `json:"destination,omitempty"`
}

// adminBackup serves POST /v1/admin/backup: 200 with an application/x-tar stream. An
// error before the stream started is the error envelope; one after it ends the stream
// before identity.json, its last part, which the caller reads as an incomplete backup.
func (h *adminHandler) adminBackup(w http.ResponseWriter, r *http.Request) {
	var in backupRequest
	if !h.adminBody(w, r, &in) {
		return
	}
	started := false
	err := h.opts.Backups.WriteBackup(r.Context(), in.Backup, in.Destination, func() io.Writer {
		started = true
		w.Header().Set("Content-Type", "application/x-tar")
		w.WriteHeader(http.StatusOK)
		return w
	})
	switch {
	case err == nil:
	case !started:
		h.writeError(w, r, err, noPrecondition)
	case h.log != nil:
		h.log.Error("backup stream failed", "backup", in.Backup, "err", err)
	}
}

// adminBackupRelease serves POST /v1/admin/backup/release: 200 {"released": {shard: bool}}.
func (h *adminHandler) adminBackupRelease(w http.ResponseWriter, r *http.Request) {
	var in backupRequest
	if !h.adminBody(w, r, &in) {
		return
	}
	rel, err := h.opts.Backups.ReleaseBackup(r.Context(), in.Backup)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	shards := map[string]any{}
	for id, ok := range rel {
		shards[strconv.Itoa(id)] = ok
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "backup": in.Backup, "released": shards})
}

// adminBackupHolds serves GET /v1/admin/backup/holds: 200 {"holds": [{"backup", "shard",
// "version", "placed_at", "destination"}]}, one entry per backup and shard ("destination"
// only when the backup named one).
func (h *adminHandler) adminBackupHolds(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	if r.URL.RawQuery != "" {
		h.writeError(w, r, invalidArg("query", "this request takes no arguments"), noPrecondition)
		return
	}
	holds, err := h.opts.Backups.BackupHolds(r.Context())
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	out := make([]map[string]any, 0, len(holds))
	for _, hd := range holds {
		h := map[string]any{"backup": hd.Backup, "shard": hd.Shard, "version": hd.Version,
			"placed_at": hd.PlacedAt.UTC().Format(time.RFC3339Nano)}
		if hd.Destination != "" {
			h["destination"] = hd.Destination
		}
		out = append(out, h)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "holds": out})
}

type scrubRequest struct {
	Agent          string `json:"agent"`
	After          string `json:"after"`
	BytesPerSecond int64  `json:"bytes_per_second"`
	MaxBlobs       int    `json:"max_blobs"`
	MaxDurationMs  int64  `json:"max_duration_ms"`
}

// adminScrub serves POST /v1/admin/scrub: one bounded scrub call (shard/worker's Scrub)
// over the shards this node leads; 200 with the report, whose "next" resumes it.
func (h *adminHandler) adminScrub(w http.ResponseWriter, r *http.Request) {
	var in scrubRequest
	if !h.adminBody(w, r, &in) {
		return
	}
	for _, c := range []struct {
		field string
		v     int64
	}{{"bytes_per_second", in.BytesPerSecond}, {"max_blobs", int64(in.MaxBlobs)}, {"max_duration_ms", in.MaxDurationMs}} {
		if c.v < 0 {
			h.writeError(w, r, invalidArg(c.field, "must not be negative"), noPrecondition)
			return
		}
	}
	after, err := worker.ParseScrubPosition(in.After)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	rep, err := h.opts.Scrub.Scrub(r.Context(), worker.ScrubOptions{Agent: in.Agent, After: after, BytesPerSecond: in.BytesPerSecond,
		MaxBlobs: in.MaxBlobs, MaxDuration: time.Duration(in.MaxDurationMs) * time.Millisecond})
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	damage := make([]map[string]any, 0, len(rep.Damage))
	for _, d := range rep.Damage {
		damage = append(damage, map[string]any{"shard": d.Shard, "agent": d.Agent, "digest": "sha256:" + hex.EncodeToString(d.Digest[:]),
			"kind": d.Kind, "references": d.References, "detail": d.Detail})
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "blobs": rep.Blobs, "bytes": rep.Bytes,
		"missing": rep.Missing, "corrupt": rep.Corrupt, "damage": damage, "done": rep.Done, "next": rep.Next.String()})
}

// adminBody checks an admin POST with a JSON body and decodes it; false when it answered.
func (h *adminHandler) adminBody(w http.ResponseWriter, r *http.Request, in any) bool {
	if !allow(w, r, http.MethodPost) {
		return false
	}
	if err := jsonBody(r, in); err != nil {
		h.writeError(w, r, err, noPrecondition)
		return false
	}
	return true
}
