package client

import (
	"context"
)

// RewindRequest asks POST …/rewind: Target in the server's syntax (snapshot:<id or name>,
// commit:<commit_identity>, time:<RFC 3339 or Unix ms>), the scope (Paths or Prefix;
// neither: the whole workbench), a preview (DryRun, FileDiffs) or an apply (Token, and
// IdempotencyKey to make it safe to retry).
type RewindRequest struct {
	Target         string
	Paths          []string
	Prefix         string
	DryRun         bool
	FileDiffs      bool
	Token          string
	IdempotencyKey string
}

// RewindSide is a path's body on one side of a rewind.
type RewindSide struct {
	Generation uint64 `json:"generation"`
	DigestURI  string `json:"digest_uri"`
	SizeBytes  int64  `json:"size_bytes"`
}

// RewindChange is one path a rewind changes: From now, To at the target (nil: no file).
type RewindChange struct {
	Path   string      `json:"path"`
	Change string      `json:"change"` // added, removed, changed
	From   *RewindSide `json:"from"`
	To     *RewindSide `json:"to"`
	Diff   *struct {
		Unified string  `json:"unified"`
		Text    bool    `json:"text"`
		Reason  *string `json:"reason"`
	} `json:"diff"`
}

// ApplyOutcome is what a rewind's or a merge's answer says of its apply: the Token a
// preview issues, or Applied with the Generation of the command (0 when nothing changed)
// and Replayed when a retry under an idempotency key answered the first apply.
type ApplyOutcome struct {
	Token      string `json:"token"`
	Applied    bool   `json:"applied"`
	Generation uint64 `json:"generation"`
	Replayed   bool   `json:"replayed"`
}

// RewindResult is the server's answer to a preview or an apply.
type RewindResult struct {
	Target  string         `json:"target"`
	Changes []RewindChange `json:"changes"`
	ApplyOutcome
	RawJSON
}

// Rewind previews or applies a rewind of workbench wb (docs/architecture.md, "Attempts:
// rewind"). A preview may be repeated; an apply only under an IdempotencyKey.
func (c *Client) Rewind(ctx context.Context, agent, wb string, req RewindRequest) (*RewindResult, error) {
	body := struct {
		Target    string   `json:"target"`
		Paths     []string `json:"paths,omitempty"`
		Prefix    string   `json:"prefix,omitempty"`
		DryRun    bool     `json:"dry_run,omitempty"`
		FileDiffs bool     `json:"file_diffs,omitempty"`
		Token     string   `json:"token,omitempty"`
	}{req.Target, req.Paths, req.Prefix, req.DryRun, req.FileDiffs, req.Token}
	var out RewindResult
	if err := c.tr.postKeyed(ctx, c.tr.workbenchURL(agent, wb)+"/rewind", body, req.DryRun, req.IdempotencyKey, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
