package blob

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Digest is the SHA-256 of a blob's uncompressed bytes: its content address.
type Digest [32]byte

// DigestPrefix is the scheme prefix of Digest.URI.
const DigestPrefix = "sha256:"

// MaxRootBytes is the longest valid root uid.
const MaxRootBytes = 64

const (
	digestRule = `64 hexadecimal characters, optionally prefixed by "sha256:"`
	rootRule   = "1 to 64 characters of [a-z0-9]"
)

// DigestOf returns the SHA-256 of p.
func DigestOf(p []byte) Digest { return sha256.Sum256(p) }

// String returns the digest as 64 lower-case hexadecimal characters.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// URI returns "sha256:" followed by String().
func (d Digest) URI() string { return DigestPrefix + d.String() }

// ParseDigest parses 64 hexadecimal characters (either case), optionally prefixed by
// "sha256:", as String and URI produce them. Anything else is a *KeyError with Field
// "digest" that wraps ErrInvalidKey.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	h := strings.TrimPrefix(s, DigestPrefix)
	if len(h) != 2*len(d) {
		return Digest{}, keyError("digest", s, digestRule)
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return Digest{}, keyError("digest", s, digestRule)
	}
	return d, nil
}

// Key names a blob: the agent root that owns it and the digest of its uncompressed bytes.
// The same bytes under two roots are two blobs (docs/architecture.md#blob-storage-and-garbage-collection: no dedupe across tenants).
type Key struct {
	// Root is the opaque uid of the agent root (not the agent id): 1 to 64 characters of
	// [a-z0-9], e.g. "r1".
	Root string
	// Digest is the SHA-256 of the blob's uncompressed bytes.
	Digest Digest
}

// String returns "<root>/<hex digest>", for messages and logs.
func (k Key) String() string { return k.Root + "/" + k.Digest.String() }

// Validate returns a *KeyError (wrapping ErrInvalidKey) when k.Root is not a valid root uid.
// Every digest value is valid.
func (k Key) Validate() error { return ValidateRoot(k.Root) }

// ValidateRoot returns a *KeyError (wrapping ErrInvalidKey) unless root is 1 to 64
// characters of [a-z0-9]. The rule keeps root uids safe as path components and object-key
// segments on every backend.
func ValidateRoot(root string) error {
	if len(root) == 0 || len(root) > MaxRootBytes {
		return keyError("root", root, rootRule)
	}
	for i := 0; i < len(root); i++ {
		c := root[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return keyError("root", root, rootRule)
		}
	}
	return nil
}
