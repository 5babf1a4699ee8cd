package workbench_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/api/workbench/workbenchtest"
)

// zeros is an endless reader of zero bytes (io.LimitReader bounds it).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// BenchmarkAppend1KiB appends 1 KiB to a 1 KiB file and to a 1 GiB file through the real
// write path (Raft, blob store): O(delta) append makes both cost the same (DESIGN.md §12;
// the ratio of the two ns/op is the figure to report).
func BenchmarkAppend1KiB(b *testing.B) {
	for _, tc := range []struct {
		name string
		size int64
	}{{"file=1KiB", 1 << 10}, {"file=1GiB", 1 << 30}} {
		b.Run(tc.name, func(b *testing.B) {
			svc := workbenchtest.New(b, workbench.Config{}).Service
			ctx := context.Background()
			if _, err := svc.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "logs/big.log",
				Body: io.LimitReader(zeros{}, tc.size), CreateWorkbench: true}); err != nil {
				b.Fatal(err)
			}
			chunk := bytes.Repeat([]byte("x"), 1<<10)
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			for b.Loop() {
				if _, err := svc.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/big.log",
					Body: bytes.NewReader(chunk)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
