package workbench_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// zeros is an endless reader of zero bytes (io.LimitReader bounds it).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// BenchmarkAppend1KiB appends 1 KiB to a 1 KiB file and to a 1 GiB file through the real
// write path (Raft, blob store): O(delta) append makes both cost the same (BENCHMARKS.md;
// the ratio of the two ns/op is the figure to report).
func BenchmarkAppend1KiB(b *testing.B) {
	for _, tc := range []struct {
		name string
		size int64
	}{{"file=1KiB", 1 << 10}, {"file=1GiB", 1 << 30}} {
		b.Run(tc.name, func(b *testing.B) {
			svc := workbenchtest.New(b, workbench.Config{}).Service
			ctx := context.Background()
			if _, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "logs/big.log",
				Body: io.LimitReader(zeros{}, tc.size), CreateWorkbench: true}); err != nil {
				b.Fatal(err)
			}
			chunk := bytes.Repeat([]byte("x"), 1<<10)
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			for b.Loop() {
				if _, err := svc.Writes.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/big.log",
					Body: bytes.NewReader(chunk)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRestore restores a snapshot of a workbench of 10,000 files into a new
// workbench per iteration (no body is copied: O(paths) metadata in bounded commands).
// Report files/s = 10,000 / (ns/op).
func BenchmarkRestore(b *testing.B) {
	const files = 10_000
	n := workbenchtest.New(b, workbench.Config{})
	svc := n.Service
	ctx := context.Background()
	for i := 0; i < files; i++ {
		if _, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "src", Path: fmt.Sprintf("input/d%02d/f%05d", i%100, i),
			Body: strings.NewReader(fmt.Sprint("body ", i%50)), CreateWorkbench: true}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "src", Name: ptr("s")}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := svc.Tools.Restore(ctx, "a", workbench.RestoreInput{ID: "src", DestinationID: fmt.Sprint("dst", i), AtSnapshot: []byte(`"s"`)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(files)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}

// BenchmarkReadVerified streams a 40 MiB body of several segments (random bytes, stored
// identity) from the dir backend, whole and as a 1 MiB range: every segment is verified
// before any of its bytes is returned (integrity.go). B/op shows the segment buffers are
// pooled (a read holds at most one segment of ≤ 16 MiB plus the read-ahead).
func BenchmarkReadVerified(b *testing.B) {
	svc := workbenchtest.New(b, workbench.Config{}).Service
	ctx := context.Background()
	const size = 40 << 20
	body := make([]byte, size)
	rand.NewChaCha8([32]byte{7}).Read(body)
	if _, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/big.bin",
		Body: bytes.NewReader(body), CreateWorkbench: true}); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		off, length int64
	}{{"whole", 0, -1}, {"range=1MiB", 20 << 20, 1 << 20}} {
		b.Run(tc.name, func(b *testing.B) {
			n := tc.length
			if n < 0 {
				n = size
			}
			b.SetBytes(n)
			b.ReportAllocs()
			buf := make([]byte, 256<<10)
			for b.Loop() {
				f, err := svc.Reads.Open(ctx, "a", "w", "outputs/big.bin")
				if err != nil {
					b.Fatal(err)
				}
				r, err := f.Reader(ctx, tc.off, tc.length)
				if err != nil {
					b.Fatal(err)
				}
				if got, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil || got != n {
					b.Fatalf("read %d bytes, %v", got, err)
				}
				r.Close()
			}
		})
	}
}
