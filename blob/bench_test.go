package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"io"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/cairnstore/cairn/blob"
)

// The bodies come from reader_test.go: randomBytes(seed, n) is incompressible,
// textBytes(n) compressible log-like text.

// BenchmarkSplit measures content-defined chunking alone, in each format side by side:
// Splitter over a body held in memory (one segment up to 8 MiB; above, Rabin chunks of
// 1..16 MiB copied out of restic/chunker's buffer, or gear chunks of 4..16 MiB cut in the
// segment buffer they were read into).
func BenchmarkSplit(b *testing.B) {
	for _, size := range []int{1 << 20, 64 << 20} {
		body := randomBytes(1, size)
		// The segments are dropped at once, so one buffer serves them all (ingest pools).
		buf := make([]byte, blob.ChunkMaxBytes)
		reuse := func(n int) []byte { return buf[:n] }
		for _, format := range []blob.ChunkFormat{blob.ChunkRabin, blob.ChunkGear} {
			b.Run(fmt.Sprintf("format=%s/body=%dMiB", format, size>>20), func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					s := blob.NewSplitter(bytes.NewReader(body), int64(size), format, reuse)
					for {
						if _, err := s.Next(); err == io.EOF {
							break
						} else if err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkDigest measures SHA-256 content addressing of one segment (DigestOf).
func BenchmarkDigest(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20, 4 << 20} {
		data := randomBytes(1, size)
		b.Run(fmt.Sprintf("segment=%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				_ = blob.DigestOf(data)
			}
		})
	}
}

// BenchmarkSplitAndHash is the write path's CPU work on a body before any upload
// (docs/architecture.md#the-write-path): one pass that hashes the whole body and cuts it into segments, each
// hashed for its content address.
func BenchmarkSplitAndHash(b *testing.B) {
	const size = 64 << 20
	body := randomBytes(1, size)
	b.SetBytes(size)
	for b.Loop() {
		whole := sha256.New()
		s := blob.NewSplitter(io.TeeReader(bytes.NewReader(body), whole), size, blob.CurrentChunkFormat, nil)
		for {
			seg, err := s.Next()
			if err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			_ = blob.DigestOf(seg)
		}
		_ = whole.Sum(nil)
	}
}

// BenchmarkEncode measures choosing a segment's stored form: zstd for text, which
// shrinks, and the identity for random bytes, after a compression attempt that does not
// pay.
func BenchmarkEncode(b *testing.B) {
	for _, tc := range []struct {
		name string
		data []byte
	}{{"text=4MiB", textBytes(4 << 20)}, {"random=4MiB", randomBytes(1, 4<<20)}} {
		b.Run(tc.name, func(b *testing.B) {
			var dst []byte
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				var enc blob.Encoding
				dst, enc = blob.Encode(dst, tc.data)
				_ = enc
			}
		})
	}
}

// BenchmarkReadVerify measures reading a whole stored segment back: decoding (zstd or
// identity) and verifying its digest, as every Get does.
func BenchmarkReadVerify(b *testing.B) {
	for _, tc := range []struct {
		name string
		data []byte
	}{{"text=4MiB", textBytes(4 << 20)}, {"random=4MiB", randomBytes(1, 4<<20)}} {
		payload, enc := blob.Encode(nil, tc.data)
		payload = bytes.Clone(payload)
		key := blob.Key{Root: "r1", Digest: blob.DigestOf(tc.data)}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				r, err := blob.NewReader(context.Background(), key, io.NopCloser(bytes.NewReader(payload)), enc, int64(len(tc.data)), 0, -1)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, r); err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
	}
}

// BenchmarkSegmentChecksum measures what verifying a segment on read could cost per
// byte: the SHA-256 content address every read checks today (blob.NewReader) beside the
// per-segment checksums a write could record instead, CRC32C (hardware) and XXH3-128. A
// checksum only catches accidental damage; a store that is not trusted needs the digest
// (blob/doc.go).
func BenchmarkSegmentChecksum(b *testing.B) {
	data := randomBytes(1, 8<<20)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, tc := range []struct {
		name string
		sum  func([]byte)
	}{
		{"sha256", func(p []byte) { _ = sha256.Sum256(p) }},
		{"crc32c", func(p []byte) { _ = crc32.Checksum(p, castagnoli) }},
		{"xxh3-128", func(p []byte) { _ = xxh3.Hash128(p) }},
	} {
		b.Run("sum="+tc.name+"/segment=8MiB", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				tc.sum(data)
			}
		})
	}
}
