package workbench

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/auth"
)

// RewindTarget is the point a rewind returns to: a snapshot of the workbench (by id or
// name), one of its commits, or a past time within its root's history retention.
//
// Syntax (ParseRewindTarget; the same on REST, MCP and the CLI):
//
//	snapshot:<id>        a snapshot by id (digits) ...
//	snapshot:<name>      ... or by name
//	commit:<identity>    a commit by its 64-hex commit_identity
//	time:<RFC 3339>      the state after the last change at or before that time
//	time:<ms>            ... the same in Unix milliseconds (digits only; 0 is 1970)
//
// A time target reads back (String, an answer's target) in one form whichever was given:
// RFC 3339 in UTC with milliseconds, e.g. time:2024-05-01T12:00:00.000Z.
type RewindTarget struct {
	Kind     string // SideSnapshot, SideCommit or TargetTime
	Snapshot At
	Commit   string
	AtMs     int64
}

// TargetTime is the kind of a rewind target in history.
const TargetTime = "time"

// rewindTimeLayout is RFC 3339 with milliseconds, the one form a time target reads back in.
const rewindTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// MaxRewindTargetBytes bounds a rewind target: the longest is a snapshot name
// (meta.MaxSnapshotNameBytes) after "snapshot:". REST and MCP enforce it here; the
// cairn_rewind schema (api/mcp) states the same number, which its test checks.
const MaxRewindTargetBytes = len(SideSnapshot) + 1 + meta.MaxSnapshotNameBytes

// rewindTargetSyntax is what a target may be, for the refusals of a malformed one.
const rewindTargetSyntax = "must be snapshot:<id or name>, commit:<commit_identity> or time:<RFC 3339 or Unix ms>"

// String renders the target in ParseRewindTarget's syntax (a time in RFC 3339, UTC, ms).
func (t RewindTarget) String() string {
	if t.Kind == TargetTime {
		return TargetTime + ":" + time.UnixMilli(t.AtMs).UTC().Format(rewindTimeLayout)
	}
	return DiffSide{Kind: t.Kind, Snapshot: t.Snapshot, Commit: t.Commit}.String()
}

// ParseRewindTarget decodes a rewind target (see RewindTarget); field names the argument
// in the InvalidArguments error. It checks syntax only: a time after now or before the
// history window is refused when the rewind resolves it (Attempts.Rewind).
func ParseRewindTarget(field, s string) (RewindTarget, *Error) {
	if len(s) > MaxRewindTargetBytes {
		return RewindTarget{}, invalidArgument(field, "must be at most %d bytes, got %d", MaxRewindTargetBytes, len(s))
	}
	kind, arg, _ := strings.Cut(s, ":")
	switch kind {
	case TargetTime:
		if arg != "" && strings.Trim(arg, "0123456789") == "" {
			ms, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return RewindTarget{}, invalidArgument(field, "time:<ms> is beyond the Unix milliseconds this server reads, got %q", arg)
			}
			return RewindTarget{Kind: TargetTime, AtMs: ms}, nil
		}
		at, err := time.Parse(time.RFC3339Nano, arg)
		if err != nil {
			return RewindTarget{}, invalidArgument(field, "time:<T> needs an RFC 3339 time or Unix milliseconds (digits only), got %q", arg)
		}
		return RewindTarget{Kind: TargetTime, AtMs: at.UnixMilli()}, nil
	case SideSnapshot, SideCommit:
		if arg == "" {
			return RewindTarget{}, invalidArgument(field, "%s: %s: names nothing, got %q", rewindTargetSyntax, kind, s)
		}
	default:
		return RewindTarget{}, invalidArgument(field, "%s, got %q", rewindTargetSyntax, s)
	}
	d, err := ParseDiffSide(field, s)
	if err != nil {
		return RewindTarget{}, err
	}
	return RewindTarget{Kind: d.Kind, Snapshot: d.Snapshot, Commit: d.Commit}, nil
}

// RewindScope is what a rewind changes: the whole workbench (the zero value), the files
// at or below a path (Prefix), or a set of paths (Paths). Commit and restore manifests
// (meta.IsReservedPath) are never in it.
//
// A prefix is matched component-wise, as a key's path prefixes are (auth.Inside) and the
// change feed's prefix filter: "a/b" holds the file a/b itself and every file below a
// directory a/b, never a/bc. One trailing "/" is dropped, as a key's prefixes drop it
// (auth.NormalPrefixes): "outputs/" and "outputs" are one scope, in the token too.
type RewindScope struct {
	Prefix string
	Paths  []string
}

// check validates the scope and returns it with Paths sorted and without repeats, and
// Prefix without its trailing "/".
func (sc RewindScope) check() (RewindScope, *Error) {
	switch {
	case sc.Prefix != "" && len(sc.Paths) > 0:
		return sc, invalidArgument("paths", "give paths or prefix, not both")
	case len(sc.Paths) > meta.MaxChangeSetChanges:
		return sc, invalidArgument("paths", "must hold at most %d paths, got %d", meta.MaxChangeSetChanges, len(sc.Paths))
	case sc.Prefix != "":
		if len(sc.Prefix) > 1 { // "/" stays itself: absolute, refused below
			sc.Prefix = strings.TrimSuffix(sc.Prefix, "/")
		}
		if err := meta.ValidatePath("prefix", sc.Prefix); err != nil {
			return sc, AsError(err)
		}
		if meta.IsReservedPath(sc.Prefix) {
			return sc, invalidArgument("prefix", "%q is written only by commit and restore", sc.Prefix)
		}
	}
	paths := slices.Clone(sc.Paths)
	for _, p := range paths {
		if err := meta.ValidatePath("paths", p); err != nil {
			return sc, AsError(err)
		}
		if meta.IsReservedPath(p) {
			return sc, invalidArgument("paths", "%q is written only by commit and restore", p)
		}
	}
	slices.SortFunc(paths, meta.ComparePaths)
	sc.Paths = slices.Compact(paths)
	return sc, nil
}

// String renders the scope for the token: "*" (whole), "prefix:<dir>", or the paths.
func (sc RewindScope) String() string {
	switch {
	case sc.Prefix != "":
		return "prefix:" + sc.Prefix
	case len(sc.Paths) > 0:
		return "paths:" + strings.Join(sc.Paths, "\x00")
	}
	return "*"
}

// guard is the scope as a change set's Unchanged guard since version since. A prefix is
// both the directory (what lies below it) and a path (a file it names).
func (sc RewindScope) guard(since uint64) *meta.ScopeGuard {
	if sc.Prefix != "" {
		return &meta.ScopeGuard{Dir: sc.Prefix, Paths: []string{sc.Prefix}, Since: since}
	}
	return &meta.ScopeGuard{Paths: sc.Paths, Since: since}
}

// in reports whether path p lies in the scope.
func (sc RewindScope) in(p string) bool {
	switch {
	case meta.IsReservedPath(p):
		return false
	case sc.Prefix != "":
		return auth.Inside(p, sc.Prefix)
	case len(sc.Paths) > 0:
		_, ok := slices.BinarySearchFunc(sc.Paths, p, meta.ComparePaths)
		return ok
	}
	return true
}

// rewindSide is one side of a rewind plan: how to read the files of the scope there.
type rewindSide struct {
	// files calls fn with the files below the scope's prefix (the whole scope without
	// one) in path order; at returns one path's (a file a prefix names is read so,
	// rewindPlan.walk).
	files func(sc RewindScope, fn func(path string, e *meta.Entry) bool) error
	at    func(path string) (*meta.Entry, error)
	// label is the side as the answer names it (the target's resolved form).
	label string
}

// liveSide reads the workbench as view holds it.
func liveSide(view *meta.View, ws *meta.Workspace) rewindSide {
	return viewSide(view, ws, SideLive)
}

// viewSide reads the workbench as a view at a fixed version holds it.
func viewSide(view *meta.View, ws *meta.Workspace, label string) rewindSide {
	return rewindSide{label: label,
		files: func(sc RewindScope, fn func(string, *meta.Entry) bool) error {
			view.Files(ws, sc.Prefix, func(p string, e *meta.Entry) bool {
				if sc.Prefix != "" && !strings.HasPrefix(p, sc.Prefix+"/") {
					return false
				}
				return !sc.in(p) || fn(p, e)
			})
			return nil
		},
		at: func(p string) (*meta.Entry, error) {
			e, err := fileAt(view, ws, p, DiffSide{Kind: SideLive})
			if err != nil && AsError(err).Code == CodeNotArtifact {
				return nil, nil // a directory holds no file at p: the plan's shape check names the clash
			}
			return e, err
		},
	}
}

// timeSide reads the workbench as it was at command time atMs (meta
// HistoryView.FilesAtTime).
func timeSide(view *meta.View, ws *meta.Workspace, atMs int64) rewindSide {
	return rewindSide{label: RewindTarget{Kind: TargetTime, AtMs: atMs}.String(),
		files: func(sc RewindScope, fn func(string, *meta.Entry) bool) error {
			return view.History().FilesAtTime(ws, sc.Prefix, atMs, func(p string, e *meta.Entry) bool {
				return !sc.in(p) || fn(p, e)
			})
		},
		at: func(p string) (*meta.Entry, error) { return view.History().FileAtTime(ws, p, atMs) },
	}
}

// resolveTarget returns the side a rewind of ws (read in the live view) returns to, and
// the target's resolved form for the token (a snapshot name becomes its id and version).
// Errors: SnapshotNotFound, SnapshotExpired, NotFound (commit), InvalidArguments naming
// "target" for a snapshot of another incarnation or a time outside the history window
// (meta HistoryView.FilesAtTime) less RewindTokenTTL, which an apply may need after the
// preview.
func (s *Attempts) resolveTarget(ctx context.Context, agent, id string, view *meta.View, ws *meta.Workspace, t RewindTarget) (rewindSide, string, error) {
	switch t.Kind {
	case SideSnapshot:
		sv, sws, snap, err := s.base.resolve(ctx, agent, id, t.Snapshot)
		if err != nil {
			return rewindSide{}, "", err
		}
		if sws.Incarnation != ws.Incarnation {
			return rewindSide{}, "", invalidArgument("target", "the snapshot was taken of an earlier workbench of that name")
		}
		label := SideSnapshot + ":" + strconv.FormatUint(snap.ID, 10)
		return viewSide(sv, sws, label), label + "@" + strconv.FormatUint(snap.ReadVersion, 10), nil
	case SideCommit:
		c, ok := view.Lifecycle().Commit(ws, t.Commit)
		if !ok {
			e := newError(CodeNotFound, "workbench %q has no commit %s", id, t.Commit)
			e.Details["commit"] = t.Commit
			return rewindSide{}, "", e
		}
		cv, cws, err := view.Lifecycle().VersionView(ws, c.Version)
		if err != nil {
			return rewindSide{}, "", AsError(err)
		}
		return viewSide(cv, cws, t.String()), t.String(), nil
	}
	if now := s.base.now(); t.AtMs > now.UnixMilli() {
		e := invalidArgument("target", "time %s is after the node's current time %s: a rewind returns to the past",
			time.UnixMilli(t.AtMs).UTC().Format(rewindTimeLayout), now.UTC().Format(rewindTimeLayout))
		e.Details["rule"] = "in_future"
		return rewindSide{}, "", e
	}
	if start := view.History().WindowStart(agent) + RewindTokenTTL.Milliseconds(); t.AtMs < start {
		e := invalidArgument("target", "time %s is before %s: history keeps every version of this root only for its retention age, and a preview must stay applicable for %s",
			time.UnixMilli(t.AtMs).UTC().Format(time.RFC3339), time.UnixMilli(start).UTC().Format(time.RFC3339), RewindTokenTTL)
		e.Details["rule"] = "beyond_retention"
		return rewindSide{}, "", e
	}
	// A time past the newest command is the present (what a scope holds now is what it
	// held then). The token keeps the time as given: if nothing in the scope changed
	// between the preview and the apply, both read the same state.
	side := timeSide(view, ws, min(t.AtMs, view.NowMs()))
	side.label = t.String()
	return side, side.label, nil
}

// RewindInput is cairn_rewind's input and the REST body of POST …/rewind: the workbench,
// the target (ParseRewindTarget), the scope (paths or prefix; neither: the whole
// workbench), dry_run (preview), token (a preview's, to apply) and file_diffs.
type RewindInput struct {
	ID        string   `json:"id"`
	Target    string   `json:"target"`
	Paths     []string `json:"paths"`
	Prefix    *string  `json:"prefix"`
	DryRun    *bool    `json:"dry_run"`
	Token     *string  `json:"token"`
	FileDiffs *bool    `json:"file_diffs"`
}

// Request returns the RewindRequest in asks for in agent's root under requestID ("" for
// none; InvalidArguments naming the field of a bad argument).
func (in RewindInput) Request(agent, requestID string) (RewindRequest, *Error) {
	req := RewindRequest{Agent: agent, Workbench: in.ID, Scope: RewindScope{Paths: in.Paths}, RequestID: requestID}
	if in.Target == "" {
		return req, invalidArgument("target", "is required (snapshot:<id or name>, commit:<commit_identity> or time:<RFC 3339 or Unix ms>)")
	}
	t, err := ParseRewindTarget("target", in.Target)
	if err != nil {
		return req, err
	}
	req.Target = t
	if in.Paths != nil && len(in.Paths) == 0 {
		// A list that came out empty names no file: taken as no list, it would rewind
		// the whole workbench.
		return req, invalidArgument("paths", "must name at least one file; leave it out to rewind the whole workbench")
	}
	if in.Prefix != nil {
		req.Scope.Prefix = *in.Prefix
	}
	req.DryRun = in.DryRun != nil && *in.DryRun
	req.FileDiffs = in.FileDiffs != nil && *in.FileDiffs
	if in.Token != nil {
		req.Token = *in.Token
	}
	return req, nil
}
