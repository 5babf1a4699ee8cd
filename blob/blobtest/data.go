package blobtest

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/blob"
)

// Test data and reads shared by the suite and the backends' own tests. Every generator is
// deterministic, so a failure reproduces.

// RandomBytes returns n incompressible bytes (ChaCha8 seeded with seed): stored identity.
func RandomBytes(seed uint64, n int) []byte {
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	rand.NewChaCha8(s).Read(b)
	return b
}

var words = strings.Fields(`cairn agent workbench revision segment digest root shard
	raft commit snapshot restore blob zstd chunk generation incarnation the of and a to
	input scripts outputs logs metadata manifest run step tool result error`)

// TextBytes returns n bytes of word salad: compressible about 3:1 (stored zstd from
// blob.CompressMinBytes on).
func TextBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	b.Grow(n + 32)
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(" \n"[r.IntN(2)])
	}
	return b.Bytes()[:n]
}

// KeyOf is the key of data in root.
func KeyOf(root string, data []byte) blob.Key {
	return blob.Key{Root: root, Digest: blob.DigestOf(data)}
}

// Put puts data under key, failing t if the Put fails, and returns its result.
func Put(t *testing.T, s blob.Store, key blob.Key, data []byte) blob.PutResult {
	t.Helper()
	res, err := s.Put(t.Context(), key, blob.Hash(data))
	if err != nil {
		t.Fatalf("Put %s (%d bytes): %v", key, len(data), err)
	}
	return res
}

// Read returns the bytes of a ranged Get and the first error of Get, Read or Close.
func Read(ctx context.Context, s blob.Store, key blob.Key, offset, length int64) ([]byte, error) {
	rc, err := s.Get(ctx, key, offset, length)
	if err != nil {
		return nil, err
	}
	got, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return got, err
}
