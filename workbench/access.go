package workbench

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Who may use a root (workbench/auth/doc.go). The principal comes from the request context
// (auth.FromContext); a context without one is the node's own work or a node without
// authentication, and acts as auth.Local (every root, every scope). What a principal may
// reach is decided in one place, auth.Principal.ReachIn (widened here by the reserved
// workbench of the surface a request came through: reach), for every surface: the whole
// root, one workbench of it (a key bound to an OpenWOP tenant·workspace), or nothing.
//
// A root the caller may not use answers exactly as a root that does not exist, and a
// workbench it may not reach exactly as a workbench that does not exist, by construction
// rather than by copied texts:
//
//   - Reads: every view the adapter reads of such a root is the empty state (readView,
//     viewAt), the same view a root that does not exist is read from, after the same core
//     call: the one a missing root gets (coreFor, HiddenCores; on a cluster node, that of
//     a root never placed), so neither the answer nor its delay depends on the hidden
//     root's shard (led elsewhere, without a leader, without a replica here). What a
//     read then answers (NotFound, an empty search, read_version 0) is what it answers
//     for a missing root, and takes the same path. A caller that reaches only
//     some workbenches reads a view restricted to them (meta.View.Only): every other
//     workbench is missing from it, in lookups, listings, queries, snapshots, proposals,
//     restores and the change feed alike.
//   - Writes: the operation reads the same empty views, and its command is decided on the
//     empty state, after the same view read, for a root that is missing and for a hidden
//     one (absentRoot): a command the empty state refuses (a renew of a missing snapshot,
//     a delete in a missing workbench) gets that answer, from the same path, without a
//     proposal. A command that would create the root is refused for a hidden root with
//     the NotFound the empty state gives its workbench (mayCreate), before any upload.
//     A command in a workbench the caller does not reach is decided the same way, as if
//     the whole root were hidden (reachesCommand); a root-wide one (usage, quotas,
//     retention, purge) is PermissionDenied for a caller that reaches part of the root
//     (mayRootWide).
//   - Cursors are signed for the root and the principal (cursor.go): another root's, or
//     another principal's, fails as a forged one does.
//
// Scopes are checked only where the root is visible: without auth.ScopeRead a read, and
// without auth.ScopeWrite a write, is PermissionDenied (403).

// caller returns the principal ctx acts for: auth.Local when it carries none, or when
// ctx is the node's own part of a request (asNode).
func caller(ctx context.Context) auth.Principal {
	if ctx.Value(nodeWorkKey{}) != nil {
		return auth.Local
	}
	if p, ok := auth.FromContext(ctx); ok {
		return p
	}
	return auth.Local
}

type nodeWorkKey struct{}

// asNode returns ctx for a step the node takes itself as part of a request, beyond what
// the request's principal reaches: the step is decided as auth.Local (caller), and still
// attributed to the principal and surface of ctx (producerOf), so its record says whose
// request it served. Its one use: a discard releasing the fork's own pin on a parent the
// caller may not see (fork_pins.go). Nothing it reads may reach the caller's answer
// unless the caller could read it itself.
func asNode(ctx context.Context) context.Context { return context.WithValue(ctx, nodeWorkKey{}, true) }

// hidden reports whether the caller may not use agent's root: it must look absent.
func hidden(ctx context.Context, agent string) bool { return !caller(ctx).MayUse(agent) }

// coreFor returns the core every read and command of agent's root goes through: for a
// caller that may not use the root, the one its Cores serves a hidden root through
// (HiddenCores: on a cluster node, the core of a root never placed, so that the root's
// shard, its leader, or its lack of one, shows in no answer and no delay); else the
// root's own.
func coreFor(ctx context.Context, s *base, agent string) (Core, error) {
	if hc, ok := s.cores.(HiddenCores); ok && hidden(ctx, agent) {
		return hc.ForHidden(ctx, agent)
	}
	return s.cores.For(ctx, agent)
}

// access is what a caller reaches of one agent root: the whole root, or the workbenches
// listed (none: the root is hidden).
type access struct {
	whole       bool
	workbenches []string
	// prefixes, when set, are the only paths of those workbenches it reaches
	// (auth.Principal.Prefixes, access_paths.go).
	prefixes []string
}

func (a access) any() bool { return a.whole || len(a.workbenches) > 0 }

// rootWide reports whether a reaches the root-wide records: every workbench, every path.
func (a access) rootWide() bool { return a.whole && len(a.prefixes) == 0 }

// has reports whether a reaches workbench id ("": the root-wide records, whole only).
func (a access) has(id string) bool { return a.whole || id != "" && slices.Contains(a.workbenches, id) }

// reach returns what the caller reaches of agent's root: auth.Principal.ReachIn, and for
// a caller bound to one workbench, also the workbench the request's surface reserves
// (Config.ReservedWorkbenches: the OpenWOP facade keeps its tenant's packs in
// "openwop-packs" of the tenant's root), through that surface only.
func (s *base) reach(ctx context.Context, agent string) access {
	r := caller(ctx).ReachIn(agent)
	switch {
	case r.Whole:
		return access{whole: true, prefixes: r.Prefixes}
	case r.Workbench == "":
		return access{}
	}
	if _, reserved := s.cfg.ReservedWorkbenches[r.Workbench]; reserved {
		// A reserved workbench holds a surface's records of every workspace (the working
		// documents of each): a key bound to its name reaches nothing, on every surface.
		return access{}
	}
	a := access{workbenches: []string{r.Workbench}, prefixes: r.Prefixes}
	surface := SurfaceOf(ctx)
	for _, ws := range slices.Sorted(maps.Keys(s.cfg.ReservedWorkbenches)) {
		if owner := s.cfg.ReservedWorkbenches[ws]; surfaceOwns(owner, surface) && ws != r.Workbench {
			a.workbenches = append(a.workbenches, ws)
		}
	}
	return a
}

// surfaceOwns reports whether surface is owner or one of its operations ("s3/PutObject"
// is an operation of the surface "s3"): the surfaces a reserved workbench's owner speaks
// through (Config.ReservedWorkbenches).
func surfaceOwns(owner, surface string) bool {
	return owner != "" && (surface == owner || strings.HasPrefix(surface, owner+"/"))
}

// emptyView is the state of a shard that holds no root: what every read of a root that
// does not exist, or that the caller may not use, sees. Views are immutable and safe for
// concurrent use.
var emptyView = meta.New(meta.Options{}).View()

// visibleView returns v, the empty state when agent's root is not in it or hidden from
// the caller (the one path by which both answer), or v restricted to the workbenches the
// caller reaches (meta.View.Only).
func (s *base) visibleView(ctx context.Context, agent string, v *meta.View) *meta.View {
	if _, ok := v.Root(agent); !ok {
		return emptyView
	}
	a := s.reach(ctx, agent)
	if !a.any() {
		return emptyView
	}
	if !a.whole {
		v = v.Only(agent, a.workbenches...)
	}
	if len(a.prefixes) > 0 {
		v = v.OnlyPaths(agent, a.prefixes...)
	}
	return v
}

// mayRead answers PermissionDenied when the caller sees agent's root but lacks
// auth.ScopeRead. A hidden root passes: its reads see the empty state.
func mayRead(ctx context.Context, agent string) *Error {
	return mayDo(ctx, agent, auth.ScopeRead, "read")
}

// mayReadAgent checks agent's name (InvalidArguments), then mayRead.
func mayReadAgent(ctx context.Context, agent string) *Error {
	if err := meta.ValidateName("agent", agent); err != nil {
		return AsError(err)
	}
	return mayRead(ctx, agent)
}

// agentView is readView for a read of agent's root, after mayReadAgent; every error it
// returns is an *Error.
func (s *base) agentView(ctx context.Context, agent string) (*meta.View, error) {
	if err := mayReadAgent(ctx, agent); err != nil {
		return nil, err
	}
	view, err := s.readView(ctx, agent)
	if err != nil {
		return nil, AsError(err)
	}
	return view, nil
}

// mayWrite answers PermissionDenied when the caller sees agent's root but lacks
// auth.ScopeWrite. A hidden root passes: its writes read the empty state and are refused
// where they would change it (mayCreate, absentRoot).
func mayWrite(ctx context.Context, agent string) *Error {
	return mayDo(ctx, agent, auth.ScopeWrite, "change")
}

// mayCreate is mayWrite for the writes that create a missing root (create, put, append,
// commit), before they upload anything: for a hidden root, or a workbench id the caller
// does not reach, the NotFound the empty state answers for workbench id (id "": the root
// itself, which a caller that reaches any workbench of it may create).
func (s *base) mayCreate(ctx context.Context, agent, id string) *Error {
	if err := mayWrite(ctx, agent); err != nil {
		return err
	}
	a := s.reach(ctx, agent)
	if id == "" && a.any() || a.has(id) {
		return nil
	}
	return absentAnswer(agent, id)
}

// mayMake answers a restore or fork of workbench src into a new workbench dst by a caller
// that reaches only some workbenches of agent's root and not dst (a key bound to one
// workbench), before anything is read or written: the NotFound of src when it does not
// reach src either (what a missing root answers), else the NotFound the empty state
// answers for dst (as mayCreate does for a write into another workbench). A caller that
// reaches the whole root, or dst, or nothing of it (a hidden root, answered as a missing
// one on the usual path) passes.
func mayMake(ctx context.Context, s *base, agent, src, dst string) *Error {
	a := s.reach(ctx, agent)
	switch {
	case !a.any() || a.has(dst):
		return nil
	case !a.has(src):
		return absentAnswer(agent, src)
	}
	return absentAnswer(agent, dst)
}

// absentAnswer is the NotFound the empty state answers for workbench id of agent (id "":
// the root itself).
func absentAnswer(agent, id string) *Error {
	if id == "" {
		return newError(CodeNotFound, "agent root %q does not exist", agent)
	}
	_, err := emptyView.Workspace(agent, id)
	return AsError(err)
}

// mayRootWide answers PermissionDenied when the caller reaches only part of agent's root
// and asks for a root-wide record (usage, quotas, retention, a purge): those describe or
// change every workbench. A hidden root passes: it answers as a missing one.
func (s *base) mayRootWide(ctx context.Context, agent, what string) *Error {
	a := s.reach(ctx, agent)
	switch {
	case !a.any() || a.rootWide():
		return nil
	case a.whole:
		return outsidePrefixes(ctx, agent, a.prefixes, what+" needs a key for the whole root")
	}
	p := caller(ctx)
	e := newError(CodePermissionDenied, "principal %q may use only workbench %q of agent root %q: %s needs a key for the whole root",
		p.ID, a.workbenches[0], agent, what)
	e.Details["workbench"] = a.workbenches[0]
	return e
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

// reachesCommand reports whether the caller reaches every workbench command b of agent's
// root touches. A caller that reaches part of the root reaches no root-wide command but
// the root's creation, and a restore's steps only while it reaches the operation's source
// and destination (read through its restricted view).
func (s *base) reachesCommand(ctx context.Context, agent string, b meta.Body) (bool, error) {
	a := s.reach(ctx, agent)
	if a.whole || !a.any() {
		return a.whole, nil
	}
	switch b := b.(type) {
	case meta.CreateRoot:
		return true, nil
	case meta.RestoreBegin:
		return a.has(b.Source) && a.has(b.Destination), nil
	case meta.ChangeSet:
		return a.has(b.SourceWorkspace) && a.has(b.Workspace), nil
	case meta.RestoreCopy, meta.RestoreFinish:
		view, err := s.readView(ctx, agent)
		if err != nil {
			return false, err
		}
		var op string
		if c, ok := b.(meta.RestoreCopy); ok {
			op = c.OpID
		} else {
			op = b.(meta.RestoreFinish).OpID
		}
		_, ok := view.Lifecycle().Restore(agent, op)
		return ok, nil
	}
	return a.has(meta.ScopeOf(b).Workbench), nil
}

// absentRoot decides a command for agent's root when the root is not in its shard or is
// hidden from the caller, the same way for both: after the same view read (readView), the
// command is applied to the empty state; if that refuses it, its answer is the command's
// (done, nothing proposed). A command the empty state takes proceeds (done false) for a
// missing root, which it creates, and is refused for a hidden one. A command in a
// workbench the caller does not reach is decided as for a hidden root (reachesCommand).
// A root seen to exist is remembered (s.roots), so a known root's commands skip the read.
func (s *base) absentRoot(ctx context.Context, agent string, h meta.Header, b meta.Body) (res meta.Result, done bool, err error) {
	reached, err := s.reachesCommand(ctx, agent, b)
	if err != nil {
		return meta.Result{}, true, err
	}
	if _, known := s.roots.Load(agent); known && reached {
		return meta.Result{}, false, nil
	}
	view, err := s.readView(ctx, agent)
	if err != nil {
		return meta.Result{}, true, err
	}
	if r, ok := view.Root(agent); ok && reached {
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
	if !reached && s.reach(ctx, agent).any() {
		return meta.Result{}, true, absentAnswer(agent, meta.ScopeOf(b).Workbench) // a workbench it does not reach
	}
	if werr := s.mayCreate(ctx, agent, meta.ScopeOf(b).Workbench); werr != nil {
		return meta.Result{}, true, werr // hidden: the NotFound of a command that would create
	}
	return meta.Result{}, false, nil
}
