package pause_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/pause"
)

func TestForReturnsNilOnceTheWaitPassed(t *testing.T) {
	if err := pause.For(t.Context(), time.Millisecond); err != nil {
		t.Fatalf("a wait under a live context: %v", err)
	}
}

func TestForReturnsTheContextsErrorWhenItEndsFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := pause.For(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("an hour's wait under a cancelled context: %v, want context.Canceled", err)
	}
	if err := pause.For(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("no wait under a cancelled context: %v, want context.Canceled", err)
	}
	if err := pause.For(t.Context(), 0); err != nil {
		t.Fatalf("no wait under a live context: %v", err)
	}
}
