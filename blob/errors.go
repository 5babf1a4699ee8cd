package blob

import (
	"errors"
	"fmt"
)

// Sentinel errors of every Store. Implementations wrap them with context, e.g.
// fmt.Errorf("blob %s: %w", key, ErrNotFound); callers test with errors.Is.
var (
	// ErrNotFound: no blob is stored under the key.
	ErrNotFound = errors.New("blob not found")
	// ErrDigestMismatch: Put's data does not hash to key.Digest; nothing was stored.
	ErrDigestMismatch = errors.New("blob data does not match its digest")
	// ErrCorrupt: a stored blob failed verification (bad header, undecodable payload, wrong
	// length or wrong digest). Retrying does not help; the blob must be uploaded again.
	ErrCorrupt = errors.New("blob corrupt")
	// ErrRange: a read asked for an offset before 0 or past the end of the blob.
	ErrRange = errors.New("blob range not satisfiable")
	// ErrUnavailable: the backend cannot serve the call now (I/O error, object store
	// unreachable, store closed). The call may be retried.
	ErrUnavailable = errors.New("blob store unavailable")
	// ErrStorageFull: the backend's disk is full (ENOSPC, an object store's "storage
	// full"). Errors that wrap it also wrap ErrUnavailable; retryable once space is freed.
	// blob/dir wraps the os error (syscall.ENOSPC) instead.
	ErrStorageFull = errors.New("blob store storage full")
	// ErrInvalidKey: a root uid or digest is malformed. Returned as a *KeyError.
	ErrInvalidKey = errors.New("invalid blob key")
)

// KeyError reports a malformed part of a Key, or a digest string that does not parse. It
// names the field, the offending value and the rule it broke, and wraps ErrInvalidKey.
type KeyError struct {
	// Field is "root" or "digest".
	Field string
	// Value is the rejected input, cut to 80 bytes.
	Value string
	// Rule says what a valid value looks like.
	Rule string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("invalid blob %s %q: %s", e.Field, e.Value, e.Rule)
}

// Unwrap returns ErrInvalidKey.
func (e *KeyError) Unwrap() error { return ErrInvalidKey }

func keyError(field, value, rule string) *KeyError {
	const maxValue = 80
	if len(value) > maxValue {
		value = value[:maxValue] + "..."
	}
	return &KeyError{Field: field, Value: value, Rule: rule}
}
