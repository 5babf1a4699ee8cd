package workbench

import (
	"context"
	"time"
)

// A fork's key (issue 31): a fork asked with mint_key also answers a new API key bound to
// the fork workbench, so the agent that forks hands a sub-agent a key for that attempt
// alone. The key store is not the Service's: the node that serves the Service mints
// (KeyMinter, set with Attempts.MintKeysWith), under the one rule every minted key keeps
// (workbench/auth/mint.go, Narrower): no root, workbench, path or scope the caller does
// not reach, no expiry later than the caller's key's, and recorded as minted by it, so
// revoking the caller's key stops the fork's.

// KeyMinter mints the key of a fork for the caller of ctx (auth.FromContext).
type KeyMinter interface {
	// ForkKey checks that the caller may hold a key for workbench fork of agent's root
	// expiring at expiresAt (zero: when the caller's key does, or never) and returns the
	// function that mints it once the fork exists: its answer is the key's description
	// with its secret, shown once. Errors are *Error: PermissionDenied naming the field
	// that would make the key broader than the caller's, InvalidArguments naming
	// key_expires_at, Unavailable when the key store cannot answer.
	ForkKey(ctx context.Context, agent, fork string, expiresAt time.Time) (mint func(context.Context) (map[string]any, error), err error)
	// RevokeForkKeys revokes the keys ForkKey minted for workbench fork of agent's root
	// that are still live, as the node's own step: a key binds a workbench by its name,
	// so a fork's key left live would reach the next workbench of that name (a fork made
	// again after a discard). Errors are *Error: Unavailable when the key store cannot
	// answer.
	RevokeForkKeys(ctx context.Context, agent, fork string) error
}

// minterBox holds the KeyMinter of an Attempts (atomic.Pointer needs one type).
type minterBox struct{ KeyMinter }

// MintKeysWith makes m the minter of the keys forks ask for with mint_key; until it is
// set (a Service without a key store), such a fork is InvalidArguments naming mint_key.
func (s *Attempts) MintKeysWith(m KeyMinter) { s.minter.Store(&minterBox{m}) }

// forkKey returns the function that mints req's key, nil when req asks for none, after
// checking that it may (KeyMinter.ForkKey); nothing is minted yet.
func (s *Attempts) forkKey(ctx context.Context, req ForkRequest) (func(context.Context) (map[string]any, error), error) {
	if !req.MintKey {
		if !req.KeyExpiresAt.IsZero() {
			return nil, invalidArgument("key_expires_at", "needs mint_key")
		}
		return nil, nil
	}
	m := s.minter.Load()
	if m == nil {
		return nil, invalidArgument("mint_key", "this node keeps no API keys to mint")
	}
	return m.ForkKey(ctx, req.Agent, req.Fork, req.KeyExpiresAt)
}

// revokeForkKeys revokes fork's keys (KeyMinter.RevokeForkKeys); nil on a node without a
// key store, which minted none.
func (s *Attempts) revokeForkKeys(ctx context.Context, agent, fork string) error {
	m := s.minter.Load()
	if m == nil {
		return nil
	}
	return m.RevokeForkKeys(ctx, agent, fork)
}

// parseKeyExpiry parses a fork's key_expires_at (RFC 3339; "" or nil: none).
func parseKeyExpiry(s *string) (time.Time, *Error) {
	if s == nil || *s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, *s)
	if err != nil {
		return time.Time{}, invalidArgument("key_expires_at", "must be an RFC 3339 time such as 2030-01-02T15:04:05Z, got %q", *s)
	}
	return t, nil
}
