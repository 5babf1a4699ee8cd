package workbench

import (
	"context"
	"time"
)

// History implements cairn_history: one page of a file's retained versions, newest
// first (History, rendered by HistoryResultJSON).
func (s *Tools) History(ctx context.Context, agent string, in HistoryInput) (Result, error) {
	if in.Section == "" {
		return nil, invalidArgument("section", "is required")
	}
	full, werr := toolTarget(in.Section, in.Path)
	if werr != nil {
		return nil, werr
	}
	res, err := s.review.History(ctx, HistoryRequest{Agent: agent, Workbench: in.ID, Path: full, Cursor: deref(in.Cursor), Limit: deref(in.Limit)})
	if err != nil {
		return nil, err
	}
	return s.HistoryResultJSON(agent, in.ID, res), nil
}

// HistoryResultJSON renders a page of History for the surfaces (REST, MCP cairn_history):
// versions newest first, each {generation, ordinal, tombstone, size_bytes, digest_uri,
// content_type, at (RFC 3339 UTC, milliseconds), at_unix_ms, producer, proposal}
// (digest_uri, content_type and size_bytes null for a tombstone; producer null when
// unknown; proposal the id of the accepted proposal that published it, else null).
func (s *Tools) HistoryResultJSON(agent, id string, r HistoryResult) Result {
	items := make([]map[string]any, 0, len(r.Versions))
	for _, v := range r.Versions {
		item := map[string]any{"generation": v.Generation, "ordinal": v.Ordinal, "tombstone": v.Tombstone,
			"size_bytes": nil, "digest_uri": nil, "content_type": nil,
			"at": time.UnixMilli(v.AtMs).UTC().Format("2006-01-02T15:04:05.000Z"), "at_unix_ms": v.AtMs, "producer": nil, "proposal": nil}
		if !v.Tombstone {
			item["size_bytes"], item["digest_uri"], item["content_type"] = v.Size, DigestURI(v.Digest), v.ContentType
		}
		if v.Proposal != "" {
			item["proposal"] = v.Proposal
		}
		if !v.Producer.IsZero() {
			item["producer"] = map[string]any{"principal": v.Producer.Principal, "surface": v.Producer.Surface}
		}
		items = append(items, item)
	}
	sec, rel := splitSection(r.Path)
	var next any
	if r.NextCursor != "" {
		next = r.NextCursor
	}
	var section any
	if sec != "" {
		section = sec
	}
	return Result{"status": "success", "workbench_id": id, "section": section, "relative_path": rel,
		"path": s.WorkbenchPath(agent, id) + "/" + r.Path, "versions": items, "next_cursor": next, "truncated": r.Truncated}
}

// Diff is cairn_diff: Diff in the session's root, the sides in ParseDiffSide's syntax.
func (s *Tools) Diff(ctx context.Context, agent string, in DiffInput) (Result, error) {
	req := DiffRequest{Agent: agent, Workbench: in.ID, Path: deref(in.Path), Context: in.Context, Cursor: deref(in.Cursor), Limit: deref(in.Limit)}
	var err *Error
	if req.From, err = ParseDiffSide("from", in.From); err != nil {
		return nil, err
	}
	if in.To != nil {
		if req.To, err = ParseDiffSide("to", *in.To); err != nil {
			return nil, err
		}
	}
	return s.review.Diff(ctx, req)
}
