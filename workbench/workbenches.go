package workbench

import (
	"context"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// Lifecycle of workbenches and agent roots beyond the 18 tools (issue 17): list and delete
// workbenches, purge a root, and the root's quotas and usage (meta/quota.go,
// meta/purge.go). The surfaces: REST /v1/agents/{agent}/workbenches[/{id}], the MCP
// profile "cairn", the admin listener for purge and quotas.

// DefaultWorkbenchListLimit and MaxWorkbenchListLimit bound a page of ListWorkbenches.
const (
	DefaultWorkbenchListLimit = 100
	MaxWorkbenchListLimit     = 1000
)

// maxPurgeCommands bounds the bounded PurgeRoot commands one PurgeRoot call proposes
// (each deletes up to meta.MaxPurgeBatch workbenches).
const maxPurgeCommands = 1 << 16

// WorkbenchInfo describes one workbench of a root.
type WorkbenchInfo struct {
	ID   string
	Path string // presentation path
	// Revision is the shard version of the workbench's last change: the precondition
	// DeleteWorkbench takes (REST ETag/If-Match).
	Revision    uint64
	Files       int64
	Bytes       int64
	CreatedAtMs int64
	// HeadCommit is the identity of the head commit ("" = none).
	HeadCommit string
}

// WorkbenchPage is one page of ListWorkbenches.
type WorkbenchPage struct {
	Workbenches []WorkbenchInfo
	NextCursor  string // "" on the last page
}

// ListWorkbenches lists the visible workbenches of agent's root in name order, at most
// limit (1..MaxWorkbenchListLimit; 0 = DefaultWorkbenchListLimit) per page. The cursor of a
// further page is signed, expires after MaxCursorAge and is bound to the agent root (its
// uid) and the limit; anything else is InvalidArguments naming "cursor". A root that does
// not exist lists nothing. Staging restore destinations are not listed (they are
// invisible until complete).
func (s *Lifecycle) ListWorkbenches(ctx context.Context, agent, cursorText string, limit int) (WorkbenchPage, error) {
	if err := meta.ValidateName("agent", agent); err != nil {
		return WorkbenchPage{}, AsError(err)
	}
	limit, werr := pageLimit(limit, DefaultWorkbenchListLimit, MaxWorkbenchListLimit)
	if werr != nil {
		return WorkbenchPage{}, werr
	}
	if err := mayRead(ctx, agent); err != nil {
		return WorkbenchPage{}, err
	}
	view, err := s.base.readView(ctx, agent)
	if err != nil {
		return WorkbenchPage{}, AsError(err)
	}
	uid := ""
	if r, ok := view.Root(agent); ok {
		uid = r.UID
	}
	args := "root " + uid + " limit " + strconv.Itoa(limit)
	after := ""
	if cursorText != "" {
		cur, cerr := s.base.cursors.decode(ctx, cursorText, "workbenches", agent, "", "")
		if cerr != nil {
			return WorkbenchPage{}, cerr
		}
		if cur.Args != args {
			return WorkbenchPage{}, invalidArgument("cursor", "was issued for other arguments")
		}
		after = cur.After
	}
	list, more := view.Workspaces(agent, after, limit)
	out := WorkbenchPage{Workbenches: make([]WorkbenchInfo, 0, len(list))}
	for _, ws := range list {
		out.Workbenches = append(out.Workbenches, WorkbenchInfo{ID: ws.Name, Path: s.base.WorkbenchPath(agent, ws.Name),
			Revision: ws.Revision, Files: ws.Files, Bytes: ws.Bytes, CreatedAtMs: ws.CreatedAtMs, HeadCommit: ws.HeadIdentity})
	}
	if more && len(list) > 0 {
		out.NextCursor = s.base.cursors.encode(ctx, cursor{Kind: "workbenches", Agent: agent, Args: args, After: list[len(list)-1].Name})
	}
	return out, nil
}

// DeleteWorkbench deletes workbench id of agent: its files, snapshots and commits; the
// blobs only it referenced become garbage-collection candidates (collected after the
// grace period). ifRevision, when non-zero, must be the workbench's current revision
// (Conflict with details.current_generation otherwise, not retryable: a failed
// precondition, PreconditionFailed). NotFound when it does not exist;
// ForkRetentionActive (retryable) while a restore reads from it; InvalidState (retryable)
// while it is a restore's staging destination.
func (s *Lifecycle) DeleteWorkbench(ctx context.Context, agent, id string, ifRevision uint64, requestID string) error {
	if err := validateTarget(agent, id, ""); err != nil {
		return err
	}
	h := meta.Header{RequestID: requestID, RequestHash: requestHash("delete-workbench", agent, id, strconv.FormatUint(ifRevision, 10))}
	_, werr := s.base.propose(ctx, h, meta.DeleteWorkspace{Agent: agent, Name: id, IfRevision: ifRevision})
	if werr != nil {
		if ifRevision != 0 && werr.Code == CodeConflict {
			return PreconditionFailed(werr)
		}
		return werr
	}
	return nil
}

// PurgeRoot deletes every workbench of agent's root, in bounded commands, and returns how
// many it deleted. The root keeps its quotas. ForkRetentionActive (retryable) while a
// restore of the root is in progress.
func (s *Lifecycle) PurgeRoot(ctx context.Context, agent string) (int64, error) {
	if err := meta.ValidateName("agent", agent); err != nil {
		return 0, AsError(err)
	}
	if err := s.base.mayRootWide(ctx, agent, "a purge"); err != nil {
		return 0, err
	}
	var total int64
	for range maxPurgeCommands {
		res, werr := s.base.propose(ctx, meta.Header{}, meta.PurgeRoot{Agent: agent, Limit: meta.MaxPurgeBatch})
		if werr != nil {
			return total, werr
		}
		total += res.Deleted
		if !res.More {
			return total, nil
		}
	}
	return total, &Error{Code: CodeResourceExhausted, Retryable: true, Details: map[string]any{"deleted": total},
		Message: "the root gains workbenches as fast as they are purged; stop its writers and purge again"}
}

// RootUsage is an agent root's usage and quotas.
type RootUsage struct {
	Agent string
	Usage meta.Usage
	Quota meta.Quota // zero fields: no limit
}

// Usage returns what agent's root holds and its quotas (zeros for a root that does not
// exist).
func (s *Lifecycle) Usage(ctx context.Context, agent string) (RootUsage, error) {
	if err := mayReadAgent(ctx, agent); err != nil {
		return RootUsage{}, err
	}
	if err := s.base.mayRootWide(ctx, agent, "its usage"); err != nil {
		return RootUsage{}, err
	}
	view, err := s.base.readView(ctx, agent)
	if err != nil {
		return RootUsage{}, AsError(err)
	}
	q, _ := view.Quota(agent)
	return RootUsage{Agent: agent, Usage: view.Usage(agent), Quota: q}, nil
}

// SetQuota replaces the quotas of agent's root (creating the root when it does not exist);
// a zero field lifts that limit. InvalidArguments naming the field for a negative one.
// An admin's operation: the surfaces offer it only on the admin listener.
func (s *Lifecycle) SetQuota(ctx context.Context, agent string, q meta.Quota) (RootUsage, error) {
	if err := meta.ValidateName("agent", agent); err != nil {
		return RootUsage{}, AsError(err)
	}
	if err := s.base.mayRootWide(ctx, agent, "setting its quotas"); err != nil {
		return RootUsage{}, err
	}
	res, werr := s.base.propose(ctx, meta.Header{}, meta.SetQuota{Agent: agent, Quota: q})
	if werr != nil {
		return RootUsage{}, werr
	}
	return RootUsage{Agent: agent, Usage: *res.Usage, Quota: *res.Quota}, nil
}

// UsageResult renders a root's usage and quotas for the surfaces: usage and quota objects
// with bytes, files, workbenches and snapshots (a quota of null: no limit).
func UsageResult(u RootUsage) Result {
	limit := func(v int64) any {
		if v == 0 {
			return nil
		}
		return v
	}
	return Result{"status": "success", "agent": u.Agent,
		"usage": map[string]any{meta.QuotaBytes: u.Usage.Bytes, meta.QuotaFiles: u.Usage.Files,
			meta.QuotaWorkbenches: u.Usage.Workbenches, meta.QuotaSnapshots: u.Usage.Snapshots},
		"quota": map[string]any{meta.QuotaBytes: limit(u.Quota.MaxBytes), meta.QuotaFiles: limit(u.Quota.MaxFiles),
			meta.QuotaWorkbenches: limit(u.Quota.MaxWorkbenches), meta.QuotaSnapshots: limit(u.Quota.MaxSnapshots)}}
}

// WorkbenchPageResult renders a page of ListWorkbenches for the surfaces.
func WorkbenchPageResult(agent string, p WorkbenchPage) Result {
	items := make([]map[string]any, 0, len(p.Workbenches))
	for _, w := range p.Workbenches {
		var head any
		if w.HeadCommit != "" {
			head = w.HeadCommit
		}
		items = append(items, map[string]any{"workbench_id": w.ID, "path": w.Path, "revision": w.Revision,
			"file_count": w.Files, "size_bytes": w.Bytes, "created_at": time.UnixMilli(w.CreatedAtMs).UTC().Format(time.RFC3339), "head_commit": head})
	}
	var next any
	if p.NextCursor != "" {
		next = p.NextCursor
	}
	return Result{"status": "success", "agent": agent, "workbenches": items, "next_cursor": next, "truncated": p.NextCursor != ""}
}

// WorkbenchListInput is the cairn profile's cairn_workbench_list input.
type WorkbenchListInput struct {
	Cursor *string `json:"cursor"`
	Limit  *int    `json:"limit"`
}

// WorkbenchDeleteInput is the cairn profile's cairn_workbench_delete input.
type WorkbenchDeleteInput struct {
	ID         string  `json:"id"`
	IfRevision *uint64 `json:"if_revision"`
}

// CreateResult answers CreateWorkbench.
type CreateResult struct {
	WorkbenchID string
	Path        string
	Created     bool
}

// CreateWorkbench creates workbench id under agent; creating an existing one succeeds with
// Created false.
func (s *Lifecycle) CreateWorkbench(ctx context.Context, agent, id string, requestID string) (CreateResult, error) {
	if err := validateTarget(agent, id, ""); err != nil {
		return CreateResult{}, err
	}
	if err := s.base.mayCreate(ctx, agent, id); err != nil {
		return CreateResult{}, err
	}
	h := meta.Header{RequestID: requestID, RequestHash: requestHash("create", agent, id)}
	res, werr := s.base.propose(ctx, h, meta.CreateWorkspace{Agent: agent, Name: id})
	if werr != nil {
		return CreateResult{}, werr
	}
	return CreateResult{WorkbenchID: id, Path: s.base.WorkbenchPath(agent, id), Created: res.Created}, nil
}

// Retention returns the history retention of agent's root (the node default for a root
// without its own policy, or one that does not exist).
func (s *Lifecycle) Retention(ctx context.Context, agent string) (RootRetention, error) {
	if err := mayReadAgent(ctx, agent); err != nil {
		return RootRetention{}, err
	}
	if err := s.base.mayRootWide(ctx, agent, "its retention"); err != nil {
		return RootRetention{}, err
	}
	// The shard's own view, not readView's: for a root that does not exist yet that would
	// be the empty state, which knows the built-in default, not this node's settings.
	c, err := coreFor(ctx, s.base, agent)
	if err != nil {
		return RootRetention{}, AsError(err)
	}
	view, err := c.ReadView(ctx)
	if err != nil {
		return RootRetention{}, AsError(err)
	}
	if hidden(ctx, agent) {
		view = view.Only(agent) // a hidden root answers as a missing one: the node default
	}
	r, own := view.Retention(agent)
	return RootRetention{Agent: agent, Retention: r, Default: !own}, nil
}

// SetRetention sets the history retention of agent's root (creating the root when it does
// not exist); the zero Retention returns the root to the node default (meta.SetRetention).
// InvalidArguments naming versions, age or max_versions for a policy out of bounds. An
// admin's operation: the surfaces offer it only on the admin listener.
func (s *Lifecycle) SetRetention(ctx context.Context, agent string, r meta.Retention) (RootRetention, error) {
	if err := meta.ValidateName("agent", agent); err != nil {
		return RootRetention{}, AsError(err)
	}
	if err := s.base.mayRootWide(ctx, agent, "setting its retention"); err != nil {
		return RootRetention{}, err
	}
	res, werr := s.base.propose(ctx, meta.Header{}, meta.SetRetention{Agent: agent, Retention: r})
	if werr != nil {
		return RootRetention{}, werr
	}
	return RootRetention{Agent: agent, Retention: *res.Retention, Default: res.RetentionDefault}, nil
}
