package workbench

import (
	"context"
	"time"

	"github.com/cairnstore/cairn/api/auth"
	"github.com/cairnstore/cairn/meta"
)

// Who may use a root (DESIGN.md §4). The principal comes from the request context
// (auth.FromContext); a context without one is the node's own work or a node without
// authentication, and acts as auth.Local (every root, every scope).
//
// A root the caller may not use answers exactly as a root that does not exist, by
// construction rather than by copied texts:
//
//   - Reads: every view the adapter reads of such a root is the empty state (readView,
//     viewAt), the same view a root that does not exist is read from, after the same core
//     call. What a read then answers (NotFound, an empty search, read_version 0) is what
//     it answers for a missing root, and takes the same path.
//   - Writes: the operation reads the same empty views, and its command is decided on the
//     empty state, after the same view read, for a root that is missing and for a hidden
//     one (absentRoot): a command the empty state refuses (a renew of a missing snapshot,
//     a delete in a missing workbench) gets that answer, from the same path, without a
//     proposal. A command that would create the root is refused for a hidden root with
//     the NotFound the empty state gives its workbench (mayCreate), before any upload.
//   - Cursors are signed for the root and the principal (cursor.go): another root's, or
//     another principal's, fails as a forged one does.
//
// Scopes are checked only where the root is visible: without auth.ScopeRead a read, and
// without auth.ScopeWrite a write, is PermissionDenied (403).

// caller returns the principal ctx acts for: auth.Local when it carries none.
func caller(ctx context.Context) auth.Principal {
	if p, ok := auth.FromContext(ctx); ok {
		return p
	}
	return auth.Local
}

// hidden reports whether the caller may not use agent's root: it must look absent.
func hidden(ctx context.Context, agent string) bool { return !caller(ctx).MayUse(agent) }

// emptyView is the state of a shard that holds no root: what every read of a root that
// does not exist, or that the caller may not use, sees. Views are immutable and safe for
// concurrent use.
var emptyView = meta.New(meta.Options{}).View()

// visibleView returns v, or the empty state when agent's root is not in it or hidden
// from the caller: the one path by which both answer.
func visibleView(ctx context.Context, agent string, v *meta.View) *meta.View {
	if _, ok := v.Root(agent); !ok || hidden(ctx, agent) {
		return emptyView
	}
	return v
}

// mayRead answers PermissionDenied when the caller sees agent's root but lacks
// auth.ScopeRead. A hidden root passes: its reads see the empty state.
func mayRead(ctx context.Context, agent string) *Error {
	return mayDo(ctx, agent, auth.ScopeRead, "read")
}

// mayWrite answers PermissionDenied when the caller sees agent's root but lacks
// auth.ScopeWrite. A hidden root passes: its writes read the empty state and are refused
// where they would change it (mayCreate, absentRoot).
func mayWrite(ctx context.Context, agent string) *Error {
	return mayDo(ctx, agent, auth.ScopeWrite, "change")
}

// mayCreate is mayWrite for the writes that create a missing root (create, put, append,
// commit), before they upload anything: for a hidden root, the NotFound the empty state
// answers for workbench id (id "": the root itself).
func mayCreate(ctx context.Context, agent, id string) *Error {
	if err := mayWrite(ctx, agent); err != nil {
		return err
	}
	if !hidden(ctx, agent) {
		return nil
	}
	if id == "" {
		return newError(CodeNotFound, "agent root %q does not exist", agent)
	}
	_, err := emptyView.Workspace(agent, id)
	return AsError(err)
}

func mayDo(ctx context.Context, agent string, scope auth.Scope, verb string) *Error {
	p := caller(ctx)
	if !p.MayUse(agent) || p.Has(scope) {
		return nil
	}
	e := newError(CodePermissionDenied, "principal %q may not %s agent root %q: it lacks the %s scope", p.ID, verb, agent, scope)
	e.Details["scope"] = string(scope)
	return e
}

// bodyWorkspace names the workbench a command changes ("" for a root-wide one).
func bodyWorkspace(b meta.Body) string {
	switch b := b.(type) {
	case meta.CreateWorkspace:
		return b.Name
	case meta.Put:
		return b.Workspace
	case meta.Append:
		return b.Workspace
	case meta.Delete:
		return b.Workspace
	case meta.SnapshotMint:
		return b.Workspace
	case meta.SnapshotRenew:
		return b.Workspace
	case meta.SnapshotRetire:
		return b.Workspace
	case meta.Commit:
		return b.Workspace
	case meta.RestoreBegin:
		return b.Source
	}
	return ""
}

// absentRoot decides a command for agent's root when the root is not in its shard or is
// hidden from the caller, the same way for both: after the same view read (readView), the
// command is applied to the empty state; if that refuses it, its answer is the command's
// (done, nothing proposed). A command the empty state takes proceeds (done false) for a
// missing root, which it creates, and is refused for a hidden one. A root seen to exist is
// remembered (s.roots), so a known root's commands skip the read.
func (s *Service) absentRoot(ctx context.Context, agent string, h meta.Header, b meta.Body) (res meta.Result, done bool, err error) {
	if _, known := s.roots.Load(agent); known && !hidden(ctx, agent) {
		return meta.Result{}, false, nil
	}
	view, err := s.readView(ctx, agent)
	if err != nil {
		return meta.Result{}, true, err
	}
	if r, ok := view.Root(agent); ok {
		s.roots.Store(agent, r.UID)
		return meta.Result{}, false, nil
	}
	h.TimeMs = time.Now().UnixMilli()
	data, err := meta.EncodeCommand(h, b)
	if err != nil {
		return meta.Result{}, true, err
	}
	if res := meta.New(meta.Options{}).Apply(1, data); res.Err != nil {
		return res, true, nil
	}
	if werr := mayCreate(ctx, agent, bodyWorkspace(b)); werr != nil {
		return meta.Result{}, true, werr // hidden: the NotFound of a command that would create
	}
	return meta.Result{}, false, nil
}
