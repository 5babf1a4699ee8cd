package blob_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/mem"
)

// stalled is a store whose calls block until their context ends, and whose readers
// deliver one byte and then block.
type stalled struct{ blob.Store }

func (stalled) Stat(ctx context.Context, _ blob.Key) (blob.Info, error) {
	<-ctx.Done()
	return blob.Info{}, ctx.Err()
}

func (stalled) Get(ctx context.Context, _ blob.Key, _, _ int64) (io.ReadCloser, error) {
	return &stallReader{ctx: ctx}, nil
}

type stallReader struct {
	ctx  context.Context
	sent bool
}

func (r *stallReader) Read(p []byte) (int, error) {
	if !r.sent {
		r.sent = true
		p[0] = 'x'
		return 1, nil
	}
	<-r.ctx.Done()
	return 0, r.ctx.Err()
}

func (r *stallReader) Close() error { return nil }

func TestWithDeadlineEndsStalledCallsWithARetryableTimeout(t *testing.T) {
	s := blob.WithDeadline(stalled{mem.New()}, 50*time.Millisecond)
	key := blob.Key{Root: "r1"}
	_, err := s.Stat(t.Context(), key)
	var te *blob.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, blob.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stat of a stalled store: %v, want a *TimeoutError wrapping ErrUnavailable only", err)
	}
	rc, err := s.Get(t.Context(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_, err = io.ReadAll(rc)
	if !errors.As(err, &te) || te.Op != "read" {
		t.Fatalf("a reader that stalls: %v, want a *TimeoutError of op read", err)
	}
}

func TestWithDeadlineKeepsTheCallersOwnCancellation(t *testing.T) {
	s := blob.WithDeadline(stalled{mem.New()}, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Stat(ctx, blob.Key{Root: "r1"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stat with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestWithDeadlineDoesNotCountTheCallersPaceBetweenReads(t *testing.T) {
	m := mem.New()
	data := []byte("hello, world")
	key := blob.Key{Root: "r1", Digest: blob.DigestOf(data)}
	if _, err := m.Put(t.Context(), key, blob.Hash(data)); err != nil {
		t.Fatal(err)
	}
	s := blob.WithDeadline(m, 20*time.Millisecond)
	rc, err := s.Get(t.Context(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	one := make([]byte, 1)
	if _, err := rc.Read(one); err != nil {
		t.Fatal(err)
	}
	// The caller pauses longer than the deadline (a slow client): the store is not to blame.
	<-time.After(60 * time.Millisecond)
	rest, err := io.ReadAll(rc)
	if err != nil || string(one)+string(rest) != string(data) {
		t.Fatalf("read after a pause: %q, %v", rest, err)
	}
}
