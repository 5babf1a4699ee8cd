package auth

import (
	"context"
	"slices"
)

// Scope is a permission a principal holds (workbench/auth/doc.go).
type Scope string

// The scopes.
const (
	// ScopeRead reads files, workbenches, snapshots, commits and queries.
	ScopeRead Scope = "workspace:read"
	// ScopeWrite changes them (implies nothing about ScopeRead; keys usually hold both).
	ScopeWrite Scope = "workspace:write"
	// ScopeReview decides proposals (review-gated changes).
	ScopeReview Scope = "review"
	// ScopeAdmin manages keys and runs the admin routes.
	ScopeAdmin Scope = "admin"
)

// Scopes lists every scope, in a stable order.
var Scopes = []Scope{ScopeRead, ScopeWrite, ScopeReview, ScopeAdmin}

// ScopeAliases are OpenWOP's names of Cairn scopes, accepted wherever a key's scopes are
// given and stored under Cairn's name (README, OpenWOP proposals): manifest:read, the scope
// OpenWOP reads definitions and installed packs with (getInstalledPack), is ScopeRead;
// proposals:apply, OpenWOP's scope to apply a proposal, is ScopeReview.
var ScopeAliases = map[Scope]Scope{"manifest:read": ScopeRead, "proposals:apply": ScopeReview}

// Canonical returns Cairn's name of s: the scope an alias names, else s.
func (s Scope) Canonical() Scope {
	if c, ok := ScopeAliases[s]; ok {
		return c
	}
	return s
}

// Principal is who a request acts for: an API key's holder, or the local operator of an
// embedded node without authentication (Local).
type Principal struct {
	// ID is the principal's stable public id (an API key's id); it names the principal
	// in revisions, audit lines and metrics. Never a secret.
	ID string `json:"id"`
	// Name is a human label given at creation.
	Name string `json:"name"`
	// Agents are the agent roots the principal may use; AllAgents: every root.
	Agents    []string `json:"agents,omitempty"`
	AllAgents bool     `json:"all_agents,omitempty"`
	// Scopes are what it may do there.
	Scopes []Scope `json:"scopes"`
	// Tenant and Workspace, when set, bind the principal to one OpenWOP tenant·workspace
	// (host.workspace); empty: none.
	Tenant    string `json:"tenant,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	// Workbench, when set, narrows every root the principal uses through Agents or
	// AllAgents to that one workbench of it (a key bound to a workbench without an OpenWOP
	// tenant binding, such as a fork's key); "": every workbench.
	Workbench string `json:"workbench,omitempty"`
	// Prefixes, when set, narrow every workbench the principal reaches to the paths at or
	// below one of them: section-qualified paths ("outputs", "outputs/run1"), matched
	// component by component (Inside); none: every path.
	Prefixes []string `json:"prefixes,omitempty"`
}

// LocalID is the ID of the Local principal.
const LocalID = "local"

// Local is the principal of requests to a node that does not require authentication
// (the embedded default on loopback): every root, every scope.
var Local = Principal{ID: LocalID, Name: "local operator", AllAgents: true, Scopes: Scopes}

// Reach is how much of one agent root a principal may use (ReachIn).
type Reach struct {
	// Whole: every workbench of the root, and, unless Prefixes narrow it, its root-wide
	// records (usage, quotas, retention, the whole change feed): RootWide.
	Whole bool
	// Workbench, when Whole is false, is the only workbench of the root the principal
	// may use (a key bound to an OpenWOP tenant·workspace, or to a workbench); "": none,
	// the root answers exactly as a root that does not exist.
	Workbench string
	// Prefixes, when set, are the only paths of those workbenches the principal may use
	// (Principal.Prefixes); none: every path.
	Prefixes []string
}

// Any reports whether r reaches any part of its root.
func (r Reach) Any() bool { return r.Whole || r.Workbench != "" }

// RootWide reports whether r reaches the root's root-wide records: every workbench and
// every path of the root.
func (r Reach) RootWide() bool { return r.Whole && len(r.Prefixes) == 0 }

// Inside reports whether path is at or below prefix, component by component: "a/b" holds
// "a/b" and "a/b/c", never "a/bc".
func Inside(path, prefix string) bool {
	return path == prefix || len(path) > len(prefix) && path[len(prefix)] == '/' && path[:len(prefix)] == prefix
}

// ShowsPath reports whether r lets its principal use path (section-qualified) of a
// workbench it reaches: every path without Prefixes, else a path at or below one of them.
func (r Reach) ShowsPath(path string) bool {
	if len(r.Prefixes) == 0 {
		return true
	}
	for _, p := range r.Prefixes {
		if Inside(path, p) {
			return true
		}
	}
	return false
}

// ReachIn decides what p may use of agent's root, for every surface (docs/architecture.md,
// workbench/auth): the whole root when p holds every root or names agent among its roots
// (only its Workbench when it has one); only its bound workbench when agent is the OpenWOP
// tenant it is bound to (--tenant, --workspace: the tenant is an agent root, the
// workspace one workbench of it); nothing otherwise. Its Prefixes, if any, narrow what it
// reaches to those paths. What a principal does not reach answers exactly as what does not
// exist (workbench, access.go, enforces it).
func (p Principal) ReachIn(agent string) Reach {
	switch {
	case (p.AllAgents || slices.Contains(p.Agents, agent)) && p.Workbench != "":
		return Reach{Workbench: p.Workbench, Prefixes: p.Prefixes}
	case p.AllAgents || slices.Contains(p.Agents, agent):
		return Reach{Whole: true, Prefixes: p.Prefixes}
	case p.Tenant != "" && p.Tenant == agent && p.Workspace != "":
		return Reach{Workbench: p.Workspace, Prefixes: p.Prefixes}
	}
	return Reach{}
}

// MayUse reports whether p may see agent's root at all (ReachIn: the whole root or one
// workbench of it). A root it may not use answers exactly as a root that does not exist
// (docs/architecture.md, workbench/auth).
func (p Principal) MayUse(agent string) bool { return p.ReachIn(agent).Any() }

// EveryRoot reports whether p reaches the whole of every agent root: every root, every
// workbench, every path. The admin routes that act on the whole node (keys, GC, backups,
// the cluster, /metrics) need it; an admin key bound to some roots, a workbench or paths
// administers only what it reaches (api/server, authn).
func (p Principal) EveryRoot() bool {
	return p.AllAgents && p.Workbench == "" && len(p.Prefixes) == 0
}

// Has reports whether p holds scope s.
func (p Principal) Has(s Scope) bool { return slices.Contains(p.Scopes, s) }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// recheckKey is the context key of WithRecheck.
type recheckKey struct{}

// WithRecheck returns a context under which Recheck calls check: whether the credential
// that authenticated the request (a key, looked up again) still holds. The authentication
// middleware installs it for every request a key authenticated.
func WithRecheck(ctx context.Context, check func() error) context.Context {
	return context.WithValue(ctx, recheckKey{}, check)
}

// Recheck reports whether the credential that authenticated ctx's request still holds:
// nil when it does, or when the request carries none to check (auth off, the node's own
// work); an error matching ErrUnauthenticated once its key was revoked or expired. An
// answer that outlives a request's moment — the change feed's stream — calls it before
// it hands out more, so that a revoked key reads nothing after its revocation.
func Recheck(ctx context.Context) error {
	if check, ok := ctx.Value(recheckKey{}).(func() error); ok {
		return check()
	}
	return nil
}

// FromContext returns the principal ctx carries; false when none (a request that did not
// pass the authentication middleware, or work of the node's own, such as its workers).
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
