package host

import (
	"context"

	"github.com/cairnstore/cairn/shard/control"
)

// Placement maps an agent root to its shard. *control.Placement (etcd) implements it for
// a cluster; Static for the embedded default.
type Placement interface {
	// Cached returns root's shard if it is known without a round trip.
	Cached(root string) (int, bool)
	// Resolve returns root's shard; control.ErrRootNotPlaced when the root was never
	// placed, a retryable control-plane error (control.IsRetryable) when it cannot tell.
	Resolve(ctx context.Context, root string) (int, error)
	// Refresh reads root's shard again, past any cache (a shard said the root moved).
	Refresh(ctx context.Context, root string) (int, error)
	// Place returns root's shard, placing it first if it has none.
	Place(ctx context.Context, root string) (shard int, created bool, err error)
	// Close releases the placement's watches.
	Close()
}

// Static is the embedded default's placement: every root on one shard.
type Static struct{ Shard int }

// Cached returns the shard.
func (s Static) Cached(string) (int, bool) { return s.Shard, true }

// Resolve returns the shard.
func (s Static) Resolve(context.Context, string) (int, error) { return s.Shard, nil }

// Refresh returns the shard.
func (s Static) Refresh(context.Context, string) (int, error) { return s.Shard, nil }

// Place returns the shard.
func (s Static) Place(context.Context, string) (int, bool, error) { return s.Shard, false, nil }

// Close does nothing.
func (Static) Close() {}

var (
	_ Placement = Static{}
	_ Placement = (*control.Placement)(nil)
)

// Placement returns the host's placement of roots on shards.
func (h *Host) Placement() Placement { return h.placement }
