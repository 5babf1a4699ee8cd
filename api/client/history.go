package client

import (
	"context"
	"net/url"
	"strconv"
)

// AdminRetentionPath is the admin listener's route of a root's history retention.
const AdminRetentionPath = "/v1/admin/retention"

// HistoryVersion is one retained version of a file (GET …/history).
type HistoryVersion struct {
	Generation  uint64    `json:"generation"`
	Ordinal     uint64    `json:"ordinal"`
	Tombstone   bool      `json:"tombstone"`
	SizeBytes   *int64    `json:"size_bytes"`   // nil for a tombstone
	DigestURI   *string   `json:"digest_uri"`   // nil for a tombstone
	ContentType *string   `json:"content_type"` // nil for a tombstone
	At          string    `json:"at"`           // RFC 3339 UTC, milliseconds
	AtUnixMs    int64     `json:"at_unix_ms"`
	Producer    *Producer `json:"producer"` // nil when unknown
	Proposal    *string   `json:"proposal"` // the accepted proposal that published it, or nil
}

// Producer is who made a version: a principal id and the surface it came through.
type Producer struct {
	Principal string `json:"principal"`
	Surface   string `json:"surface"`
}

// HistoryPage is one page of a file's history, newest first.
type HistoryPage struct {
	Path       string           `json:"path"`
	Versions   []HistoryVersion `json:"versions"`
	NextCursor string           `json:"next_cursor"`
	Truncated  bool             `json:"truncated"`
}

// HistoryOptions page a History call.
type HistoryOptions struct {
	Cursor string
	Limit  int // 0: the server's default (100)
}

// History returns one page of the retained versions of path (a full path inside the
// workbench), newest first; read one with GetOptions.Generation.
func (c *Client) History(ctx context.Context, agent, wb, path string, opts HistoryOptions) (*HistoryPage, error) {
	q := url.Values{"path": {path}}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	return getJSON[HistoryPage](ctx, c.tr, c.tr.workbenchURL(agent, wb)+"/history?"+q.Encode())
}

// Retention is an agent root's history retention (GET/PUT /v1/admin/retention).
type Retention struct {
	Agent     string `json:"agent"`
	Retention struct {
		Versions    int    `json:"versions"`
		Age         string `json:"age"`
		AgeSeconds  int64  `json:"age_seconds"`
		MaxVersions int    `json:"max_versions"`
		Default     bool   `json:"default"`
	} `json:"retention"`
}

// RetentionRequest sets a root's history retention: a nil field keeps the root's current
// value; Reset (alone) returns the root to the node default.
type RetentionRequest struct {
	Agent       string  `json:"agent"`
	Versions    *int    `json:"versions,omitempty"`
	Age         *string `json:"age,omitempty"` // a Go duration ("720h")
	MaxVersions *int    `json:"max_versions,omitempty"`
	Reset       bool    `json:"reset,omitempty"`
}

// Retention returns the history retention of agent's root (admin listener).
func (a *Admin) Retention(ctx context.Context, agent string) (*Retention, error) {
	return getJSON[Retention](ctx, a.tr, a.tr.base+AdminRetentionPath+"?"+url.Values{"agent": {agent}}.Encode())
}

// SetRetention sets the history retention of an agent root (admin listener) and returns
// the policy that now applies.
func (a *Admin) SetRetention(ctx context.Context, r RetentionRequest) (*Retention, error) {
	return putJSON[Retention](ctx, a.tr, a.tr.base+AdminRetentionPath, r)
}
