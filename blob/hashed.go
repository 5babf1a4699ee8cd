package blob

import (
	"crypto/sha256"
	"encoding"
	"fmt"
	"hash"
)

// Hashed is a byte string together with its Digest and its Blake3, computed by Hash or
// HashState when the value was made. Store.Put takes a Hashed, so a backend never hashes
// data again: the write path hashes each byte once (docs/architecture.md#the-write-path)
// and a Put compares 32 bytes instead of hashing the blob a second time. The zero Hashed
// is not valid (its digest is not that of the empty string); make one with Hash.
//
// The bytes are not copied: the caller must not modify them while the Hashed is in use.
type Hashed struct {
	data   []byte
	digest Digest
	blake3 Blake3
}

// hashStrideBytes is how many bytes Hash gives each of its two hashes at a time: the
// second reads them from the core's cache, where the first left them, so the bytes come
// from memory once.
const hashStrideBytes = 64 << 10

// hashBoth feeds data to sha (a SHA-256) and returns data's BLAKE3, in one pass over data.
func hashBoth(sha hash.Hash, data []byte) Blake3 {
	b3 := getBlake3()
	defer blake3Pool.Put(b3)
	for p := data; len(p) > 0; {
		n := min(len(p), hashStrideBytes)
		sha.Write(p[:n])
		b3.Write(p[:n])
		p = p[n:]
	}
	var sum Blake3
	b3.Sum(sum[:0])
	return sum
}

// Hash returns data with its SHA-256 (the content address) and its BLAKE3 (what reads
// verify when the metadata records it), both from one pass over data. It does not copy
// data.
func Hash(data []byte) Hashed {
	h := sha256.New()
	sum := hashBoth(h, data)
	var d Digest
	h.Sum(d[:0])
	return Hashed{data: data, digest: d, blake3: sum}
}

// HashState is Hash that also returns the serialized SHA-256 state after data (the
// encoding.BinaryMarshaler form of crypto/sha256), from which a later hash of data followed
// by more bytes resumes without reading data again (appends, docs/architecture.md#the-write-path).
func HashState(data []byte) (Hashed, []byte, error) {
	h := sha256.New()
	sum := hashBoth(h, data)
	var d Digest
	h.Sum(d[:0])
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return Hashed{}, nil, fmt.Errorf("blob: sha256 state: %w", err)
	}
	return Hashed{data: data, digest: d, blake3: sum}, st, nil
}

// Bytes returns the bytes (not a copy).
func (h Hashed) Bytes() []byte { return h.data }

// Digest returns the SHA-256 of Bytes.
func (h Hashed) Digest() Digest { return h.digest }

// Blake3 returns the BLAKE3 of Bytes.
func (h Hashed) Blake3() Blake3 { return h.blake3 }

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
