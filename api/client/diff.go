package client

import (
	"context"
	"net/url"
	"strconv"
)

// DiffRequest asks GET …/diff: From and To (default "live") in the server's side syntax —
// live, generation:<N>, snapshot:<id or name>, commit:<commit_identity>. With Path, the
// file's text diff; without, one page of the paths that differ.
type DiffRequest struct {
	Path     string
	From, To string
	// Context is the unchanged lines around each change (nil: the server's 3).
	Context *int
	// Cursor and Limit page a state diff (Limit 0: the server's 100).
	Cursor string
	Limit  int
}

// DiffChange is one path of a state diff; Old is nil for an added path, New for a removed
// one.
type DiffChange struct {
	Path   string       `json:"path"`
	Change string       `json:"change"` // added, removed, changed
	Old    *DiffVersion `json:"old"`
	New    *DiffVersion `json:"new"`
}

// DiffVersion is one side of a changed path.
type DiffVersion struct {
	DigestURI string `json:"digest_uri"`
	SizeBytes int64  `json:"size_bytes"`
}

// DiffResult is the server's answer: a file diff (Kind "file": Unified and the summary
// fields) or a page of a state diff (Kind "tree": Changes, NextCursor).
type DiffResult struct {
	Kind       string       `json:"kind"`
	Identical  bool         `json:"identical"`
	Text       bool         `json:"text"`
	Reason     *string      `json:"reason"`
	Unified    string       `json:"unified"`
	Truncated  bool         `json:"truncated"`
	Changes    []DiffChange `json:"changes"`
	NextCursor *string      `json:"next_cursor"`
	RawJSON
}

// Diff compares two versions of workbench wb on the server.
func (c *Client) Diff(ctx context.Context, agent, wb string, req DiffRequest) (*DiffResult, error) {
	q := url.Values{"from": {req.From}}
	for k, v := range map[string]string{"path": req.Path, "to": req.To, "cursor": req.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if req.Context != nil {
		q.Set("context", strconv.Itoa(*req.Context))
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	return getJSON[DiffResult](ctx, c.tr, c.tr.workbenchURL(agent, wb)+"/diff?"+q.Encode())
}
