package workbench

import (
	"context"
	"iter"
	"strings"
	"sync/atomic"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/diff"
)

// Attempts rewinds a workbench (rewind.go, rewind_target.go, rewind_token.go), forks it
// and merges a fork back (fork.go, merge.go): the
// operations over a run's attempts (docs/architecture.md, "Attempts"). Every change it
// makes is one meta.ChangeSet: all or nothing, guarded by what its preview saw, each
// changed path a new version attributed to the request's principal and surface.
type Attempts struct {
	base   *base
	review *Review
	life   *Lifecycle // forks are restores (fork.go)
	// minter mints the keys forks ask for (fork_key.go); nil: none.
	minter atomic.Pointer[minterBox]
}

// Rewind bounds.
const (
	// MaxRewindChanges bounds the paths one rewind changes: they are one command
	// (meta.MaxChangeSetChanges).
	MaxRewindChanges = meta.MaxChangeSetChanges
	// MaxRewindFileDiffs bounds the file diffs one preview carries (RewindRequest.FileDiffs).
	MaxRewindFileDiffs = 20
	// rewindRowBytes estimates one change of an answer, besides its path: its map, sides
	// and strings.
	rewindRowBytes = 2 << 10
)

// RewindRequest asks to rewind the files of Scope in workbench Workbench to Target.
type RewindRequest struct {
	Agent, Workbench string
	Target           RewindTarget
	Scope            RewindScope
	// DryRun previews: the answer lists the changes and carries the token an apply needs,
	// and nothing changes.
	DryRun bool
	// Token is a preview's token; an apply needs one (InvalidArguments naming "token").
	Token string
	// FileDiffs adds to a preview the diff of each changed file, for the first
	// MaxRewindFileDiffs of them.
	FileDiffs bool
	// RequestID makes the apply idempotent.
	RequestID string
}

// rewindPlan is what a rewind would change, planned at one live view.
type rewindPlan struct {
	view    *meta.View
	ws      *meta.Workspace
	since   uint64 // the live view's version
	target  string // the target as resolved (rewindSide.label, or with a snapshot's version)
	changes []meta.PathChange
	rows    []rewindRow
}

// rewindRow is one change as the answer shows it: the path's body now (cur) and at the
// target (to); nil where it holds no file.
type rewindRow struct {
	path    string
	cur, to *meta.Entry
}

// Rewind previews or applies a rewind of req.Scope in a workbench to req.Target, in place.
//
// The walk: read a linearizable live view; resolve the target (a snapshot's frozen view,
// a commit's held version, or a time inside the root's history retention, meta
// HistoryView.FilesAtTime); walk the scope on both sides in path order and keep every
// path whose body differs (added, removed or changed; a body is its digest, content type,
// executable bit and fields). A preview answers those changes (file diffs on request) and
// a token (rewind_token.go). An apply plans again at a new view, checks the token (its
// signature, age, workbench incarnation), that nothing in the scope changed after the
// preview's version (else Conflict, details.paths naming what changed, details.reason
// "stale"), and that the plan is the preview's; then proposes one meta.ChangeSet that
// sets each path to its target body (the same segments, no byte copied) or deletes it,
// guarded by each path's generation and by the scope's being unchanged since the preview,
// so a writer that lands between the check and the command still makes it refuse, whole.
//
// The answer: workbench_id, target, scope, dry_run, changes ([{path, change:
// added|removed|changed, from, to: {generation, digest_uri, size_bytes} or null, diff}];
// to's generation is the target's version in a preview, the version the apply made in an
// apply), counts {added, removed, changed}, token (a preview), applied, generation (the
// version every changed path got; an apply that changed something), replayed (a retry
// under the request id of an apply that landed: the changes are that apply's, read back
// from history, meta HistoryView.ChangesAt, even when the target is gone since: a retired
// or reaped snapshot, a deleted commit, a time past retention).
//
// Errors: NotFound (workbench, commit; a root or workbench the caller may not see),
// SnapshotNotFound, SnapshotExpired, InvalidArguments naming target, paths, prefix or
// token (details.rule "too_many_changes" past MaxRewindChanges, "beyond_retention" for a
// time history no longer holds exactly, "expired" for an old token), NotDirectory or
// AlreadyExists (kind directory) naming details.paths when the scope takes one path of a
// file/directory clash to the target but leaves the other (it could never apply; checked
// by the change set's own shape rule, meta View.CheckChangeSetShape), Conflict (the scope
// changed since the preview; not retryable: preview again), PermissionDenied without
// the write scope, or with details.prefixes for a prefix-bound key whose scope names a
// path or prefix outside its prefixes (mayRewindScope).
func (s *Attempts) Rewind(ctx context.Context, req RewindRequest) (Result, error) {
	if err := validateTarget(req.Agent, req.Workbench, ""); err != nil {
		return nil, err
	}
	if req.Target.Kind == "" {
		return nil, invalidArgument("target", "is required (snapshot:<id or name>, commit:<commit_identity> or time:<RFC 3339 or Unix ms>)")
	}
	sc, err := req.Scope.check()
	if err != nil {
		return nil, err
	}
	req.Scope = sc
	if err := mayRead(ctx, req.Agent); err != nil {
		return nil, err
	}
	if err := mayWrite(ctx, req.Agent); err != nil {
		return nil, err
	}
	if err := mayRewindScope(ctx, s.base, req.Agent, req.Scope); err != nil {
		return nil, err
	}
	var tok rewindToken
	if !req.DryRun {
		if req.Token == "" {
			return nil, invalidArgument("token", "is required to apply a rewind: preview it first (dry_run) and pass its token")
		}
		if tok, err = s.decodeToken(ctx, req.Agent, tokenRewind, req.Workbench, req.Token); err != nil {
			return nil, err
		}
	}
	if req.DryRun && req.Token != "" {
		return nil, invalidArgument("token", "applies a rewind; a preview issues one")
	}
	plan, perr := s.plan(ctx, req)
	if perr != nil {
		if !req.DryRun && req.RequestID != "" {
			// The target may be gone since an apply under this id landed: its replay needs
			// only history (replayWithoutTarget).
			if r, err := s.replayWithoutTarget(ctx, req); r != nil || err != nil {
				return r, err
			}
		}
		return nil, perr
	}
	if req.DryRun {
		return s.preview(ctx, req, plan)
	}
	return s.apply(ctx, req, plan, tok)
}

// plan reads the live workbench and the target and lists what differs in the scope.
func (s *Attempts) plan(ctx context.Context, req RewindRequest) (*rewindPlan, error) {
	view, ws, err := s.base.workspaceView(ctx, req.Agent, req.Workbench)
	if err != nil {
		return nil, err
	}
	target, resolved, err := s.resolveTarget(ctx, req.Agent, req.Workbench, view, ws, req.Target)
	if err != nil {
		return nil, err
	}
	p := &rewindPlan{view: view, ws: ws, since: view.Version(), target: resolved}
	if err := p.walk(req.Scope, liveSide(view, ws), target); err != nil {
		return nil, err
	}
	// A scope that takes a path to the target but not its clashing neighbour (the target
	// holds outputs/x/y where a file outputs/x lives on outside the scope, or the reverse)
	// can never apply: the change set's own shape rule refuses it here, before a token.
	if len(p.changes) > 0 {
		if err := view.CheckChangeSetShape(ws, p.changes); err != nil {
			e := AsError(err)
			e.Message = "the rewind cannot apply in this scope: " + e.Message + "; widen the scope to take both paths"
			return nil, e
		}
	}
	return p, nil
}

// walk merges the scope's files on both sides (path order) into the plan's changes.
func (p *rewindPlan) walk(sc RewindScope, live, target rewindSide) error {
	if len(sc.Paths) > 0 {
		for _, path := range sc.Paths {
			if err := p.addAt(path, live, target); err != nil {
				return err
			}
		}
		return nil
	}
	if sc.Prefix != "" {
		// The file the prefix names, if either side holds one there: it sorts before
		// everything below it (meta.ComparePaths).
		if err := p.addAt(sc.Prefix, live, target); err != nil {
			return err
		}
	}
	next, stop := pull(live, sc)
	defer stop()
	curPath, cur, more := next()
	var failed error
	err := target.files(sc, func(path string, to *meta.Entry) bool {
		for more && meta.ComparePaths(curPath, path) < 0 {
			if failed = p.add(curPath, cur, nil); failed != nil {
				return false
			}
			curPath, cur, more = next()
		}
		var now *meta.Entry
		if more && curPath == path {
			now = cur
			curPath, cur, more = next()
		}
		failed = p.add(path, now, to)
		return failed == nil
	})
	for ; err == nil && failed == nil && more; curPath, cur, more = next() {
		failed = p.add(curPath, cur, nil)
	}
	if err != nil {
		return AsError(err)
	}
	return failed
}

// addAt records path when its body on the live side differs from the target's.
func (p *rewindPlan) addAt(path string, live, target rewindSide) error {
	cur, err := live.at(path)
	if err != nil {
		return err
	}
	to, err := target.at(path)
	if err != nil {
		return err
	}
	return p.add(path, cur, to)
}

// pull turns a side's walk into a pull iterator.
func pull(side rewindSide, sc RewindScope) (next func() (string, *meta.Entry, bool), stop func()) {
	type item struct {
		path string
		e    *meta.Entry
	}
	n, st := iter.Pull(func(yield func(item) bool) {
		_ = side.files(sc, func(p string, e *meta.Entry) bool { return yield(item{p, e}) })
	})
	return func() (string, *meta.Entry, bool) {
		it, ok := n()
		return it.path, it.e, ok
	}, st
}

// add records path when its body now (cur) differs from its body at the target (to).
func (p *rewindPlan) add(path string, cur, to *meta.Entry) error {
	if sameBody(cur, to) {
		return nil
	}
	if len(p.changes) == MaxRewindChanges {
		e := invalidArgument("scope", "the rewind would change more than %d paths, the most one atomic rewind changes; rewind a narrower prefix or set of paths", MaxRewindChanges)
		e.Details["rule"] = "too_many_changes"
		e.Details["max_changes"] = MaxRewindChanges
		return e
	}
	c := meta.PathChange{Path: path}
	if cur != nil {
		c.ExpectGeneration = cur.Generation
	}
	if to != nil {
		c.SourcePath, c.SourceGeneration = path, to.Generation
	}
	p.changes = append(p.changes, c)
	p.rows = append(p.rows, rewindRow{path: path, cur: cur, to: to})
	return nil
}

// sameBody reports whether two entries (nil: no file) hold the same file as a rewind sees
// it: digest, content type, executable bit and fields.
func sameBody(a, b *meta.Entry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Digest == b.Digest && a.ContentType == b.ContentType && a.Executable == b.Executable &&
		fieldsKey(a.Fields) == fieldsKey(b.Fields)
}

// admitAnswer holds the answer's memory estimate: its rows, their paths, and the file
// diffs' output caps (each diff's bodies are admitted when it runs, diffBodies).
func (s *Attempts) admitAnswer(ctx context.Context, plan *rewindPlan, diffs int) (func(), *Error) {
	n := int64(queryBaseBytes)
	for _, r := range plan.rows {
		n += rewindRowBytes + 4*int64(len(r.path))
	}
	n += int64(diffs) * 3 * int64(diff.DefaultOptions().MaxBytes)
	return s.base.admit(ctx, n, "the rewind", -1)
}

// changeKind names a row's change as a state diff does (workbench/diff): added (the
// rewind creates the path), removed (deletes it), changed.
func (r rewindRow) changeKind() diff.Change {
	switch {
	case r.cur == nil:
		return diff.Added
	case r.to == nil:
		return diff.Removed
	}
	return diff.Changed
}

// sideInfo describes a row's side: generation, digest_uri, size_bytes; nil without a file.
func sideInfo(e *meta.Entry) map[string]any {
	if e == nil {
		return nil
	}
	return map[string]any{"generation": e.Generation, "digest_uri": DigestURI(e.Digest), "size_bytes": e.Size}
}

// scopeInfo renders the scope for an answer.
func scopeInfo(sc RewindScope) map[string]any {
	switch {
	case sc.Prefix != "":
		return map[string]any{"prefix": sc.Prefix}
	case len(sc.Paths) > 0:
		return map[string]any{"paths": sc.Paths}
	}
	return map[string]any{"whole": true}
}

// trimTarget drops the version a snapshot target's resolved form carries for the token.
func trimTarget(resolved string) string {
	t, _, _ := strings.Cut(resolved, "@")
	return t
}
