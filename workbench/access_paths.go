package workbench

import (
	"context"
	"strings"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Keys bound to path prefixes (auth.Principal.Prefixes; workbench/auth/doc.go). Reads go
// through a view restricted to the prefixes (meta.View.OnlyPaths, visibleView): a path
// outside them answers exactly as a missing path, and listings, queries, histories,
// proposals and the change feed leave it out. A write is decided from the command alone
// (mayTouchPaths), before anything is read: a command naming a path outside the prefixes,
// or acting on a whole workbench (a commit seals every path, a restore or fork copies
// every path, a workbench delete ends every path, a rewind's guard over the whole
// workbench), is PermissionDenied whether or not that path exists, so the refusal tells
// nothing of what the key cannot see. A rewind's scope is checked so too, preview and
// apply, before its token or target is read (mayRewindScope).

// commandPaths returns the paths command b names in its workbenches, and whole when it
// acts on every path of a workbench.
func commandPaths(b meta.Body) (paths []string, whole bool) {
	switch b := b.(type) {
	case meta.Put:
		return []string{b.Path}, false
	case meta.Append:
		return []string{b.Path}, false
	case meta.Delete:
		return []string{b.Path}, false
	case meta.ProposalCreate:
		return []string{b.Path}, false
	case meta.ChangeSet:
		for _, c := range b.Changes {
			paths = append(paths, c.Path)
			if c.SourcePath != "" {
				paths = append(paths, c.SourcePath)
			}
		}
		if g := b.Unchanged; g != nil {
			if g.Dir == "" && len(g.Paths) == 0 {
				return paths, true
			}
			if g.Dir != "" {
				paths = append(paths, g.Dir)
			}
			paths = append(paths, g.Paths...)
		}
		return paths, false
	case meta.Commit, meta.RestoreBegin, meta.DeleteWorkspace:
		return nil, true
	}
	return nil, false
}

// mayTouchPaths answers PermissionDenied when the caller is bound to path prefixes of
// agent's root and command b names a path outside them or acts on a whole workbench
// (commandPaths). A caller without prefixes, or that does not see the root, passes.
func mayTouchPaths(ctx context.Context, s *base, agent string, b meta.Body) *Error {
	a := s.reach(ctx, agent)
	if !a.any() || len(a.prefixes) == 0 {
		return nil
	}
	if d, ok := b.(meta.ProposalDecide); ok {
		// The proposal's path decides: one outside the prefixes is missing from the
		// caller's view, and its decision answers as a missing proposal's.
		view, err := s.readView(ctx, agent)
		if err != nil {
			return AsError(err)
		}
		if _, err := view.Proposals().Get(agent, d.Workspace, d.ID); err != nil {
			return AsError(err)
		}
		return nil
	}
	r := auth.Reach{Prefixes: a.prefixes}
	paths, whole := commandPaths(b)
	for _, p := range paths {
		if !r.ShowsPath(p) {
			return outsidePrefixes(ctx, agent, a.prefixes, "a path outside them")
		}
	}
	if whole {
		return outsidePrefixes(ctx, agent, a.prefixes, wholeWorkbench)
	}
	return nil
}

// mayRewindScope answers mayTouchPaths' PermissionDenied when the caller is bound to path
// prefixes of agent's root and a rewind's scope names a path, or a prefix, outside them:
// checked before the token, the target or the workbench is read, so a preview and an
// apply are refused alike whether the path exists or changed since (a staleness answer
// would tell). The whole-workbench scope (no prefix, no paths) is refused too, preview and
// apply alike (wholeWorkbench): its apply's guard over every path could never pass, so a
// preview would issue a token no apply takes.
func mayRewindScope(ctx context.Context, s *base, agent string, sc RewindScope) *Error {
	a := s.reach(ctx, agent)
	if !a.any() || len(a.prefixes) == 0 {
		return nil
	}
	if sc.Prefix == "" && len(sc.Paths) == 0 {
		// An unscoped rewind takes every path of the workbench to the target.
		return outsidePrefixes(ctx, agent, a.prefixes, wholeWorkbench)
	}
	r := auth.Reach{Prefixes: a.prefixes}
	if sc.Prefix != "" && !r.ShowsPath(sc.Prefix) {
		return outsidePrefixes(ctx, agent, a.prefixes, "a path outside them")
	}
	for _, p := range sc.Paths {
		if !r.ShowsPath(p) {
			return outsidePrefixes(ctx, agent, a.prefixes, "a path outside them")
		}
	}
	return nil
}

// wholeWorkbench is what mayTouchPaths and mayWholeWorkbench refuse a prefix-bound caller.
const wholeWorkbench = "an operation on a whole workbench (a commit, restore, fork, merge, discard, workbench delete, snapshot mint, renew or retire, or unscoped rewind) needs a key without path prefixes"

// mayWholeWorkbench answers mayTouchPaths' PermissionDenied for an operation on a whole
// workbench of agent's root (a commit, a fork, a snapshot's mint, renew or retire: a
// snapshot holds every path, and a fork's base is one) before it reads or writes
// anything: a commit's replay or a fork's pinning snapshot would otherwise answer or act
// first.
func mayWholeWorkbench(ctx context.Context, s *base, agent string) *Error {
	if a := s.reach(ctx, agent); a.any() && len(a.prefixes) > 0 {
		return outsidePrefixes(ctx, agent, a.prefixes, wholeWorkbench)
	}
	return nil
}

// outsidePrefixes is the PermissionDenied of mayTouchPaths and mayRootWide for a caller
// bound to prefixes.
func outsidePrefixes(ctx context.Context, agent string, prefixes []string, what string) *Error {
	e := newError(CodePermissionDenied, "principal %q may use only the paths at or below %s of agent root %q: %s",
		caller(ctx).ID, strings.Join(prefixes, ", "), agent, what)
	e.Details["prefixes"] = prefixes
	return e
}

// mayWritePath is mayCreate for a write of path (section-qualified) in workbench id, with
// mayTouchPaths' refusal of a path outside the caller's prefixes: checked before the body
// is read, so a refused write stores no blob (proposeRaw checks the command again).
func mayWritePath(ctx context.Context, s *base, agent, id, path string) *Error {
	if err := s.mayCreate(ctx, agent, id); err != nil {
		return err
	}
	return mayTouchPaths(ctx, s, agent, meta.Put{Agent: agent, Workspace: id, Path: path})
}
