package workbench

import (
	"context"
	"iter"
	"strconv"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/diff"
)

// Diff bounds.
const (
	// DiffMaxBodyBytes bounds each side of a file diff that is compared as text; a larger
	// side gets sizes and digests only (reason "too_large").
	DiffMaxBodyBytes = diff.DefaultMaxInputBytes
	// DiffMaxOutputBytes bounds a file diff's unified text (the structured hunks hold the
	// same lines).
	DiffMaxOutputBytes = diff.DefaultMaxBytes
	// MaxDiffContext bounds DiffRequest.Context (lines).
	MaxDiffContext = diff.MaxContext
	// DefaultDiffLimit and MaxDiffLimit bound a page of a state diff.
	DefaultDiffLimit = diff.DefaultTreeLimit
	MaxDiffLimit     = diff.MaxTreeLimit
	// diffScanPerPage bounds the members one state-diff page examines (both sides), so a
	// page of a large, mostly unchanged workbench costs bounded time; such a page may hold
	// fewer rows than the limit, with a next_cursor.
	diffScanPerPage = diff.DefaultMaxScan
	// diffBytesPerInputByte estimates a text diff's memory per byte of its two sides: the
	// bodies, their strings, line tables and go-diff's rune sequences (BenchmarkDiffFile10MiB
	// allocates about 8 bytes per input byte in all, read buffers included; fewer are live
	// at once).
	diffBytesPerInputByte = 8
)

// DiffRequest asks for a diff between two sides of one workbench (DiffSide). With a Path
// it diffs that file's bodies; without, the two workbench states (live, snapshot or
// commit sides only).
type DiffRequest struct {
	Agent, Workbench string
	// Path is the file's full path inside the workbench ("outputs/report.md"); "" diffs
	// the states.
	Path     string
	From, To DiffSide
	// Context is the unchanged lines around each change (nil: 3; 0..1000).
	Context *int
	// Cursor and Limit page a state diff (Limit 0: DefaultDiffLimit).
	Cursor string
	Limit  int
}

// Diff compares two sides of a workbench.
//
// A file diff (req.Path set) answers from, to (each: side, exists, generation,
// size_bytes, digest_uri), identical, text, reason ("binary", "too_large",
// "too_many_lines" when text is false), hunks ([{old_start, old_lines, new_start,
// new_lines, lines: [{op, text, escaped, no_newline, cut}]}]), unified (the same as
// unified-format text), hunk_count, lines_deleted, lines_inserted, truncated and
// approximate (workbench/diff). A side where the path holds no file compares as empty with
// exists false; NotFound when neither side has the file, or a generation side is not a
// retained version of it.
//
// A state diff answers changes ([{path, change: added|removed|changed, old, new: {digest_uri,
// size_bytes}}]) in path order, next_cursor and truncated. A cursor of a state diff with
// a live side fails with ReadFenceChanged (retryable) once the workbench changed. A page
// holds its estimate of the query budget, from its limit and the bound on its paths'
// bytes (diffPagePathBytes: a page of longer paths ends early, truncated).
//
// Bodies are read through the verified read path and held, both sides together, under
// the node's query budget (admission.go), at most DiffMaxBodyBytes each.
func (s *Review) Diff(ctx context.Context, req DiffRequest) (Result, error) {
	if err := validateTarget(req.Agent, req.Workbench, req.Path); err != nil {
		return nil, err
	}
	if err := mayRead(ctx, req.Agent); err != nil {
		return nil, err
	}
	if req.From.Kind == "" {
		return nil, invalidArgument("from", "is required (live, generation:<N>, snapshot:<id or name> or commit:<commit_identity>)")
	}
	if req.To.Kind == "" {
		req.To = DiffSide{Kind: SideLive}
	}
	if req.Path == "" {
		return s.diffStates(ctx, req)
	}
	return s.diffFile(ctx, req)
}

// diffSideInfo describes one side of a file diff.
func diffSideInfo(d DiffSide, e *meta.Entry) map[string]any {
	m := map[string]any{"side": d.String(), "exists": e != nil, "generation": nil, "size_bytes": int64(0),
		"digest_uri": diff.SideOf(nil).Digest}
	if e != nil {
		m["generation"], m["size_bytes"], m["digest_uri"] = e.Generation, e.Size, DigestURI(e.Digest)
	}
	return m
}

func (s *Review) diffFile(ctx context.Context, req DiffRequest) (Result, error) {
	if req.Cursor != "" || req.Limit != 0 {
		return nil, invalidArgument("cursor", "cursor and limit page a state diff; a file diff has one page")
	}
	opts := diff.DefaultOptions()
	if req.Context != nil {
		opts.Context = *req.Context
	}
	if opts.Context < 0 || opts.Context > MaxDiffContext {
		return nil, invalidArgument("context", "must be between 0 and %d", MaxDiffContext)
	}
	opts.OldLabel, opts.NewLabel = req.Path+"@"+req.From.String(), req.Path+"@"+req.To.String()
	var entries [2]*meta.Entry
	for i, side := range []DiffSide{req.From, req.To} {
		view, ws, err := s.resolveSide(ctx, req.Agent, req.Workbench, side)
		if err != nil {
			return nil, err
		}
		if entries[i], err = fileAt(view, ws, req.Path, side); err != nil {
			return nil, err
		}
	}
	old, new := entries[0], entries[1]
	if old == nil && new == nil {
		return nil, newError(CodeNotFound, "the file does not exist at %s nor at %s", req.From, req.To)
	}
	res, err := s.diffBodies(ctx, req.Agent, old, new, opts)
	if err != nil {
		return nil, err
	}
	r := success()
	r["workbench_id"] = req.Workbench
	r["path"] = req.Path
	r["kind"] = "file"
	r["from"], r["to"] = diffSideInfo(req.From, old), diffSideInfo(req.To, new)
	r["identical"] = res.Identical
	r["text"] = res.Text
	r["reason"] = nil
	if res.Reason != "" {
		r["reason"] = res.Reason
	}
	r["hunks"] = res.Hunks
	r["unified"] = res.Unified
	r["hunk_count"] = res.HunkCount
	r["lines_deleted"] = res.LinesDeleted
	r["lines_inserted"] = res.LinesInserted
	r["truncated"] = res.Truncated
	r["approximate"] = res.Approximate
	return r, nil
}

// diffBodies loads two bodies (nil entry: empty) under the query budget and diffs them;
// a side above DiffMaxBodyBytes is not read (sizes and digests only).
func (s *Review) diffBodies(ctx context.Context, agent string, old, new *meta.Entry, opts diff.Options) (*diff.Result, error) {
	side := func(e *meta.Entry) diff.Side {
		if e == nil {
			return diff.SideOf(nil)
		}
		return diff.Side{Size: e.Size, Digest: DigestURI(e.Digest)}
	}
	size := func(e *meta.Entry) int64 {
		if e == nil {
			return 0
		}
		return e.Size
	}
	if size(old) > DiffMaxBodyBytes || size(new) > DiffMaxBodyBytes {
		return diff.Summary(side(old), side(new), diff.ReasonTooLarge), nil
	}
	same := old != nil && new != nil && old.Digest == new.Digest
	held := size(old) + size(new) // the bytes loaded; the same body is loaded once
	if same {
		held = size(old)
	}
	release, aerr := s.base.admit(ctx, queryBaseBytes+diffBytesPerInputByte*held+3*int64(opts.MaxBytes), "the diff", -1)
	if aerr != nil {
		return nil, aerr
	}
	defer release()
	a, err := s.loadBody(ctx, agent, old)
	if err != nil {
		return nil, err
	}
	b := a
	if !same {
		if b, err = s.loadBody(ctx, agent, new); err != nil {
			return nil, err
		}
	}
	res, derr := diff.Text(a, b, opts)
	if derr != nil {
		return nil, AsError(derr)
	}
	return res, nil
}

// loadBody reads a whole body (nil entry: empty) through the verified read path.
func (s *Review) loadBody(ctx context.Context, agent string, e *meta.Entry) ([]byte, error) {
	return loadBody(ctx, s.base, agent, e)
}

// loadBody is Review.loadBody for every part.
func loadBody(ctx context.Context, b *base, agent string, e *meta.Entry) ([]byte, error) {
	if e == nil || e.Size == 0 {
		return nil, nil
	}
	rd, err := b.openEntry(ctx, agent, e, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return readExact(rd, e.Size)
}

// diffStates pages the paths that differ between two workbench states.
func (s *Review) diffStates(ctx context.Context, req DiffRequest) (Result, error) {
	for i, side := range []DiffSide{req.From, req.To} {
		if side.Kind == SideGeneration {
			return nil, invalidArgument([]string{"from", "to"}[i], "generation:<N> names a version of one file; give path, or compare live, snapshot or commit states")
		}
	}
	if req.Context != nil {
		return nil, invalidArgument("context", "applies to a file diff; give path")
	}
	limit := req.Limit
	if limit == 0 {
		limit = DefaultDiffLimit
	}
	if limit < 1 || limit > MaxDiffLimit {
		return nil, invalidArgument("limit", "must be between 1 and %d", MaxDiffLimit)
	}
	oldView, oldWS, err := s.resolveSide(ctx, req.Agent, req.Workbench, req.From)
	if err != nil {
		return nil, err
	}
	newView, newWS, err := s.resolveSide(ctx, req.Agent, req.Workbench, req.To)
	if err != nil {
		return nil, err
	}
	// The cursor binds both sides as given and, for a frozen side, the version it resolved
	// to (a snapshot name minted again between pages names another version). Its fence is
	// the live workbench's revision when a side is live (0: both sides are frozen), so a
	// later page never mixes two live states.
	var fence uint64
	args := ""
	for _, p := range []struct {
		d    DiffSide
		view *meta.View
		ws   *meta.Workspace
	}{{req.From, oldView, oldWS}, {req.To, newView, newWS}} {
		args += p.d.String() + "\x00"
		if p.d.Kind == SideLive {
			fence = p.ws.Revision
		} else {
			args += strconv.FormatUint(p.view.Version(), 10)
		}
		args += "\x00"
	}
	after := ""
	if req.Cursor != "" {
		cur, cerr := s.base.cursors.decode(ctx, req.Cursor, "diff", req.Agent, req.Workbench, "")
		if cerr != nil {
			return nil, cerr
		}
		if cur.Args != args || !cur.issuedFor(newWS) {
			return nil, invalidArgument("cursor", "was issued for other from/to sides")
		}
		if cur.Fence != fence {
			e := newError(CodeReadFenceChanged, "the workbench changed since the first page (revision %d, now %d); diff again from the start", cur.Fence, fence)
			e.Retryable = true
			return nil, e
		}
		after = cur.After
	}
	// The page's memory (pages.go) is known from its limit and the bound on its paths'
	// bytes before the walk builds it.
	release, aerr := s.base.admit(ctx, diffPageBytes(limit), "the diff page", -1)
	if aerr != nil {
		return nil, aerr
	}
	defer release()
	page, derr := diff.Tree(members(oldView, oldWS, after), members(newView, newWS, after),
		diff.TreeOptions{Limit: limit, MaxScan: diffScanPerPage, MaxPathBytes: diffPagePathBytes, Compare: meta.ComparePaths})
	if derr != nil {
		return nil, AsError(derr)
	}
	r := success()
	r["workbench_id"] = req.Workbench
	r["kind"] = "tree"
	r["from"], r["to"] = req.From.String(), req.To.String()
	r["changes"] = page.Rows
	r["truncated"] = page.More
	r["next_cursor"] = nil
	if page.More {
		r["next_cursor"] = s.base.cursors.encode(ctx, cursor{Kind: "diff", Agent: req.Agent, Workbench: req.Workbench,
			Incarnation: newWS.Incarnation, Created: newWS.CreatedVersion, Args: args, Fence: fence, After: page.Last})
	}
	return r, nil
}

// members yields a workbench's files after the path after, in View.Files order.
func members(view *meta.View, ws *meta.Workspace, after string) iter.Seq[diff.Member] {
	return func(yield func(diff.Member) bool) {
		view.Files(ws, after, func(p string, e *meta.Entry) bool {
			return yield(diff.Member{Path: p, Digest: e.Digest, Size: e.Size})
		})
	}
}

// DiffInput is cairn_diff's input.
type DiffInput struct {
	ID      string  `json:"id"`
	Path    *string `json:"path"`
	From    string  `json:"from"`
	To      *string `json:"to"`
	Context *int    `json:"context"`
	Cursor  *string `json:"cursor"`
	Limit   *int    `json:"limit"`
}
