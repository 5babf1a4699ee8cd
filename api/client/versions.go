package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// SnapshotRef selects a snapshot of a workbench: by ID (snapshot ids are numbered per
// agent root from 1) or by Name, which resolves to the newest snapshot minted with that
// name (docs/workbench.md, workbench_snapshot). The zero value selects no snapshot: where a read takes a
// SnapshotRef, it means live state.
type SnapshotRef struct {
	ID   uint64
	Name string
}

// SnapshotID and SnapshotName build a SnapshotRef.
func SnapshotID(id uint64) SnapshotRef     { return SnapshotRef{ID: id} }
func SnapshotName(name string) SnapshotRef { return SnapshotRef{Name: name} }

// ParseSnapshotRef reads a snapshot the way `?at_snapshot=` and the CLI spell it: a
// string of ASCII digits is an id, anything else a name.
func ParseSnapshotRef(s string) SnapshotRef {
	if allDigits(s) {
		if id, err := strconv.ParseUint(s, 10, 64); err == nil {
			return SnapshotRef{ID: id}
		}
	}
	return SnapshotRef{Name: s}
}

// IsZero reports whether r selects no snapshot.
func (r SnapshotRef) IsZero() bool { return r.ID == 0 && r.Name == "" }

// String renders r as ParseSnapshotRef reads it ("" for the zero value).
func (r SnapshotRef) String() string {
	if r.Name != "" {
		return r.Name
	}
	if r.ID != 0 {
		return strconv.FormatUint(r.ID, 10)
	}
	return ""
}

// check rejects a SnapshotRef that sets both ID and Name.
func (r SnapshotRef) check() error {
	if r.ID != 0 && r.Name != "" {
		return fmt.Errorf("client: snapshot %d and name %q: select a snapshot by id or by name, not both", r.ID, r.Name)
	}
	return nil
}

// queryValue is r as the value of ?at_snapshot= ("" for live state). A name of digits
// only cannot be sent there (the server would read it as an id): that is an error.
func (r SnapshotRef) queryValue() (string, error) {
	if err := r.check(); err != nil {
		return "", err
	}
	if r.Name != "" && allDigits(r.Name) {
		return "", fmt.Errorf("client: snapshot name %q is all digits: ?at_snapshot= would read it as a snapshot id", r.Name)
	}
	return r.String(), nil
}

// jsonValue is r as the contract's at_snapshot argument: an integer id or a string name;
// nil for the zero value.
func (r SnapshotRef) jsonValue() (any, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	switch {
	case r.Name != "":
		return r.Name, nil
	case r.ID != 0:
		return r.ID, nil
	}
	return nil, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// withSnapshot appends ?at_snapshot= (or &at_snapshot=) to u when at selects a snapshot.
func withSnapshot(u string, q url.Values, at SnapshotRef) (string, error) {
	v, err := at.queryValue()
	if err != nil {
		return "", err
	}
	if v != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("at_snapshot", v)
	}
	return withQuery(u, q), nil
}

// rawResult is implemented by results that keep the JSON object the server sent (their
// Raw field), for callers that print or forward it: those that embed RawJSON.
type rawResult interface{ setRaw(json.RawMessage) }

// RawJSON is embedded in a result to keep its Raw field: the result object exactly as
// the server sent it ("status":"success" first for a tool's result). doJSON fills it.
type RawJSON struct {
	Raw json.RawMessage `json:"-"`
}

func (r *RawJSON) setRaw(b json.RawMessage) { r.Raw = b }

// CommitRequest is the input of Commit (workbench_commit without id).
type CommitRequest struct {
	// Manifest is the run manifest: a JSON object. The server stores it in canonical form.
	Manifest json.RawMessage `json:"manifest"`
	// ContentDigestURI is the digest the caller claims for the content:
	// "sha256:" + 64 lowercase hex characters.
	ContentDigestURI string `json:"content_digest_uri"`
	// Replace replaces a head commit with a different identity.
	Replace bool `json:"replace,omitempty"`
	// IdempotencyKey makes retries return the first answer (docs/architecture.md#the-write-path),
	// IdempotentReplay set; the same key with another request is InvalidArguments naming
	// idempotency_key. "" for none.
	IdempotencyKey string `json:"-"`
}

// CommitResult is the result of Commit.
type CommitResult struct {
	WorkbenchID  string `json:"workbench_id"`
	Section      string `json:"section"`
	RelativePath string `json:"relative_path"`
	// Path is the presentation path of metadata/run_manifest.json.
	Path string `json:"path"`
	// SizeBytes is the size of the stored run manifest envelope.
	SizeBytes int64 `json:"size_bytes"`
	// Generation is the version of the commit (the run manifest's generation).
	Generation        uint64 `json:"generation"`
	ContentDigestURI  string `json:"content_digest_uri"`
	ManifestDigestURI string `json:"manifest_digest_uri"`
	// CommitIdentity is the hex identity: what RestoreRequest.AtCommit takes.
	CommitIdentity    string `json:"commit_identity"`
	EnvelopeDigestURI string `json:"envelope_digest_uri"`
	// TreeDigestURI is the server-computed digest over the sealed files.
	TreeDigestURI          string `json:"tree_digest_uri"`
	CommittedAtUnixSeconds int64  `json:"committed_at_unix_seconds"`
	Replace                bool   `json:"replace"`
	// IdempotentReplay is true when a commit with this identity already existed: the
	// result is its original one.
	IdempotentReplay bool `json:"idempotent_replay"`
	RawJSON
}

// Commit seals the workbench's current tree (docs/workbench.md, workbench_commit), creating a missing
// workbench. An exact retry returns the stored result with IdempotentReplay, with or
// without an IdempotencyKey, so a retrying client sends it again after a retryable answer
// either way.
//
// Errors: *Error WorkbenchCommitConflict (409: the workbench has a commit with another
// identity; set Replace), Conflict (409, retryable: writes kept landing, or a concurrent
// head change beat a replace), InvalidArguments (400: not an object, a bad digest, the
// IdempotencyKey sent before with another request).
func (c *Client) Commit(ctx context.Context, agent, wb string, req CommitRequest) (*CommitResult, error) {
	return postKeyedJSON[CommitResult](ctx, c.tr, c.tr.workbenchURL(agent, wb)+"/commit", req, true, req.IdempotencyKey)
}

// SnapshotRequest is the input of Snapshot (workbench_snapshot without id). Zero fields
// are omitted: the server's defaults apply.
type SnapshotRequest struct {
	// Name names the snapshot; "" for none. A name of digits only can be used in
	// request bodies (renew, retire, restore) but not to read at (?at_snapshot=).
	Name string `json:"name,omitempty"`
	// TTLDays is the lease in days, 1..90; 0 means the server's default (7).
	TTLDays int `json:"ttl_days,omitempty"`
	// Reason annotates the snapshot (1..256 characters); "" for none.
	Reason string `json:"reason,omitempty"`
	// Metadata annotates the snapshot: a JSON object of at most 64 properties; nil for
	// none.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// IdempotencyKey makes retries return the first answer (docs/architecture.md#the-write-path):
	// the same snapshot, lease and state, and no second snapshot; the same key with
	// another request is InvalidArguments naming idempotency_key. "" for none.
	IdempotencyKey string `json:"-"`
}

// Snapshot states (docs/workbench.md, workbench_snapshot).
const (
	SnapshotAlive   = "alive"
	SnapshotExpired = "expired"
	SnapshotRetired = "retired"
	SnapshotReaped  = "reaped"
)

// Snapshot is a snapshot record, as Snapshot, RenewSnapshot, RetireSnapshot and
// ListSnapshots report it.
type Snapshot struct {
	SnapshotID uint64 `json:"snapshot_id"`
	// Name is "" for an unnamed snapshot.
	Name string `json:"name"`
	// ReadVersion is the shard version reads at the snapshot see.
	ReadVersion uint64 `json:"read_version"`
	// LeaseExpiresUnixMs is when the lease ends, in milliseconds since the epoch (the
	// result's lease_expires_at and lease_expires_unix_ms both carry it).
	LeaseExpiresUnixMs int64 `json:"lease_expires_unix_ms"`
	Annotation         struct {
		Reason   string         `json:"reason"`
		Metadata map[string]any `json:"metadata"`
	} `json:"annotation"`
	// State is SnapshotAlive, SnapshotExpired, SnapshotRetired or SnapshotReaped.
	State       string    `json:"state"`
	WorkbenchID string    `json:"workbench_id"`
	Path        string    `json:"path"`
	TTLDays     int       `json:"ttl_days"`
	CreatedAt   time.Time `json:"created_at"`
	// RetiredAt and RetireReason are set once the snapshot is retired.
	RetiredAt    time.Time `json:"retired_at"`
	RetireReason string    `json:"retire_reason"`
	// RetireAnnotation is the retirement's annotation, nil while not retired.
	RetireAnnotation *struct {
		Reason string `json:"reason"`
	} `json:"retire_annotation"`
	// Renewed is set by RenewSnapshot when the lease moved later (a renew never shortens
	// it).
	Renewed bool `json:"renewed,omitempty"`
	// Aliases (the names that resolve to it now) and Consumers (restores in progress
	// reading from it) are reported by ListSnapshots only.
	Aliases   []string `json:"aliases,omitempty"`
	Consumers int64    `json:"consumers,omitempty"`
	RawJSON
}

// LeaseExpires is LeaseExpiresUnixMs as a time.
func (r *Snapshot) LeaseExpires() time.Time { return time.UnixMilli(r.LeaseExpiresUnixMs) }

// RetireResult is the result of RetireSnapshot.
type RetireResult struct {
	Snapshot
	// Retired is true on the first success, false on a retry (already retired).
	Retired bool `json:"retired"`
	// Reason is the retire reason: the original one on a retry.
	Reason string `json:"reason"`
}

// SnapshotList is the result of ListSnapshots.
type SnapshotList struct {
	WorkbenchID   string `json:"workbench_id"`
	Path          string `json:"path"`
	SnapshotCount int    `json:"snapshot_count"`
	// Snapshots are oldest first.
	Snapshots []Snapshot `json:"snapshots"`
	RawJSON
}

// Snapshot mints a leased read point of workbench wb as it is now (HTTP 201). Read at it
// with GetOptions.AtSnapshot, ListOptions.AtSnapshot, StatAt, WalkAt and
// DescribeWorkbench; restore from it with Restore. Under an IdempotencyKey it is safe to
// retry; without one it is sent again only if it never reached the server (each send
// that lands mints a snapshot).
//
// Errors: *Error NotFound (no such workbench), InvalidArguments (a bad name, lease,
// reason or metadata; the IdempotencyKey sent before with another request).
func (c *Client) Snapshot(ctx context.Context, agent, wb string, req SnapshotRequest) (*Snapshot, error) {
	return postKeyedJSON[Snapshot](ctx, c.tr, c.tr.workbenchURL(agent, wb)+"/snapshots", req, false, req.IdempotencyKey)
}

// snapshotSelector is the {snapshot_id | name} part of renew and retire bodies.
func snapshotSelector(snap SnapshotRef) (map[string]any, error) {
	if err := snap.check(); err != nil {
		return nil, err
	}
	switch {
	case snap.Name != "":
		return map[string]any{"name": snap.Name}, nil
	case snap.ID != 0:
		return map[string]any{"snapshot_id": snap.ID}, nil
	}
	return nil, errors.New("client: select a snapshot by id or by name")
}

// KeyOptions are the optional last argument of RenewSnapshot and RetireSnapshot (at
// most one; none sends no key).
type KeyOptions struct {
	// IdempotencyKey makes retries return the first answer (docs/architecture.md#the-write-path):
	// a renew's Renewed and a retire's Retired as the first said; the same key with
	// another request is InvalidArguments naming idempotency_key. "" for none.
	IdempotencyKey string
}

// keyOf is the idempotency key of a call's optional KeyOptions ("" for none).
func keyOf(call string, opts []KeyOptions) (string, error) {
	switch len(opts) {
	case 0:
		return "", nil
	case 1:
		return opts[0].IdempotencyKey, nil
	}
	return "", fmt.Errorf("client: %s takes at most one KeyOptions, got %d", call, len(opts))
}

// RenewSnapshot sets the snapshot's lease to now + ttlDays (0: the server's default, 7
// days). A renew that would shorten the lease returns the current record unchanged. An
// expired snapshot comes back to life. A repeat means the same as the first with or
// without an idempotency key (opts; the key keeps the first answer, Renewed included), so
// a retrying client sends it again after a retryable answer either way.
//
// Errors: *Error SnapshotNotFound (404), SnapshotExpired (410: retired or reaped),
// InvalidArguments (the idempotency key sent before with another request).
func (c *Client) RenewSnapshot(ctx context.Context, agent, wb string, snap SnapshotRef, ttlDays int, opts ...KeyOptions) (*Snapshot, error) {
	key, err := keyOf("RenewSnapshot", opts)
	if err != nil {
		return nil, err
	}
	body, err := snapshotSelector(snap)
	if err != nil {
		return nil, err
	}
	if ttlDays != 0 {
		body["ttl_days"] = ttlDays
	}
	return postKeyedJSON[Snapshot](ctx, c.tr, c.tr.workbenchURL(agent, wb)+"/snapshots/renew", body, true, key)
}

// RetireSnapshot ends the snapshot at once; reads at it fail with SnapshotExpired from
// then on. reason "" gives none. A retry without an idempotency key reports Retired false
// and the original reason; under one (opts) it answers the first answer. Under a key it
// is safe to retry; without one it is sent again only if it never reached the server.
//
// Errors: *Error SnapshotNotFound (404), ForkRetentionActive (409: a running restore
// reads from it, retryable; or it is a fork's pin a live fork has as its base,
// details.reason fork_base, not retryable), SnapshotExpired (410: reaped),
// InvalidArguments (the idempotency key sent before with another request).
func (c *Client) RetireSnapshot(ctx context.Context, agent, wb string, snap SnapshotRef, reason string, opts ...KeyOptions) (*RetireResult, error) {
	key, err := keyOf("RetireSnapshot", opts)
	if err != nil {
		return nil, err
	}
	body, err := snapshotSelector(snap)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		body["reason"] = reason
	}
	return postKeyedJSON[RetireResult](ctx, c.tr, c.tr.workbenchURL(agent, wb)+"/snapshots/retire", body, false, key)
}

// ListSnapshots returns every snapshot of workbench wb, oldest first, whatever its state.
//
// Errors: *Error NotFound (no such workbench).
func (c *Client) ListSnapshots(ctx context.Context, agent, wb string) (*SnapshotList, error) {
	return getJSON[SnapshotList](ctx, c.tr, c.tr.workbenchURL(agent, wb)+"/snapshots")
}

// CommitEntry is one commit of a ListCommits page: the commit as Commit reported it, with
// Head set for the workbench's head commit.
type CommitEntry struct {
	CommitIdentity string `json:"commit_identity"`
	// Generation is the version of the commit (the run manifest's generation).
	Generation             uint64    `json:"generation"`
	SizeBytes              int64     `json:"size_bytes"`
	ContentDigestURI       string    `json:"content_digest_uri"`
	ManifestDigestURI      string    `json:"manifest_digest_uri"`
	EnvelopeDigestURI      string    `json:"envelope_digest_uri"`
	TreeDigestURI          string    `json:"tree_digest_uri"`
	CommittedAtUnixSeconds int64     `json:"committed_at_unix_seconds"`
	CommittedAt            time.Time `json:"committed_at"`
	Replace                bool      `json:"replace"`
	// Producer sealed it: "<principal> via <surface>", "" when unknown.
	Producer string `json:"producer"`
	Head     bool   `json:"head"`
}

// CommitPage is one page of ListCommits.
type CommitPage struct {
	WorkbenchID string `json:"workbench_id"`
	CommitCount int    `json:"commit_count"`
	// Commits are newest first.
	Commits []CommitEntry `json:"commits"`
	// NextCursor continues the listing; nil on the last page.
	NextCursor *string `json:"next_cursor"`
	RawJSON
}

// ListCommits returns one page of the commits of workbench wb, newest first, the replaced
// ones too (commits are permanent): cursor "" for the first page, limit 0 for the
// server's default (100, the most).
//
// Errors: *Error NotFound (no such workbench), InvalidArguments (a bad limit, or a cursor
// of another workbench or of an earlier incarnation of this one).
func (c *Client) ListCommits(ctx context.Context, agent, wb, cursor string, limit int) (*CommitPage, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return getJSON[CommitPage](ctx, c.tr, withQuery(c.tr.workbenchURL(agent, wb)+"/commits", q))
}

// RestoreRequest is the input of Restore (workbench_restore without id): exactly one of
// AtSnapshot and AtCommit.
type RestoreRequest struct {
	// Destination is the new workbench, in the same agent root; it must not exist.
	Destination string
	// AtSnapshot restores the source as it was at a snapshot.
	AtSnapshot SnapshotRef
	// AtCommit restores the source's newest sealed commit with this identity
	// (CommitResult.CommitIdentity).
	AtCommit string
	// IdempotencyKey makes retries return the first answer (docs/architecture.md#the-write-path),
	// IdempotentReplay set, also after the source or the snapshot went; the same key with
	// another request is InvalidArguments naming idempotency_key. "" for none.
	IdempotencyKey string
}

// RestoreResult is the result of Restore.
type RestoreResult struct {
	// State is "complete".
	State                  string `json:"state"`
	OperationID            string `json:"operation_id"`
	SourceWorkbenchID      string `json:"source_workbench_id"`
	DestinationWorkbenchID string `json:"destination_workbench_id"`
	DestinationPath        string `json:"destination_path"`
	// SnapshotID is set for a restore from a snapshot, CommitID for one from a commit;
	// ReadVersion is the source version restored.
	SnapshotID  uint64 `json:"snapshot_id"`
	ReadVersion uint64 `json:"read_version"`
	CommitID    string `json:"commit_id"`
	// DestinationGeneration is the version of the final publish.
	DestinationGeneration uint64 `json:"destination_generation"`
	RestoredFiles         int64  `json:"restored_files"`
	IdempotentReplay      bool   `json:"idempotent_replay"`
	// RestoreManifest is the presentation path of the destination's
	// metadata/restore_manifest.json.
	RestoreManifest string `json:"restore_manifest"`
	// CleanupPending is always false: a completed restore holds nothing.
	CleanupPending bool `json:"cleanup_pending"`
	RawJSON
}

// Restore creates req.Destination from a snapshot or a commit of workbench wb and
// returns when it is complete; file bodies are shared, not copied. An exact retry
// returns the result with IdempotentReplay. Under an IdempotencyKey it is safe to retry;
// without one it is sent again only if it never reached the server.
//
// Errors: *Error AlreadyExists (409: the destination exists), Conflict (409, retryable:
// the same restore is still running; Details["operation_id"] names it for
// RestoreStatus), NotFound / SnapshotNotFound (404), SnapshotExpired (410),
// InvalidArguments (the IdempotencyKey sent before with another request).
func (c *Client) Restore(ctx context.Context, agent, wb string, req RestoreRequest) (*RestoreResult, error) {
	at, err := req.AtSnapshot.jsonValue()
	if err != nil {
		return nil, err
	}
	body := struct {
		Destination string `json:"destination_id"`
		AtSnapshot  any    `json:"at_snapshot,omitempty"`
		AtCommit    string `json:"at_commit,omitempty"`
	}{req.Destination, at, req.AtCommit}
	return postKeyedJSON[RestoreResult](ctx, c.tr, c.tr.workbenchURL(agent, wb)+"/restore", body, false, req.IdempotencyKey)
}

// RestoreStatus is a restore operation's progress.
type RestoreStatus struct {
	OperationID string `json:"operation_id"`
	// State is "copying" or "complete".
	State                  string `json:"state"`
	SourceWorkbenchID      string `json:"source_workbench_id"`
	DestinationWorkbenchID string `json:"destination_workbench_id"`
	CopiedFiles            int64  `json:"copied_files"`
	CopyDone               bool   `json:"copy_done"`
	// DestinationGeneration is the version of the final publish; 0 while copying.
	DestinationGeneration uint64 `json:"destination_generation"`
	RawJSON
}

// RestoreStatus reports the restore operation opID of agent.
//
// Errors: *Error NotFound (no such operation).
func (c *Client) RestoreStatus(ctx context.Context, agent, opID string) (*RestoreStatus, error) {
	return getJSON[RestoreStatus](ctx, c.tr, c.tr.agentURL(agent)+"/restores/"+url.PathEscape(opID))
}
