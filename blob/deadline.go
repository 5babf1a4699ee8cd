package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// TimeoutError is the error of a Store call that made no progress within the deadline
// WithDeadline gave it: the backend stalled (an object store that accepts connections
// and never answers, a hung disk). It wraps ErrUnavailable, so the call may be retried,
// and never the context error: the caller did not give up, the store did not answer.
type TimeoutError struct {
	// Op is the call: put, get, read, stat, delete or list.
	Op string
	// After is the deadline that passed without progress.
	After time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("blob store %s made no progress within %v", e.Op, e.After)
}

// Unwrap returns ErrUnavailable.
func (e *TimeoutError) Unwrap() error { return ErrUnavailable }

// WithDeadline returns s with a deadline on every call (docs/architecture.md#blob-storage-and-garbage-collection; a stalled object
// store must answer 503, never hang a request): Put, Stat and Delete must finish within
// timeout; a reader from Get, and a List, must make progress (a Read returning bytes, an
// entry reaching fn) at least every timeout. A call past its deadline fails with a
// *TimeoutError; a call whose ctx ended first fails as before. The time fn itself takes
// in List does not count.
func WithDeadline(s Store, timeout time.Duration) Store {
	return &deadlineStore{s: s, timeout: timeout}
}

type deadlineStore struct {
	s       Store
	timeout time.Duration
}

// watchdog cancels its context when it is not kicked for timeout.
type watchdog struct {
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	t       *time.Timer
	timeout time.Duration
	fired   bool
}

func newWatchdog(parent context.Context, timeout time.Duration) *watchdog {
	ctx, cancel := context.WithCancel(parent)
	w := &watchdog{ctx: ctx, cancel: cancel, timeout: timeout}
	w.t = time.AfterFunc(timeout, func() {
		w.mu.Lock()
		w.fired = true
		w.mu.Unlock()
		cancel()
	})
	return w
}

// kick restarts the deadline (progress was made); pause stops it (time that must not
// count) until the next kick.
func (w *watchdog) kick()  { w.t.Reset(w.timeout) }
func (w *watchdog) pause() { w.t.Stop() }

func (w *watchdog) stop() {
	w.t.Stop()
	w.cancel()
}

// err returns the *TimeoutError of op when the watchdog fired and the parent context is
// still live, else err unchanged.
func (w *watchdog) err(parent context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	w.mu.Lock()
	fired := w.fired
	w.mu.Unlock()
	if fired && parent.Err() == nil {
		return &TimeoutError{Op: op, After: w.timeout}
	}
	return err
}

func (d *deadlineStore) Put(ctx context.Context, key Key, data Hashed) (PutResult, error) {
	w := newWatchdog(ctx, d.timeout)
	defer w.stop()
	r, err := d.s.Put(w.ctx, key, data)
	return r, w.err(ctx, "put", err)
}

func (d *deadlineStore) Get(ctx context.Context, key Key, offset, length int64) (io.ReadCloser, error) {
	w := newWatchdog(ctx, d.timeout)
	rc, err := d.s.Get(w.ctx, key, offset, length)
	if err != nil {
		w.stop()
		return nil, w.err(ctx, "get", err)
	}
	w.kick()
	return &deadlineReader{rc: rc, w: w, parent: ctx}, nil
}

type deadlineReader struct {
	rc     io.ReadCloser
	w      *watchdog
	parent context.Context
}

func (r *deadlineReader) Read(p []byte) (int, error) {
	r.w.kick()
	n, err := r.rc.Read(p)
	// The caller's own pace between reads does not count: a client downloading slowly
	// is bounded by the serving deadlines, not by the store's.
	r.w.pause()
	if err != nil && !errors.Is(err, io.EOF) {
		err = r.w.err(r.parent, "read", err)
	}
	return n, err
}

func (r *deadlineReader) Close() error {
	r.w.stop()
	return r.rc.Close()
}

func (d *deadlineStore) Stat(ctx context.Context, key Key) (Info, error) {
	w := newWatchdog(ctx, d.timeout)
	defer w.stop()
	info, err := d.s.Stat(w.ctx, key)
	return info, w.err(ctx, "stat", err)
}

func (d *deadlineStore) Delete(ctx context.Context, key Key) error {
	w := newWatchdog(ctx, d.timeout)
	defer w.stop()
	return w.err(ctx, "delete", d.s.Delete(w.ctx, key))
}

func (d *deadlineStore) List(ctx context.Context, root string, fn func(Key, Info) error) error {
	w := newWatchdog(ctx, d.timeout)
	defer w.stop()
	err := d.s.List(w.ctx, root, func(k Key, info Info) error {
		w.pause()
		defer w.kick()
		return fn(k, info)
	})
	return w.err(ctx, "list", err)
}

func (d *deadlineStore) Close() error { return d.s.Close() }
