package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"testing"
	"time"

	zeebo "github.com/zeebo/blake3"
	"github.com/zeebo/xxh3"
	luke "lukechampine.com/blake3"

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

// BenchmarkDigest measures what the write path hashes one segment with: its SHA-256
// content address alone (DigestOf), and Hash, which takes the SHA-256 and the BLAKE3 that
// reads verify in one pass over the bytes (what a write costs for them). It reports
// cpu-ms/MiB beside ns/op.
func BenchmarkDigest(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20, 4 << 20} {
		data := randomBytes(1, size)
		for _, fn := range []struct {
			name string
			hash func([]byte)
		}{
			{"sha256", func(p []byte) { _ = blob.DigestOf(p) }},
			{"sha256+blake3", func(p []byte) { _ = blob.Hash(p) }},
		} {
			b.Run(fmt.Sprintf("segment=%dKiB/%s", size>>10, fn.name), func(b *testing.B) {
				b.SetBytes(int64(size))
				cpu0, ok := cpuTime()
				for b.Loop() {
					fn.hash(data)
				}
				reportCPU(b, cpu0, ok, int64(size))
			})
		}
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

// BenchmarkReadVerify measures reading a whole stored segment back as the Workbench read
// path does (blob.ReadVerified into a segment buffer): decoding (zstd or identity) and
// verifying it, by its SHA-256 (a segment recorded before BLAKE3 digests) or by the BLAKE3
// its metadata recorded (blob.WithBlake3). It reports cpu-ms/MiB beside ns/op.
func BenchmarkReadVerify(b *testing.B) {
	for _, tc := range []struct {
		name string
		data []byte
	}{{"text=4MiB", textBytes(4 << 20)}, {"random=1MiB", randomBytes(1, 1<<20)}, {"random=4MiB", randomBytes(1, 4<<20)}} {
		payload, enc := blob.Encode(nil, tc.data)
		payload = bytes.Clone(payload)
		key := blob.Key{Root: "r1", Digest: blob.DigestOf(tc.data)}
		buf := make([]byte, len(tc.data))
		for _, v := range []struct {
			name string
			ctx  context.Context
		}{
			{"sha256", context.Background()},
			{"blake3", blob.WithBlake3(context.Background(), key.Digest, blob.Blake3Of(tc.data))},
		} {
			b.Run(tc.name+"/verify="+v.name, func(b *testing.B) {
				b.SetBytes(int64(len(tc.data)))
				cpu0, ok := cpuTime()
				for b.Loop() {
					r, err := blob.NewReader(v.ctx, key, io.NopCloser(bytes.NewReader(payload)), enc, int64(len(tc.data)), 0, -1)
					if err != nil {
						b.Fatal(err)
					}
					if err := blob.ReadVerified(r, buf); err != nil {
						b.Fatal(err)
					}
					r.Close()
				}
				reportCPU(b, cpu0, ok, int64(len(tc.data)))
			})
		}
	}
}

// reportCPU adds the metric cpu-ms/MiB: the process's CPU time since cpu0 per MiB of the
// benchmark's bytes (bytes per op), which other work on a shared machine does not stretch
// as it stretches ns/op and MB/s.
func reportCPU(b *testing.B, cpu0 time.Duration, ok bool, bytes int64) {
	cpu1, ok1 := cpuTime()
	if !ok || !ok1 || b.N == 0 {
		return
	}
	mib := float64(bytes) * float64(b.N) / (1 << 20)
	b.ReportMetric(float64(cpu1-cpu0)/float64(time.Millisecond)/mib, "cpu-ms/MiB")
}

// BenchmarkSegmentChecksum measures what verifying a segment on read costs per byte, at
// the segment sizes the write path cuts (1 MiB; 4 MiB, chunk format 1's minimum; ~9 MiB,
// its mean; 16 MiB, the maximum), fed as a reader feeds its hash (32 KiB writes, what an
// object-store response yields per read):
//
//   - sha256: crypto/sha256, the content address and what every read verified before
//     segments recorded a BLAKE3 digest (SHA-NI on amd64);
//   - sha512_256: crypto/sha512 truncated (FIPS 180-4), the other standard 256-bit hash;
//   - blake3 (github.com/zeebo/blake3) and blake3-lukechampine (lukechampine.com/blake3):
//     the two maintained Go BLAKE3 implementations (AVX2; the second also AVX-512);
//   - crc32c and xxh3-128: checksums, the floor, which catch accidental damage only and
//     so cannot verify bytes from a store that is not trusted (blob/doc.go).
//
// Besides ns/op and MB/s it reports cpu-ms/MiB, the process's CPU time per MiB, which
// other work on the machine does not inflate. `go test -run '^$' -bench SegmentChecksum
// ./blob`; BENCHMARKS.md states the numbers and the choice (blob.Blake3Of).
func BenchmarkSegmentChecksum(b *testing.B) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, tc := range []struct {
		name string
		new  func() hash.Hash
	}{
		{"sha256", sha256.New},
		{"sha512_256", sha512.New512_256},
		{"blake3", func() hash.Hash { return zeebo.New() }},
		{"blake3-lukechampine", func() hash.Hash { return luke.New(32, nil) }},
		{"crc32c", func() hash.Hash { return crc32.New(castagnoli) }},
		{"xxh3-128", func() hash.Hash { return xxh3.New() }},
	} {
		for _, size := range []int{1 << 20, 4 << 20, 9 << 20, 16 << 20} {
			data := randomBytes(1, size)
			b.Run(fmt.Sprintf("sum=%s/segment=%dMiB", tc.name, size>>20), func(b *testing.B) {
				b.SetBytes(int64(size))
				h := tc.new()
				var out [64]byte
				cpu0, ok := cpuTime()
				for b.Loop() {
					h.Reset()
					for p := data; len(p) > 0; {
						n := min(len(p), 32<<10)
						h.Write(p[:n])
						p = p[n:]
					}
					h.Sum(out[:0])
				}
				reportCPU(b, cpu0, ok, int64(size))
			})
		}
	}
}
