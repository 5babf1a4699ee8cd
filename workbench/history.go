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
// keep (meta.HistoryView.Versions), newest first, at live state. A page continues
// strictly below the previous page's last generation, so writes between pages never shift
// it (they only add newer versions, which a new first page shows) and a version pruned
// between pages is simply absent. The page holds its estimate of the node's memory budget
// while it is built (pages.go), cut short of the limit, truncated with a next_cursor,
// where that estimate would pass a page's share. Errors: NotFound when the workbench does
// not exist or the path has no retained version, NotArtifact for a directory,
// InvalidArguments for a bad path, limit or cursor, ResourceExhausted (retryable) when
// the budget stayed taken for the queue timeout.
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
	var werr *Error
	if req.Limit, werr = pageLimit(req.Limit, DefaultHistoryLimit, MaxHistoryLimit); werr != nil {
		return HistoryResult{}, werr
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
	if req.Cursor != "" && !cur.issuedFor(ws) {
		return HistoryResult{}, invalidArgument("cursor", "was issued for another incarnation of the workbench")
	}
	// The cursor's Offset is the generation the next page starts strictly below.
	rows, more, err := view.History().Versions(ws, req.Path, uint64(cur.Offset), req.Limit)
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
			Incarnation: ws.Incarnation, Created: ws.CreatedVersion, Path: req.Path, Offset: int64(last)})
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

// HistoryInput is the cairn profile's cairn_history input.
type HistoryInput struct {
	ID      string  `json:"id"`
	Section string  `json:"section"`
	Path    string  `json:"path"`
	Cursor  *string `json:"cursor"`
	Limit   *int    `json:"limit"`
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

// RootRetention is the history retention that applies to an agent root.
type RootRetention struct {
	Agent     string
	Retention meta.Retention
	// Default says the root follows the node default (it has no policy of its own).
	Default bool
}

// RetentionResult renders a root's history retention for the surfaces: versions, age (a
// Go duration), age_seconds, max_versions and default.
func RetentionResult(r RootRetention) Result {
	return Result{"status": "success", "agent": r.Agent, "retention": map[string]any{
		"versions": r.Retention.Versions, "age": r.Retention.Age.String(), "age_seconds": int64(r.Retention.Age / time.Second),
		"max_versions": r.Retention.MaxVersions, "default": r.Default}}
}
