package shard

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cairnstore/cairn/meta"
)

// countingDiscard counts the bytes written to it.
type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWriteSnapshot measures a Raft snapshot of a shard whose root holds 20,000
// files of 1 KiB inline (as small-put leaves it; meta.BenchmarkSnapshotWrite without the
// compression): the meta stream and its zstd together. zstd-B is the snapshot's size.
func BenchmarkWriteSnapshot(b *testing.B) {
	const files = 20_000
	f := meta.New(meta.Options{})
	r := rand.NewChaCha8([32]byte{})
	for i := range files {
		body := make([]byte, 1024)
		r.Read(body) // random bytes: what the compression gets least from
		f.ApplyBody(uint64(i+1), meta.Header{TimeMs: 1}, meta.Put{Agent: "a", Workspace: "w", Path: fmt.Sprintf("input/d%d/f%d", i%100, i),
			CreateWorkspace: true, Size: 1024, Segments: []meta.Segment{{Size: 1024, Inline: body}}})
	}
	s := f.Snapshot()
	var w countingDiscard
	b.ReportAllocs()
	for b.Loop() {
		w.n = 0
		if err := WriteSnapshot(&w, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w.n), "zstd-B")
}
