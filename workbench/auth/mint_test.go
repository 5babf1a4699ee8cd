package auth_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/cairnstore/cairn/workbench/auth"
)

var (
	mintRoots       = []string{"a", "b", "c", "d"}
	mintWorkbenches = []string{"w1", "w2", "w3"}
	mintPrefixes    = []string{"input", "input/x", "outputs", "outputs/r1", "outputs/r1/z", "outputs/r10"}
	mintPaths       = []string{"input/x", "input/x/y", "input/xy", "outputs/r1", "outputs/r1/z/f", "outputs/r10/f", "outputs/r2", "logs/l"}
)

// drawPrincipal draws a principal of the small universe above.
func drawPrincipal(t *rapid.T, label string) auth.Principal {
	p := auth.Principal{ID: label}
	if rapid.Bool().Draw(t, label+" all") {
		p.AllAgents = true
	} else {
		p.Agents = rapid.SliceOfNDistinct(rapid.SampledFrom(mintRoots[:3]), 0, 2, rapid.ID[string]).Draw(t, label+" agents")
	}
	if rapid.Bool().Draw(t, label+" tenant?") {
		p.Tenant = rapid.SampledFrom(mintRoots[:3]).Draw(t, label+" tenant")
		p.Workspace = rapid.SampledFrom(mintWorkbenches).Draw(t, label+" workspace")
	} else if rapid.Bool().Draw(t, label+" workbench?") {
		p.Workbench = rapid.SampledFrom(mintWorkbenches).Draw(t, label+" workbench")
	}
	if rapid.Bool().Draw(t, label+" prefixes?") {
		p.Prefixes = rapid.SliceOfNDistinct(rapid.SampledFrom(mintPrefixes), 1, 3, rapid.ID[string]).Draw(t, label+" prefixes")
	}
	p.Scopes = rapid.SliceOfNDistinct(rapid.SampledFrom(auth.Scopes), 1, 4, rapid.ID[auth.Scope]).Draw(t, label+" scopes")
	return p
}

func allows(r auth.Reach, wb, path string) bool {
	return r.Any() && (r.Whole || r.Workbench == wb) && r.ShowsPath(path)
}

// TestAMintedKeyIsNeverBroaderThanItsMinter: for random minters and requested keys,
// whatever Narrower accepts reaches no (root, workbench, path) its minter does not,
// holds no scope it lacks, and expires no later.
func TestAMintedKeyIsNeverBroaderThanItsMinter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	expiries := []time.Time{{}, now.Add(time.Hour), now.Add(2 * time.Hour)}
	rapid.Check(t, func(t *rapid.T) {
		minter := drawPrincipal(t, "minter")
		minterExp := rapid.SampledFrom(expiries).Draw(t, "minter expiry")
		q := drawPrincipal(t, "minted")
		spec := auth.KeySpec{Name: "minted", Agents: q.Agents, AllAgents: q.AllAgents, Scopes: q.Scopes, Tenant: q.Tenant,
			Workspace: q.Workspace, Workbench: q.Workbench, Prefixes: q.Prefixes,
			ExpiresAt: rapid.SampledFrom(expiries).Draw(t, "minted expiry")}
		if auth.Narrower(minter, minterExp, spec) != nil || spec.Validate(now) != nil {
			return
		}
		k, _, err := auth.NewKey(spec, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range k.Scopes {
			if !minter.Has(s) {
				t.Fatalf("scope %q the minter lacks", s)
			}
		}
		if !minterExp.IsZero() && (k.ExpiresAt.IsZero() || k.ExpiresAt.After(minterExp)) {
			t.Fatalf("expires %v after the minter's %v", k.ExpiresAt, minterExp)
		}
		for _, root := range mintRoots {
			for _, wb := range mintWorkbenches {
				for _, path := range mintPaths {
					if allows(k.ReachIn(root), wb, path) && !allows(minter.ReachIn(root), wb, path) {
						t.Fatalf("the minted key reaches %s/%s/%s, its minter does not (minted %+v, minter %+v)", root, wb, path, k.Principal, minter)
					}
				}
				if k.ReachIn(root).RootWide() && !minter.ReachIn(root).RootWide() {
					t.Fatalf("the minted key reaches root %s's root-wide records, its minter does not", root)
				}
			}
		}
	})
}

func TestNarrowerAcceptsNarrowerKeysAndNamesTheFieldThatWidens(t *testing.T) {
	now := time.Now()
	owner := auth.Principal{ID: "o", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}}
	fork := auth.Principal{ID: "f", Agents: []string{"a"}, Workbench: "fork", Prefixes: []string{"outputs"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}}
	read := []auth.Scope{auth.ScopeRead}
	tests := []struct {
		name      string
		minter    auth.Principal
		expires   time.Time
		spec      auth.KeySpec
		wantField string // "": accepted
	}{
		{"a root's key mints a key for one workbench and one directory", owner, time.Time{},
			auth.KeySpec{Agents: []string{"a"}, Workbench: "fork", Prefixes: []string{"outputs/run1/"}, Scopes: read}, ""},
		{"a prefix-bound key mints a key below its prefix", fork, time.Time{},
			auth.KeySpec{Agents: []string{"a"}, Workbench: "fork", Prefixes: []string{"outputs/run1"}, Scopes: read}, ""},
		{"a scope the minter lacks widens", owner, time.Time{},
			auth.KeySpec{Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeReview}}, "scopes"},
		{"another root widens", owner, time.Time{},
			auth.KeySpec{Agents: []string{"b"}, Scopes: read}, "agents"},
		{"every root widens", owner, time.Time{},
			auth.KeySpec{AllAgents: true, Scopes: read}, "all_agents"},
		{"another workbench widens", fork, time.Time{},
			auth.KeySpec{Agents: []string{"a"}, Workbench: "main", Prefixes: []string{"outputs"}, Scopes: read}, "workbench"},
		{"no workbench widens a workbench-bound minter", fork, time.Time{},
			auth.KeySpec{Agents: []string{"a"}, Prefixes: []string{"outputs"}, Scopes: read}, "workbench"},
		{"no prefixes widen a prefix-bound minter", fork, time.Time{},
			auth.KeySpec{Agents: []string{"a"}, Workbench: "fork", Scopes: read}, "prefixes"},
		{"a sibling prefix widens", fork, time.Time{},
			auth.KeySpec{Agents: []string{"a"}, Workbench: "fork", Prefixes: []string{"input"}, Scopes: read}, "prefixes"},
		{"no expiry outlives an expiring minter", owner, now.Add(time.Hour),
			auth.KeySpec{Agents: []string{"a"}, Scopes: read}, "expires_at"},
		{"a later expiry outlives an expiring minter", owner, now.Add(time.Hour),
			auth.KeySpec{Agents: []string{"a"}, Scopes: read, ExpiresAt: now.Add(2 * time.Hour)}, "expires_at"},
		{"an earlier expiry is narrower", owner, now.Add(time.Hour),
			auth.KeySpec{Agents: []string{"a"}, Scopes: read, ExpiresAt: now.Add(time.Minute)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = "minted"
			wantSpecField(t, auth.Narrower(tt.minter, tt.expires, tt.spec), tt.wantField)
		})
	}
}

// TestNewKeyDropsThePrefixesTrailingSlash: a key keeps its workbench and its prefixes
// without their trailing "/", the form ShowsPath matches.
func TestNewKeyDropsThePrefixesTrailingSlash(t *testing.T) {
	spec := auth.KeySpec{Name: "k", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead},
		Workbench: "fork", Prefixes: []string{"outputs/run1/", "input"}}
	k, _, err := auth.NewKey(spec, time.Now())
	if err != nil || k.Workbench != "fork" || !slices.Equal(k.Prefixes, []string{"outputs/run1", "input"}) {
		t.Fatalf("key %+v, %v: want the workbench and the prefixes without their trailing slash", k.Principal, err)
	}
}

// wantSpecField fails unless err is nil for field "", else an InvalidSpecError naming field.
func wantSpecField(t *testing.T, err error, field string) {
	t.Helper()
	var ise *auth.InvalidSpecError
	if field == "" && err != nil {
		t.Fatalf("refused: %v", err)
	}
	if field != "" && (!errors.As(err, &ise) || ise.Field != field) {
		t.Fatalf("got %v, want an InvalidSpecError naming %q", err, field)
	}
}
