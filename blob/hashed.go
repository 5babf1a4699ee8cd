package blob

import (
	"crypto/sha256"
	"encoding"
	"fmt"
)

// Hashed is a byte string together with its Digest, computed by Hash or HashState when the
// value was made. Store.Put takes a Hashed, so a backend never hashes data again: the
// write path hashes each byte once (docs/architecture.md#the-write-path) and a Put compares 32 bytes instead of
// hashing the blob a second time. The zero Hashed is not valid (its digest is not
// that of the empty string); make one with Hash.
//
// The bytes are not copied: the caller must not modify them while the Hashed is in use.
type Hashed struct {
	data   []byte
	digest Digest
}

// Hash returns data with its SHA-256. It does not copy data.
func Hash(data []byte) Hashed { return Hashed{data: data, digest: DigestOf(data)} }

// HashState is Hash that also returns the serialized SHA-256 state after data (the
// encoding.BinaryMarshaler form of crypto/sha256), from which a later hash of data followed
// by more bytes resumes without reading data again (appends, docs/architecture.md#the-write-path).
func HashState(data []byte) (Hashed, []byte, error) {
	h := sha256.New()
	h.Write(data)
	var d Digest
	h.Sum(d[:0])
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return Hashed{}, nil, fmt.Errorf("blob: sha256 state: %w", err)
	}
	return Hashed{data: data, digest: d}, st, nil
}

// Bytes returns the bytes (not a copy).
func (h Hashed) Bytes() []byte { return h.data }

// Digest returns the SHA-256 of Bytes.
func (h Hashed) Digest() Digest { return h.digest }

// Len returns len(Bytes()).
func (h Hashed) Len() int { return len(h.data) }

// CheckKey fails with ErrDigestMismatch when key does not name data (key.Digest is not
// data's digest). Backends call it first in Put; it reads no byte of data.
func CheckKey(key Key, data Hashed) error {
	if key.Digest != data.digest {
		return fmt.Errorf("put %s: data hashes to %s: %w", key, data.digest, ErrDigestMismatch)
	}
	return nil
}
