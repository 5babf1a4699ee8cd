package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Store keeps the API keys of a node (FileStore, the embedded default) or of a cluster
// (EtcdStore). Every implementation passes the conformance suite (workbench/auth/authtest).
type Store interface {
	// Create stores a new key. Errors: ErrKeyExists when its id is taken,
	// ErrStoreUnavailable.
	Create(ctx context.Context, k Key) error
	// Lookup returns the key with id as the store holds it now, from memory: a request
	// never waits on a disk or etcd for it. Errors: ErrKeyNotFound.
	Lookup(id string) (Key, error)
	// List returns every key, revoked and expired ones included, oldest first.
	List(ctx context.Context) ([]Key, error)
	// Revoke marks the key with id revoked at at and returns it; revoking a revoked key
	// changes nothing and returns it as it is. Errors: ErrKeyNotFound,
	// ErrStoreUnavailable.
	Revoke(ctx context.Context, id string, at time.Time) (Key, error)
	// Close releases the store.
	Close() error
}

// Authenticate returns the principal of a key string at now: its id must name a key of s
// whose digest matches (constant time) and which is live. Errors match
// ErrUnauthenticated and name at most the key id, never the secret.
func Authenticate(s Store, token string, now time.Time) (Principal, error) {
	id, err := ParseToken(token)
	if err != nil {
		return Principal{}, err
	}
	k, err := s.Lookup(id)
	if err != nil {
		// Same work as a wrong secret, so an unknown id is not told apart by time.
		CheckSecret(Key{Digest: dummyDigest}, token)
		return Principal{}, fmt.Errorf("key %s: %w: unknown key", id, ErrUnauthenticated)
	}
	if !CheckSecret(k, token) {
		return Principal{}, fmt.Errorf("key %s: %w: wrong secret", id, ErrUnauthenticated)
	}
	if err := k.LiveIn(s, now); err != nil {
		return Principal{}, err
	}
	return k.Principal, nil
}

// Resolve returns the principal of key id, which another node authenticated (a forwarded
// request): the key must still be live here. Errors match ErrUnauthenticated.
func Resolve(s Store, id string, now time.Time) (Principal, error) {
	k, err := s.Lookup(id)
	if err != nil {
		return Principal{}, fmt.Errorf("key %s: %w: unknown key", id, ErrUnauthenticated)
	}
	if err := k.LiveIn(s, now); err != nil {
		return Principal{}, err
	}
	return k.Principal, nil
}

// sortKeys orders keys oldest first, then by id.
func sortKeys(keys []Key) {
	slices.SortFunc(keys, func(a, b Key) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// checkRecord refuses to store a key that could never authenticate or that carries
// something other than a digest where the digest goes.
func checkRecord(k Key) error {
	if !ValidKeyID(k.ID) {
		return &InvalidSpecError{Field: "id", Rule: fmt.Sprintf("must be %d lowercase hex digits", KeyIDLen)}
	}
	if len(k.Digest) != 64 || strings.Trim(k.Digest, "0123456789abcdef") != "" {
		return &InvalidSpecError{Field: "digest", Rule: "must be a hex SHA-256"}
	}
	return nil
}

// revoked returns k revoked at at, unless it already is.
func revoked(k Key, at time.Time) Key {
	if k.RevokedAt.IsZero() {
		k.RevokedAt = at.UTC()
	}
	return k
}
