package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Lifecycle routes (issue 17): workbench listing and deletion and usage on the client
// listener; quotas and purge on the admin listener.
const (
	// AdminQuotaPath reads (GET ?agent=A) and sets (PUT) an agent root's quotas.
	AdminQuotaPath = "/v1/admin/quota"
	// AdminPurgePath deletes every workbench of an agent root (POST).
	AdminPurgePath = "/v1/admin/purge"
)

// WorkbenchSummary is one workbench of a listing.
type WorkbenchSummary struct {
	ID   string `json:"workbench_id"`
	Path string `json:"path"`
	// Revision is the shard version of the workbench's last change: DeleteWorkbench's
	// precondition.
	Revision  uint64 `json:"revision"`
	FileCount int64  `json:"file_count"`
	SizeBytes int64  `json:"size_bytes"`
	CreatedAt string `json:"created_at"`
	// HeadCommit is the head commit's identity, nil without one.
	HeadCommit *string `json:"head_commit"`
}

// WorkbenchPage is one page of ListWorkbenches.
type WorkbenchPage struct {
	Agent       string             `json:"agent"`
	Workbenches []WorkbenchSummary `json:"workbenches"`
	// NextCursor continues the listing; nil on the last page.
	NextCursor *string `json:"next_cursor"`
}

// ListWorkbenches returns one page of agent's workbenches in name order: cursor "" for the
// first, limit 0 for the server's default (100; at most 1000).
func (c *Client) ListWorkbenches(ctx context.Context, agent, cursor string, limit int) (*WorkbenchPage, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return getJSON[WorkbenchPage](ctx, c.tr, withQuery(c.tr.agentURL(agent)+"/workbenches", q))
}

// WalkWorkbenches calls fn for every workbench of agent, page by page, until fn fails.
func (c *Client) WalkWorkbenches(ctx context.Context, agent string, fn func(WorkbenchSummary) error) error {
	cursor := ""
	for {
		page, err := c.ListWorkbenches(ctx, agent, cursor, 0)
		if err != nil {
			return err
		}
		for _, w := range page.Workbenches {
			if err := fn(w); err != nil {
				return err
			}
		}
		if page.NextCursor == nil {
			return nil
		}
		cursor = *page.NextCursor
	}
}

// DeleteWorkbench deletes workbench wb of agent with its files, snapshots and commits.
// ifRevision != 0 makes it conditional: *Error Conflict (412) when the workbench changed.
// NotFound when it does not exist; ForkRetentionActive or InvalidState (409, retryable)
// while a restore uses it.
func (c *Client) DeleteWorkbench(ctx context.Context, agent, wb string, ifRevision uint64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.tr.workbenchURL(agent, wb), http.NoBody)
	if err != nil {
		return err
	}
	setIfMatch(req, ifRevision)
	var out struct {
		Deleted bool `json:"deleted"`
	}
	return c.tr.doJSON(req, &out)
}

// Counts are an agent root's figures per dimension; in a quota, nil means no limit.
type Counts struct {
	Bytes       int64 `json:"bytes"`
	Files       int64 `json:"files"`
	Workbenches int64 `json:"workbenches"`
	Snapshots   int64 `json:"snapshots"`
}

// Limits are an agent root's quotas; nil: no limit.
type Limits struct {
	Bytes       *int64 `json:"bytes"`
	Files       *int64 `json:"files"`
	Workbenches *int64 `json:"workbenches"`
	Snapshots   *int64 `json:"snapshots"`
}

// RootUsage is an agent root's usage and quotas.
type RootUsage struct {
	Agent string `json:"agent"`
	Usage Counts `json:"usage"`
	Quota Limits `json:"quota"`
	RawJSON
}

// Usage returns what agent's root holds and its quotas (client listener).
func (c *Client) Usage(ctx context.Context, agent string) (*RootUsage, error) {
	return getJSON[RootUsage](ctx, c.tr, c.tr.agentURL(agent)+"/usage")
}

// Quota returns agent's usage and quotas (admin listener).
func (a *Admin) Quota(ctx context.Context, agent string) (*RootUsage, error) {
	return getJSON[RootUsage](ctx, a.tr, a.tr.base+AdminQuotaPath+"?"+url.Values{"agent": {agent}}.Encode())
}

// QuotaRequest sets an agent root's quotas (PUT /v1/admin/quota): each limit replaces
// the stored one; 0 lifts it.
type QuotaRequest struct {
	Agent          string `json:"agent"`
	MaxBytes       int64  `json:"max_bytes"`
	MaxFiles       int64  `json:"max_files"`
	MaxWorkbenches int64  `json:"max_workbenches"`
	MaxSnapshots   int64  `json:"max_snapshots"`
}

// SetQuota replaces an agent root's quotas (admin listener) and returns them with the
// root's usage.
func (a *Admin) SetQuota(ctx context.Context, q QuotaRequest) (*RootUsage, error) {
	if q.MaxBytes < 0 || q.MaxFiles < 0 || q.MaxWorkbenches < 0 || q.MaxSnapshots < 0 {
		return nil, fmt.Errorf("client: QuotaRequest limits must not be negative (0 lifts a limit)")
	}
	return putJSON[RootUsage](ctx, a.tr, a.tr.base+AdminQuotaPath, q)
}

// PurgeRoot deletes every workbench of agent's root (admin listener) and returns how many.
func (a *Admin) PurgeRoot(ctx context.Context, agent string) (int64, error) {
	var out struct {
		Deleted int64 `json:"deleted_workbenches"`
	}
	if err := a.tr.postTool(ctx, a.tr.base+AdminPurgePath, map[string]string{"agent": agent}, &out, replayable); err != nil {
		return 0, err
	}
	return out.Deleted, nil
}
