package workbench_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/mem"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// createdCounter counts the blobs Put actually stored (not deduped).
type createdCounter struct {
	blob.Store
	mu      sync.Mutex
	created int
}

func (c *createdCounter) Put(ctx context.Context, key blob.Key, data blob.Hashed) (blob.PutResult, error) {
	res, err := c.Store.Put(ctx, key, data)
	if err == nil && res.Created {
		c.mu.Lock()
		c.created++
		c.mu.Unlock()
	}
	return res, err
}

func (c *createdCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.created
	c.created = 0
	return n
}

// Data written in chunk format 0 (Rabin, every release before formats existed) keeps
// reading and deduping after the change; an append in the new format to such a file
// leaves a list that mixes both, and reads back whole. A body stored in the old format
// and uploaded again in the new one is stored again, once (the cost of the change).
func TestChunkFormatsMixAndDedupeWithinTheirFormat(t *testing.T) {
	store := &createdCounter{Store: mem.New()}
	svc := workbenchtest.NewOn(t, workbench.Config{}, store).Service
	body := make([]byte, 40<<20)
	rand.NewChaCha8([32]byte{13}).Read(body)
	added := make([]byte, 20<<20)
	rand.NewChaCha8([32]byte{14}).Read(added)
	write := func(path string, b []byte) {
		t.Helper()
		if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: bytes.NewReader(b), SizeHint: int64(len(b)), CreateWorkbench: true}); err != nil {
			t.Fatal(err)
		}
	}
	formats := func(path string) []blob.ChunkFormat {
		t.Helper()
		f, err := svc.SegmentFormats(t.Context(), "a", "w", path)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	allOf := func(fs []blob.ChunkFormat, f blob.ChunkFormat) bool {
		return len(fs) > 1 && !slices.ContainsFunc(fs, func(g blob.ChunkFormat) bool { return g != f })
	}

	svc.SetChunkFormat(blob.ChunkRabin)
	write("outputs/old", body)
	oldSegs := store.take()
	if fs := formats("outputs/old"); !allOf(fs, blob.ChunkRabin) {
		t.Fatalf("a body written in format 0 has segment formats %v", fs)
	}
	write("outputs/old-copy", body)
	if n := store.take(); n != 0 {
		t.Errorf("the same body written again in format 0 stored %d new blobs, want 0", n)
	}

	svc.SetChunkFormat(blob.CurrentChunkFormat)
	if got := readAll(t, svc, "outputs/old"); !bytes.Equal(got, body) {
		t.Fatal("a file written in format 0 reads back other bytes under the new format")
	}
	if _, err := svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "outputs/old",
		Body: bytes.NewReader(added), SizeHint: int64(len(added))}); err != nil {
		t.Fatal(err)
	}
	fs := formats("outputs/old")
	n := slices.Index(fs, blob.CurrentChunkFormat)
	if n <= 0 || !allOf(fs[:n], blob.ChunkRabin) || !allOf(fs[n:], blob.CurrentChunkFormat) {
		t.Errorf("after an append in the new format the segment formats are %v, want format 0 then %d", fs, blob.CurrentChunkFormat)
	}
	store.take()
	if got := readAll(t, svc, "outputs/old"); !bytes.Equal(got, append(slices.Clone(body), added...)) {
		t.Fatal("a file of mixed formats reads back other bytes")
	}

	write("outputs/new", body)
	newSegs := store.take()
	if newSegs == 0 {
		t.Errorf("the body written again in the new format deduped against format 0's cuts: the formats cut alike?")
	}
	write("outputs/new-copy", body)
	if n := store.take(); n != 0 {
		t.Errorf("the same body written again in the new format stored %d new blobs, want 0", n)
	}
	t.Logf("a 40 MiB body: %d segments in format 0, %d stored again in format %d", oldSegs, newSegs, blob.CurrentChunkFormat)
}
