package workbenchtest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
)

// Propose is one proposal a FaultCore hands to a test: propose sends it to the real core.
type Propose func() (meta.Result, error)

// FaultCore is a workbench.Core that passes every call to the real core, except that a
// test can take over the next proposal once (Once): fail it without proposing, or
// propose it and answer something else, as a replica that lost its leadership or its
// quorum would.
type FaultCore struct {
	workbench.Core
	next atomic.Pointer[func(Propose) (meta.Result, error)]
}

// Propose runs the function Once armed, if any, else proposes as the real core does.
func (c *FaultCore) Propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error) {
	propose := Propose(func() (meta.Result, error) { return c.Core.Propose(ctx, h, b) })
	if f := c.next.Swap(nil); f != nil {
		return (*f)(propose)
	}
	return propose()
}

// Once makes f answer the next proposal (only that one).
func (c *FaultCore) Once(f func(Propose) (meta.Result, error)) {
	c.next.Store(&f)
}

// AppliedButUnconfirmed is a Once function: the proposal commits and applies, but the
// caller hears shard.ErrTimeout, as from a leader that lost its quorum before it could
// confirm the commit: the outcome the caller sees is unknown, the write did apply.
func AppliedButUnconfirmed(propose Propose) (meta.Result, error) {
	if _, err := propose(); err != nil {
		return meta.Result{}, err
	}
	return meta.Result{}, shard.ErrTimeout
}

// NewFaulty is New whose Service proposes through a FaultCore over the node's shard.
func NewFaulty(tb testing.TB, cfg workbench.Config) (*Node, *FaultCore) {
	tb.Helper()
	n := New(tb, cfg)
	if cfg.CursorKey == nil {
		cfg.CursorKey = CursorKey
	}
	fc := &FaultCore{Core: n.Shard}
	svc, err := workbench.New(fc, n.Blobs, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	faulty := *n
	faulty.Service = svc
	return &faulty, fc
}
