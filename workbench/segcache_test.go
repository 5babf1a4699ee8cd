package workbench_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/cache"
	"github.com/cairnstore/cairn/blob/mem"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// getCounter counts the object-store reads.
type getCounter struct {
	blob.Store
	gets atomic.Int64
}

func (g *getCounter) Get(ctx context.Context, key blob.Key, off, n int64) (io.ReadCloser, error) {
	g.gets.Add(1)
	return g.Store.Get(ctx, key, off, n)
}

// readBoth reads the whole file through Read (ReadAll) and through WriteTo (io.Copy, as
// REST serves it) and checks both against want.
func readBoth(t *testing.T, svc *workbench.Service, path string, want []byte) {
	t.Helper()
	if got := readAll(t, svc, path); !bytes.Equal(got, want) {
		t.Fatal("Read: other bytes than written")
	}
	f, err := svc.Reads.Open(t.Context(), "a", "w", path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Reader(t.Context(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	if _, err := io.Copy(&out, r); err != nil || !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("WriteTo: %v, or other bytes than written", err)
	}
	// A range across a segment boundary, through the cached files or not.
	r2, err := f.Reader(t.Context(), 5<<20, 10<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	out.Reset()
	if _, err := io.Copy(&out, r2); err != nil || !bytes.Equal(out.Bytes(), want[5<<20:15<<20]) {
		t.Fatalf("a range: %v, or other bytes", err)
	}
}

// With a segment cache, the segments a write uploads are served from local files
// without an object-store read, also by a new service over the cache reopened (a
// restart); a cached file damaged on disk is detected, and the read fetches the
// segment from the object store instead and refills the cache.
func TestSegmentCacheServesWritesAndSurvivesDamageAndRestart(t *testing.T) {
	dir := t.TempDir()
	sc, err := cache.Open(dir, 64<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &getCounter{Store: mem.New()}
	env := workbenchtest.NewOn(t, workbench.Config{SegmentCache: sc}, store)
	svc := env.Service
	body := make([]byte, 30<<20)
	rand.NewChaCha8([32]byte{21}).Read(body)
	if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/big",
		Body: bytes.NewReader(body), SizeHint: int64(len(body)), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	readBoth(t, svc, "outputs/big", body)
	if n := store.gets.Load(); n != 0 {
		t.Errorf("reads of a file whose segments the write cached made %d object-store reads, want 0", n)
	}

	// Damage one cached file the way silent disk damage would: same size and time.
	var victim string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && victim == "" {
			victim = p
		}
		return nil
	})
	info, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(victim)
	data[100] ^= 1
	os.WriteFile(victim, data, 0o640)
	os.Chtimes(victim, info.ModTime(), info.ModTime())

	// A restart: the cache reopened on its directory, a new service over it.
	sc2, err := cache.Open(dir, 64<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc2, err := workbench.New(env.Shard, store, workbench.Config{SegmentCache: sc2, CursorKey: workbenchtest.CursorKey})
	if err != nil {
		t.Fatal(err)
	}
	store.gets.Store(0)
	readBoth(t, svc2, "outputs/big", body)
	if n := store.gets.Load(); n != 1 {
		t.Errorf("after a restart with one cached file damaged, reads made %d object-store reads, want 1 (the damaged segment, once)", n)
	}
	store.gets.Store(0)
	readBoth(t, svc2, "outputs/big", body)
	if n := store.gets.Load(); n != 0 {
		t.Errorf("once refilled, reads made %d object-store reads, want 0", n)
	}
}

// Segments a read fetched whole from the object store (and verified) fill the cache: the
// next read makes no object-store read.
func TestSegmentCacheIsFilledByReads(t *testing.T) {
	store := &getCounter{Store: mem.New()}
	env := workbenchtest.NewOn(t, workbench.Config{}, store) // writes without a cache
	body := make([]byte, 20<<20)
	rand.NewChaCha8([32]byte{22}).Read(body)
	if _, err := env.Service.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/big",
		Body: bytes.NewReader(body), SizeHint: int64(len(body)), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	sc, err := cache.Open(t.TempDir(), 64<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := workbench.New(env.Shard, store, workbench.Config{SegmentCache: sc, CursorKey: workbenchtest.CursorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, svc, "outputs/big"); !bytes.Equal(got, body) {
		t.Fatal("other bytes than written")
	}
	if store.gets.Load() == 0 || sc.Bytes() != int64(len(body)) {
		t.Fatalf("a cold read made %d object-store reads and cached %d bytes, want some and the whole body (%d)",
			store.gets.Load(), sc.Bytes(), len(body))
	}
	store.gets.Store(0)
	readBoth(t, svc, "outputs/big", body)
	if n := store.gets.Load(); n != 0 {
		t.Errorf("a second read made %d object-store reads, want 0", n)
	}
}
