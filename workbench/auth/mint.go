package auth

import (
	"fmt"
	"slices"
	"time"
)

// Minting: a key may make a key narrower than itself (POST /v1/keys, a fork's mint_key),
// so an agent can hand a sub-agent a key for one workbench, one directory and one hour
// without an operator. Narrower decides; it is the only rule, and it never lets a minted
// key reach a root, workbench, path or scope its minter does not, nor outlive it.

// otherRoot stands for every root a key does not name (no agent id holds a NUL): what a
// key for every root reaches there.
const otherRoot = "\x00"

// Narrower checks that spec makes a key no broader than minter, whose key expires at
// minterExpires (zero: never): in every agent root spec reaches, minter reaches at least as
// much (the whole root, or the same one workbench) and every path spec's prefixes reach;
// spec's scopes are among minter's; spec expires (it must, when minter does) no later than
// minter. Errors: *InvalidSpecError naming the field that would widen the key.
func Narrower(minter Principal, minterExpires time.Time, spec KeySpec) error {
	bad := func(field, rule string) error { return &InvalidSpecError{Field: field, Rule: rule} }
	for _, s := range spec.Scopes {
		if !minter.Has(s.Canonical()) {
			return bad("scopes", fmt.Sprintf("must be among the minting key's scopes (%q is not)", s.Canonical()))
		}
	}
	if !minterExpires.IsZero() && (spec.ExpiresAt.IsZero() || spec.ExpiresAt.After(minterExpires)) {
		return bad("expires_at", "must be no later than the minting key's expiry, "+minterExpires.UTC().Format(time.RFC3339))
	}
	if spec.AllAgents && !minter.AllAgents {
		return bad("all_agents", "needs a minting key for every agent root")
	}
	q := Principal{Agents: spec.Agents, AllAgents: spec.AllAgents, Tenant: spec.Tenant, Workspace: spec.Workspace,
		Workbench: spec.Workbench, Prefixes: NormalPrefixes(spec.Prefixes)}
	roots := append(slices.Clone(spec.Agents), otherRoot)
	if spec.Tenant != "" {
		roots = append(roots, spec.Tenant)
	}
	if minter.Tenant != "" {
		roots = append(roots, minter.Tenant)
	}
	for _, r := range roots {
		if err := reachWithin(q.ReachIn(r), minter.ReachIn(r)); err != nil {
			name := r
			if r == otherRoot {
				name = "every root"
			}
			return bad(err.field, fmt.Sprintf("%s in agent root %q: the minting key does not reach it", err.rule, name))
		}
	}
	return nil
}

type narrowErr struct{ field, rule string }

// reachWithin checks that reach r is within reach of.
func reachWithin(r, of Reach) *narrowErr {
	switch {
	case !r.Any():
		return nil
	case !of.Any():
		return &narrowErr{"agents", "must name only roots the minting key uses"}
	case !of.Whole && (r.Whole || r.Workbench != of.Workbench):
		return &narrowErr{"workbench", "must be the minting key's workbench " + fmt.Sprintf("%q", of.Workbench)}
	}
	if len(of.Prefixes) == 0 {
		return nil
	}
	if len(r.Prefixes) == 0 {
		return &narrowErr{"prefixes", "must be at or below the minting key's prefixes"}
	}
	for _, p := range r.Prefixes {
		if !of.ShowsPath(p) {
			return &narrowErr{"prefixes", fmt.Sprintf("must be at or below the minting key's prefixes (%q is not)", p)}
		}
	}
	return nil
}

// MintDepth returns how many keys stand above k in s (0 for an operator's key).
func MintDepth(s Store, k Key) int {
	n := 0
	for k.MintedBy != "" && n <= MaxMintDepth {
		parent, err := s.Lookup(k.MintedBy)
		if err != nil {
			break
		}
		k, n = parent, n+1
	}
	return n
}

// MaxMintDepth bounds how many keys stand above a minted key (a key minted by a minted
// key, …): deeper chains are refused at minting and never authenticate.
const MaxMintDepth = 8

// LiveIn is Live for k and every key above it (MintedBy) in s: revoking or expiring a key
// stops every key it minted, directly or not. A minting key s no longer holds, or a chain
// deeper than MaxMintDepth, is ErrKeyRevoked.
func (k Key) LiveIn(s Store, now time.Time) error {
	for depth := 0; ; depth++ {
		if err := k.Live(now); err != nil {
			return err
		}
		if k.MintedBy == "" {
			return nil
		}
		parent, err := s.Lookup(k.MintedBy)
		if err != nil || depth == MaxMintDepth {
			return fmt.Errorf("key %s: %w (its minting key is gone)", k.ID, ErrKeyRevoked)
		}
		k = parent
	}
}
