package workbench_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// putRecorder notes the digest of every blob the write path puts.
type putRecorder struct {
	blob.Store
	mu   sync.Mutex
	puts []blob.Digest
}

func (p *putRecorder) Put(ctx context.Context, key blob.Key, data blob.Hashed) (blob.PutResult, error) {
	p.mu.Lock()
	p.puts = append(p.puts, key.Digest)
	p.mu.Unlock()
	return p.Store.Put(ctx, key, data)
}

func (p *putRecorder) take() []blob.Digest {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.puts
	p.puts = nil
	return out
}

// segmentDigests cuts body as the write path does and returns each segment's digest.
func segmentDigests(t *testing.T, body []byte) []blob.Digest {
	t.Helper()
	sp := blob.NewSplitter(bytes.NewReader(body), 0, blob.CurrentChunkFormat, nil)
	var out []blob.Digest
	for {
		seg, err := sp.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, blob.DigestOf(seg))
	}
}

// The write path hashes once and keys a one-segment body by its digest: its only blob is
// stored under the body's SHA-256; a body of several segments stores each under its own
// SHA-256 and reports the whole body's; an append reports the digest of the whole file
// and of its new bytes. Whatever the size hint says, right, wrong or nothing, the same
// blobs are stored and the same digests reported.
func TestIngestKeysSegmentsByTheirDigest(t *testing.T) {
	rec := &putRecorder{Store: blobtest.Dir(t)}
	svc := workbenchtest.NewOn(t, workbench.Config{}, rec).Service
	random := func(seed byte, n int) []byte {
		b := make([]byte, n)
		rand.NewChaCha8([32]byte{seed}).Read(b)
		return b
	}
	files := 0
	for _, tc := range []struct {
		name         string
		first, added []byte
	}{
		{"a one-segment body and a one-segment append", random(1, 1<<20), random(2, 300<<10)},
		{"a body of exactly the single-segment limit", random(3, blob.SingleSegmentMaxBytes), nil},
		{"a body of several segments and an append of several", random(4, 20<<20), random(5, 18<<20)},
	} {
		for _, hint := range []struct {
			name string
			of   func(b []byte) int64
		}{
			{"no size hint", func([]byte) int64 { return 0 }},
			{"the right size hint", func(b []byte) int64 { return int64(len(b)) }},
			{"a size hint too small", func(b []byte) int64 { return int64(len(b)) / 3 }},
			{"a size hint too large", func(b []byte) int64 { return 2*int64(len(b)) + 7 }},
		} {
			t.Run(tc.name+", "+hint.name, func(t *testing.T) {
				files++
				path := fmt.Sprintf("outputs/f%d", files)
				res, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
					Body: bytes.NewReader(tc.first), SizeHint: hint.of(tc.first), CreateWorkbench: true})
				if err != nil {
					t.Fatal(err)
				}
				if res.Digest != meta.Digest(sha256.Sum256(tc.first)) {
					t.Errorf("Write reported digest %x, want the body's SHA-256", res.Digest)
				}
				want := segmentDigests(t, tc.first)
				if len(want) == 1 && want[0] != blob.Digest(res.Digest) {
					t.Fatalf("a one-segment body's segment digest differs from the body's")
				}
				if got := rec.take(); !slices.Equal(sorted(got), sorted(want)) {
					t.Errorf("Write put %d blobs %v, want one per segment %v", len(got), got, want)
				}
				if tc.added == nil {
					return
				}
				ar, err := svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: path,
					Body: bytes.NewReader(tc.added), SizeHint: hint.of(tc.added)})
				if err != nil {
					t.Fatal(err)
				}
				whole := append(slices.Clone(tc.first), tc.added...)
				if ar.Digest != meta.Digest(sha256.Sum256(whole)) || ar.AppendDigest != meta.Digest(sha256.Sum256(tc.added)) {
					t.Errorf("Append reported digest %x and append digest %x, want the SHA-256 of the file and of the appended bytes", ar.Digest, ar.AppendDigest)
				}
				if got, want := rec.take(), segmentDigests(t, tc.added); !slices.Equal(sorted(got), sorted(want)) {
					t.Errorf("Append put %d blobs, want one per segment of the appended bytes (%d)", len(got), len(want))
				}
				if got := readAll(t, svc, path); !bytes.Equal(got, whole) {
					t.Fatal("the file reads back other bytes")
				}
			})
		}
	}
}

func sorted(ds []blob.Digest) []blob.Digest {
	out := slices.Clone(ds)
	slices.SortFunc(out, func(a, b blob.Digest) int { return bytes.Compare(a[:], b[:]) })
	return out
}
