package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// MintPath is the client listener's route by which a key makes a key narrower than itself
// (workbench/auth/mint.go): an agent hands a sub-agent a key for one workbench, a few
// directories and an hour, without an operator.
//
//	POST /v1/keys   body KeyRequest; 201 as POST /v1/admin/keys: the new key and its secret, once;
//	                403 PermissionDenied (details.field) when the key would reach, hold or outlive more than the caller's
const MintPath = "/v1/keys"

// minter mints keys no broader than their caller's (auth.Narrower) into keys: the route
// MintPath and a fork's mint_key (workbench.KeyMinter) both mint through it.
type minter struct{ keys auth.Store }

// mintDeniedError is a key that would be broader than its minter's (403).
type mintDeniedError struct{ *auth.InvalidSpecError }

func (e mintDeniedError) Unwrap() error { return e.InvalidSpecError }

// check returns the key in asks for, and its secret, if p may mint it now: p's key's
// record (keys.Lookup) gives its expiry and how deep it stands in a minting chain; the
// local operator (a node without authentication) mints any key. Errors: mintDeniedError,
// auth.InvalidSpecError, the store's.
func (m minter) check(p auth.Principal, in KeyRequest, now time.Time) (auth.Key, string, error) {
	var parent auth.Key
	if p.ID != auth.LocalID {
		var err error
		if parent, err = m.keys.Lookup(p.ID); err != nil {
			return auth.Key{}, "", err
		}
		if auth.MintDepth(m.keys, parent) >= auth.MaxMintDepth {
			return auth.Key{}, "", mintDeniedError{&auth.InvalidSpecError{Field: "minted_by", Rule: fmt.Sprintf("is too deep a chain: a key minted by a minted key… at most %d deep", auth.MaxMintDepth)}}
		}
	}
	k, token, err := newKeyOf(in, now)
	if err != nil {
		return auth.Key{}, "", err
	}
	var ie *auth.InvalidSpecError
	if err := auth.Narrower(p, parent.ExpiresAt, in.spec()); errors.As(err, &ie) {
		return auth.Key{}, "", mintDeniedError{ie}
	} else if err != nil {
		return auth.Key{}, "", err
	}
	k.MintedBy = parent.ID
	return k, token, nil
}

// ForkKey is workbench.KeyMinter: a key for the caller's root agent bound to workbench
// fork, with the caller's workspace scopes (read, write, review: never admin), expiring
// at expiresAt or, when zero, with the caller's key.
func (m minter) ForkKey(ctx context.Context, agent, fork string, expiresAt time.Time) (func(context.Context) (map[string]any, error), error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		p = auth.Local
	}
	in := KeyRequest{Name: forkKeyName(agent, fork), Agents: []string{agent}, Workbench: fork, ExpiresAt: expiresAt}
	for _, s := range []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeReview} {
		if p.Has(s) {
			in.Scopes = append(in.Scopes, s)
		}
	}
	if in.ExpiresAt.IsZero() && p.ID != auth.LocalID {
		parent, err := m.keys.Lookup(p.ID)
		if err != nil {
			return nil, forkKeyError(err)
		}
		in.ExpiresAt = parent.ExpiresAt
	}
	k, token, err := m.check(p, in, time.Now())
	if err != nil {
		return nil, forkKeyError(err)
	}
	return func(ctx context.Context) (map[string]any, error) {
		if err := m.keys.Create(ctx, k); err != nil {
			return nil, forkKeyError(err)
		}
		out := keyJSON(k, time.Now())
		out["secret"] = token
		return out, nil
	}, nil
}

// forkKeyName names the key ForkKey mints for workbench fork of agent's root.
func forkKeyName(agent, fork string) string { return "fork " + agent + "/" + fork }

// RevokeForkKeys is workbench.KeyMinter: it revokes every live key made as fork's key (its
// name, forkKeyName, and its binding: agent's root, workbench fork, no tenant).
func (m minter) RevokeForkKeys(ctx context.Context, agent, fork string) error {
	keys, err := m.keys.List(ctx)
	if err != nil {
		return forkKeyError(err)
	}
	now := time.Now()
	for _, k := range keys {
		if k.Name != forkKeyName(agent, fork) || k.Workbench != fork || k.Tenant != "" || k.AllAgents ||
			len(k.Agents) != 1 || k.Agents[0] != agent || k.Live(now) != nil {
			continue
		}
		if _, err := m.keys.Revoke(ctx, k.ID, now); err != nil && !errors.Is(err, auth.ErrKeyNotFound) {
			return forkKeyError(err)
		}
	}
	return nil
}

// forkKeyError is err as the fork's *workbench.Error: the field a broader key names, the
// key store's unavailability.
func forkKeyError(err error) error {
	var denied mintDeniedError
	var ie *auth.InvalidSpecError
	switch {
	case errors.As(err, &denied):
		return &workbench.Error{Code: workbench.CodePermissionDenied, Details: map[string]any{"field": forkKeyField(denied.Field)},
			Message: "the fork's key must be no broader than the key that forks: " + forkKeyRule(denied.InvalidSpecError)}
	case errors.As(err, &ie):
		return &workbench.Error{Code: workbench.CodeInvalidArguments, Details: map[string]any{"field": forkKeyField(ie.Field)},
			Message: "the fork's key: " + forkKeyRule(ie)}
	case errors.Is(err, auth.ErrStoreUnavailable):
		return workbench.RoutingUnavailable("the key store cannot answer right now; retry")
	}
	return &workbench.Error{Code: workbench.CodeInternal, Message: "key store: " + err.Error()}
}

// forkKeyRule is a fork key's refusal, "field rule", the expiry named as the fork's
// argument that sets it.
func forkKeyRule(ie *auth.InvalidSpecError) string {
	if ie.Field == "expires_at" {
		return "key_expires_at " + ie.Rule
	}
	return ie.Field + " " + ie.Rule
}

// forkKeyField names a key field as the fork's argument that sets it.
func forkKeyField(field string) string {
	if field == "expires_at" {
		return "key_expires_at"
	}
	return "mint_key"
}

// mintRoute serves MintPath over keys in front of next, after authentication (authn): the
// caller's principal is the minter. A node without authentication mints as the local
// operator.
type mintRoute struct {
	keys auth.Store
	next http.Handler
}

func (m mintRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() != MintPath {
		m.next.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	var in KeyRequest
	if err := decodeJSON(r, &in); err != nil {
		keyError(w, err)
		return
	}
	p, ok := auth.FromContext(r.Context())
	if !ok {
		p = auth.Local
	}
	k, token, err := minter{m.keys}.check(p, in, time.Now())
	if err == nil {
		err = m.keys.Create(r.Context(), k)
	}
	var denied mintDeniedError
	switch {
	case errors.As(err, &denied):
		writeEnvelope(w, http.StatusForbidden, &workbench.Error{Code: workbench.CodePermissionDenied,
			Message: "a minted key must be no broader than the key that mints it: " + denied.Error(), Details: map[string]any{"field": denied.Field}})
	case err != nil:
		keyError(w, err)
	default:
		writeNewKey(w, k, token)
	}
}
