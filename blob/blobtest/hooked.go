package blobtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/dir"
)

// Hooks say what a Hooked store does to its calls; the zero Hooks pass every call through.
type Hooks struct {
	FailList   bool           // List answers blob.ErrUnavailable
	FailDelete bool           // Delete answers blob.ErrUnavailable
	ListGate   chan struct{}  // when set, every List first waits for a value from it (or ctx's end)
	OnPut      func(blob.Key) // called after a Put returns successfully
	OnDelete   func(blob.Key) // called before a Delete (one FailDelete refuses is not)
	OnGet      func(blob.Key) // called before a Get
}

// Hooked is a real blob.Store whose calls a test can fail, hold or interleave with: the
// store under the collector and the write path in the tests of shard/worker and
// workbench. Its hooks change under a lock (Set), so a test may change them while calls
// run; the hook functions run outside it.
type Hooked struct {
	blob.Store
	mu      sync.Mutex
	hooks   Hooks
	deleted []blob.Key
}

// Set changes the hooks: f runs under the store's lock.
func (h *Hooked) Set(f func(*Hooks)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&h.hooks)
}

func (h *Hooked) current() Hooks {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hooks
}

// Put stores through the real store, then calls OnPut if the Put succeeded.
func (h *Hooked) Put(ctx context.Context, key blob.Key, data blob.Hashed) (blob.PutResult, error) {
	res, err := h.Store.Put(ctx, key, data)
	if onPut := h.current().OnPut; err == nil && onPut != nil {
		onPut(key)
	}
	return res, err
}

// Get calls OnGet, then reads the real store.
func (h *Hooked) Get(ctx context.Context, key blob.Key, offset, length int64) (io.ReadCloser, error) {
	if onGet := h.current().OnGet; onGet != nil {
		onGet(key)
	}
	return h.Store.Get(ctx, key, offset, length)
}

// List fails under FailList and waits for ListGate, then lists the real store.
func (h *Hooked) List(ctx context.Context, root string, fn func(blob.Key, blob.Info) error) error {
	hooks := h.current()
	if hooks.FailList {
		return fmt.Errorf("hooked list %s: %w", root, blob.ErrUnavailable)
	}
	if hooks.ListGate != nil {
		select {
		case <-hooks.ListGate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Store.List(ctx, root, fn)
}

// Delete fails under FailDelete, calls OnDelete, then deletes from the real store and
// records the key (Deleted).
func (h *Hooked) Delete(ctx context.Context, key blob.Key) error {
	hooks := h.current()
	if hooks.FailDelete {
		return fmt.Errorf("hooked delete %s: %w", key, blob.ErrUnavailable)
	}
	if hooks.OnDelete != nil {
		hooks.OnDelete(key)
	}
	if err := h.Store.Delete(ctx, key); err != nil {
		return err
	}
	h.mu.Lock()
	h.deleted = append(h.deleted, key)
	h.mu.Unlock()
	return nil
}

// Deleted returns the keys deleted so far, in order.
func (h *Hooked) Deleted() []blob.Key {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]blob.Key(nil), h.deleted...)
}

// Stored reports whether store holds key (Stat); any error but blob.ErrNotFound fails tb.
func Stored(tb testing.TB, store blob.Store, key blob.Key) bool {
	tb.Helper()
	_, err := store.Stat(tb.Context(), key)
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		tb.Fatal(err)
	}
	return err == nil
}

// Dir is a directory store (blob/dir) in a fresh temporary directory of the test, closed
// when the test ends: the real backend the tests of its callers store their blobs in.
func Dir(tb testing.TB) *dir.Store {
	tb.Helper()
	ds, err := dir.Open(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ds.Close() })
	return ds
}

// CountingPuts is a Hooked store over a fresh directory store of the test (Dir) that
// counts its successful Puts: what a test of "no byte written" reads before and after.
func CountingPuts(t testing.TB) (*Hooked, *atomic.Int64) {
	t.Helper()
	var puts atomic.Int64
	h := &Hooked{Store: Dir(t)}
	h.Set(func(hk *Hooks) { hk.OnPut = func(blob.Key) { puts.Add(1) } })
	return h, &puts
}
