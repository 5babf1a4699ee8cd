package workbench

import (
	"context"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// History limits.
const (
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = meta.MaxHistoryLimit
)

// HistoryRequest asks for the retained versions of one file, newest first.
type HistoryRequest struct {
	Agent, Workbench string
	// Path is the file's full path inside the workbench.
	Path   string
	Cursor string
	Limit  int // 1..MaxHistoryLimit; 0 = DefaultHistoryLimit
}

// HistoryVersion is one retained version of a path: a body, or the tombstone of a delete.
type HistoryVersion struct {
	// Generation is the version's generation: the shard version of the command that made
	// it (a body's ETag; a delete's version for a tombstone).
	Generation uint64
	// Ordinal is the version's number within the path's current life (meta.FileVersion).
	Ordinal   uint64
	Tombstone bool
	// Size, Digest and ContentType describe a body (zero for a tombstone).
	Size        int64
	Digest      meta.Digest
	ContentType string
	// AtMs is the command time of the command that made the version, Unix milliseconds.
	AtMs int64
	// Producer made the version (zero: unknown).
	Producer meta.Producer
	// Proposal is the id of the proposal whose acceptance published the version (""
	// for a direct write and a tombstone; meta.Entry.Proposal).
	Proposal string
}

// HistoryResult is one page of a path's history.
type HistoryResult struct {
	Path       string
	Versions   []HistoryVersion
	NextCursor string // "" on the last page
	Truncated  bool
}

// History returns one page of the versions of req.Path that history retention and holds
// keep (meta.View.History), newest first, at live state. A page continues strictly below
// the previous page's last generation, so writes between pages never shift it (they only
// add newer versions, which a new first page shows) and a version pruned between pages
// is simply absent. The page holds its estimate of the node's memory budget while it is
// built (pages.go), cut short of the limit, truncated with a next_cursor, where that
// estimate would pass a page's share. Errors: NotFound when the workbench does not exist
// or the path has no retained version, NotArtifact for a directory, InvalidArguments for
// a bad path, limit or cursor, ResourceExhausted (retryable) when the budget stayed taken
// for the queue timeout.
func (s *Review) History(ctx context.Context, req HistoryRequest) (HistoryResult, error) {
	if err := validateTarget(req.Agent, req.Workbench, req.Path); err != nil {
		return HistoryResult{}, err
	}
	if err := mayRead(ctx, req.Agent); err != nil {
		return HistoryResult{}, err
	}
	if req.Path == "" {
		return HistoryResult{}, invalidArgument("path", "must not be empty")
	}
	if req.Limit == 0 {
		req.Limit = DefaultHistoryLimit
	}
	if req.Limit < 1 || req.Limit > MaxHistoryLimit {
		return HistoryResult{}, invalidArgument("limit", "must be between 1 and %d", MaxHistoryLimit)
	}
	var cur cursor
	if req.Cursor != "" {
		var cerr *Error
		if cur, cerr = s.base.cursors.decode(ctx, req.Cursor, "history", req.Agent, req.Workbench, req.Path); cerr != nil {
			return HistoryResult{}, cerr
		}
	}
	view, err := s.base.readView(ctx, req.Agent)
	if err != nil {
		return HistoryResult{}, AsError(err)
	}
	ws, err := view.Workspace(req.Agent, req.Workbench)
	if err != nil {
		return HistoryResult{}, AsError(err)
	}
	if req.Cursor != "" && cur.Incarnation != ws.Incarnation {
		return HistoryResult{}, invalidArgument("cursor", "was issued for another incarnation of the workbench")
	}
	// The cursor's Offset is the generation the next page starts strictly below.
	rows, more, err := view.History(ws, req.Path, uint64(cur.Offset), req.Limit)
	if err != nil {
		return HistoryResult{}, AsError(err)
	}
	// The answer's memory (pages.go), before it is built.
	rows, more, cost := fitPage(rows, more, s.base.listingPageMaxBytes(), historyRowAnswerBytes)
	release, aerr := s.base.admit(ctx, cost+historyPageBytes(req.Path), "the history", -1)
	if aerr != nil {
		return HistoryResult{}, aerr
	}
	defer release()
	out := HistoryResult{Path: req.Path, Versions: make([]HistoryVersion, 0, len(rows))}
	for _, r := range rows {
		out.Versions = append(out.Versions, historyVersion(r))
	}
	if more {
		last := rows[len(rows)-1].Version
		out.NextCursor = s.base.cursors.encode(ctx, cursor{Kind: "history", Agent: req.Agent, Workbench: req.Workbench,
			Incarnation: ws.Incarnation, Path: req.Path, Offset: int64(last)})
		out.Truncated = true
	}
	return out, nil
}

func historyVersion(r meta.FileVersion) HistoryVersion {
	v := HistoryVersion{Generation: r.Version, Ordinal: r.Ordinal, Tombstone: r.Entry == nil, AtMs: r.AtMs, Producer: r.Producer}
	if e := r.Entry; e != nil {
		v.Size, v.Digest, v.ContentType, v.Proposal = e.Size, e.Digest, e.ContentType, e.Proposal
	}
	return v
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

// OpenGeneration opens the retained version of path whose generation is gen, at live
// state (linearizable): a superseded body that history retention or a hold keeps, or the
// live one. NotFound naming field "generation" when no retained body has that generation
// (pruned, never one, or a delete's); NotFound for a missing workbench; InvalidArguments
// for a bad path or generation 0.
func (s *Reads) OpenGeneration(ctx context.Context, agent, id, path string, gen uint64) (*File, error) {
	_, _, fv, err := s.atGeneration(ctx, agent, id, path, gen)
	if err != nil {
		return nil, err
	}
	return &File{Info: s.base.fileInfo(agent, id, path, fv.Entry), s: s.base, agent: agent, entry: fv.Entry}, nil
}

// StatGeneration is Stat of the retained version of path whose generation is gen (errors
// as OpenGeneration).
func (s *Reads) StatGeneration(ctx context.Context, agent, id, path string, gen uint64) (StatResult, error) {
	view, ws, fv, err := s.atGeneration(ctx, agent, id, path, gen)
	if err != nil {
		return StatResult{}, err
	}
	return StatResult{Kind: "file", File: s.base.fileInfo(agent, id, path, fv.Entry), Path: path,
		SealedBy: sealedBy(view, ws, path, fv.Entry), Producer: fv.Entry.Producer}, nil
}

func (s *Reads) atGeneration(ctx context.Context, agent, id, path string, gen uint64) (*meta.View, *meta.Workspace, meta.FileVersion, error) {
	if err := validateTarget(agent, id, path); err != nil {
		return nil, nil, meta.FileVersion{}, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return nil, nil, meta.FileVersion{}, err
	}
	if path == "" {
		return nil, nil, meta.FileVersion{}, invalidArgument("path", "must not be empty")
	}
	if gen == 0 {
		return nil, nil, meta.FileVersion{}, invalidArgument("generation", "must be a generation (an integer ≥ 1)")
	}
	view, err := s.base.readView(ctx, agent)
	if err != nil {
		return nil, nil, meta.FileVersion{}, AsError(err)
	}
	ws, err := view.Workspace(agent, id)
	if err != nil {
		return nil, nil, meta.FileVersion{}, AsError(err)
	}
	fv, err := view.FileAt(ws, path, gen)
	if err != nil {
		return nil, nil, meta.FileVersion{}, AsError(err)
	}
	return view, ws, fv, nil
}

// HistoryInput is the cairn profile's cairn_history input.
type HistoryInput struct {
	ID      string  `json:"id"`
	Section string  `json:"section"`
	Path    string  `json:"path"`
	Cursor  *string `json:"cursor"`
	Limit   *int    `json:"limit"`
}

// ToolHistory implements cairn_history: one page of a file's retained versions, newest
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

// ReadAtInput is the cairn profile's cairn_read_at input: workbench_read's arguments with
// a generation instead of at_snapshot and if_none_match.
type ReadAtInput struct {
	ID         string  `json:"id"`
	Section    string  `json:"section"`
	Path       string  `json:"path"`
	Generation uint64  `json:"generation"`
	Format     *string `json:"format"`
	Offset     *int64  `json:"offset"`
	Cursor     *string `json:"cursor"`
	Limit      *int    `json:"limit"`
}

// ToolReadAt implements cairn_read_at: workbench_read of the retained version of a file
// with the given generation (cairn_history lists them), with workbench_read's result;
// its cursors stay on that version. NotFound naming generation when no retained body has
// it.
func (s *Tools) ReadAt(ctx context.Context, agent string, in ReadAtInput) (Result, error) {
	if in.Generation == 0 {
		return nil, invalidArgument("generation", "must be a generation (an integer ≥ 1)")
	}
	return s.toolRead(ctx, agent, ReadInput{ID: in.ID, Section: in.Section, Path: in.Path, Format: in.Format,
		Offset: in.Offset, Cursor: in.Cursor, Limit: in.Limit}, in.Generation)
}

// RootRetention is the history retention that applies to an agent root.
type RootRetention struct {
	Agent     string
	Retention meta.Retention
	// Default says the root follows the node default (it has no policy of its own).
	Default bool
}

// Retention returns the history retention of agent's root (the node default for a root
// without its own policy, or one that does not exist).
func (s *Lifecycle) Retention(ctx context.Context, agent string) (RootRetention, error) {
	if err := meta.ValidateName("agent", agent); err != nil {
		return RootRetention{}, AsError(err)
	}
	if err := mayRead(ctx, agent); err != nil {
		return RootRetention{}, err
	}
	if err := s.base.mayRootWide(ctx, agent, "its retention"); err != nil {
		return RootRetention{}, err
	}
	// The shard's own view, not readView's: for a root that does not exist yet that would
	// be the empty state, which knows the built-in default, not this node's settings.
	c, err := s.base.cores.For(ctx, agent)
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

// RetentionResult renders a root's history retention for the surfaces: versions, age (a
// Go duration), age_seconds, max_versions and default.
func RetentionResult(r RootRetention) Result {
	return Result{"status": "success", "agent": r.Agent, "retention": map[string]any{
		"versions": r.Retention.Versions, "age": r.Retention.Age.String(), "age_seconds": int64(r.Retention.Age / time.Second),
		"max_versions": r.Retention.MaxVersions, "default": r.Default}}
}
