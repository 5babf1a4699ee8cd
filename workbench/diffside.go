package workbench

import (
	"context"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/meta"
)

// DiffSide names one side of a diff (Review.Diff): the live workbench, a retained
// generation of the diffed path, a snapshot (by id or name) or a sealed commit.
//
// Syntax (ParseDiffSide; the same on REST, MCP and the CLI):
//
//	live                  the workbench now
//	generation:<N>        the path's body of generation N (files only; N ≥ 1)
//	snapshot:<id>         a snapshot by id (digits) ...
//	snapshot:<name>       ... or by name
//	commit:<identity>     a commit by its 64-hex commit_identity
type DiffSide struct {
	Kind       string // "live", "generation", "snapshot", "commit"
	Generation uint64
	Snapshot   At
	Commit     string
}

// Diff side kinds.
const (
	SideLive       = "live"
	SideGeneration = "generation"
	SideSnapshot   = "snapshot"
	SideCommit     = "commit"
)

// String renders the side in ParseDiffSide's syntax.
func (d DiffSide) String() string {
	switch d.Kind {
	case SideGeneration:
		return SideGeneration + ":" + strconv.FormatUint(d.Generation, 10)
	case SideSnapshot:
		if d.Snapshot.SnapshotName != "" {
			return SideSnapshot + ":" + d.Snapshot.SnapshotName
		}
		return SideSnapshot + ":" + strconv.FormatUint(d.Snapshot.SnapshotID, 10)
	case SideCommit:
		return SideCommit + ":" + d.Commit
	}
	return SideLive
}

// ParseDiffSide decodes a side (see DiffSide); field names the argument in the
// InvalidArguments error ("from", "to").
func ParseDiffSide(field, s string) (DiffSide, *Error) {
	const syntax = "must be live, generation:<N>, snapshot:<id or name> or commit:<commit_identity>"
	kind, arg, _ := strings.Cut(s, ":")
	switch {
	case s == SideLive:
		return DiffSide{Kind: SideLive}, nil
	case kind == SideGeneration:
		n, err := strconv.ParseUint(arg, 10, 64)
		if err != nil || n == 0 {
			return DiffSide{}, invalidArgument(field, "generation:<N> needs an integer N ≥ 1, got %q", arg)
		}
		return DiffSide{Kind: SideGeneration, Generation: n}, nil
	case kind == SideSnapshot && arg != "":
		if n, err := strconv.ParseUint(arg, 10, 64); err == nil {
			return DiffSide{Kind: SideSnapshot, Snapshot: AtSnapshotID(n)}, nil
		}
		return DiffSide{Kind: SideSnapshot, Snapshot: AtSnapshotName(arg)}, nil
	case kind == SideCommit:
		if err := decodeIdentity(arg); err != nil {
			return DiffSide{}, invalidArgument(field, "commit:<identity> needs the 64 lower-case hex characters of a commit_identity")
		}
		return DiffSide{Kind: SideCommit, Commit: arg}, nil
	}
	return DiffSide{}, invalidArgument(field, "%s, got %q", syntax, s)
}

// resolveSide returns the view and workbench a diff side reads: a linearizable live view,
// a snapshot's frozen view (resolve), or a view at a commit's version (the commit holds
// that history). A generation side reads the live view; fileAt picks its version.
// Errors: NotFound (workbench, commit), SnapshotNotFound, SnapshotExpired.
func (s *Review) resolveSide(ctx context.Context, agent, id string, d DiffSide) (*meta.View, *meta.Workspace, error) {
	switch d.Kind {
	case SideSnapshot:
		view, ws, _, err := s.base.resolve(ctx, agent, id, d.Snapshot)
		return view, ws, err
	case SideCommit:
		view, ws, _, err := s.base.resolve(ctx, agent, id, At{})
		if err != nil {
			return nil, nil, err
		}
		c, ok := view.Lifecycle().Commit(ws, d.Commit)
		if !ok {
			e := newError(CodeNotFound, "workbench %q has no commit %s", id, d.Commit)
			e.Details["commit"] = d.Commit
			return nil, nil, e
		}
		cv, cws, verr := view.Lifecycle().VersionView(ws, c.Version)
		if verr != nil {
			return nil, nil, AsError(verr)
		}
		return cv, cws, nil
	}
	view, ws, _, err := s.base.resolve(ctx, agent, id, At{})
	return view, ws, err
}

// fileAt returns the entry a side shows at path, or nil when the path holds no file there
// (a generation side must exist: NotFound naming the generation otherwise). A directory is
// NotArtifact.
func fileAt(view *meta.View, ws *meta.Workspace, path string, d DiffSide) (*meta.Entry, error) {
	if d.Kind == SideGeneration {
		return fileAtGeneration(view, ws, path, d.Generation)
	}
	e, err := view.File(ws, path)
	if err != nil {
		if meta.CodeOf(err) == meta.CodeNotFound {
			return nil, nil
		}
		return nil, AsError(err)
	}
	return e, nil
}

// fileAtGeneration reads path's body of generation gen from the path's retained history
// (meta HistoryView.FileAt). Otherwise (never that generation, or no longer retained)
// NotFound with details.generation.
func fileAtGeneration(view *meta.View, ws *meta.Workspace, path string, gen uint64) (*meta.Entry, error) {
	fv, err := view.History().FileAt(ws, path, gen)
	if err == nil {
		return fv.Entry, nil
	}
	if meta.CodeOf(err) != meta.CodeNotFound {
		return nil, AsError(err)
	}
	e := newError(CodeNotFound, "generation %d of %q is not a retained version of the file", gen, path)
	e.Details["generation"] = gen
	return nil, e
}
