package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/internal/pause"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// Core is what the host serves an agent root through: the adapter's core interface
// (workbench.Core has the same methods).
type Core interface {
	// Propose replicates a command on the root's shard leader and returns its applied
	// result.
	Propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error)
	// ReadView returns a linearizable view of the root's shard, from this node's replica.
	ReadView(ctx context.Context) (*meta.View, error)
	// ReadViewAt returns this node's replica's applied view once it holds `version`.
	ReadViewAt(ctx context.Context, version uint64) (*meta.View, error)
	// WaitApplied returns once this node's replica has applied `version` (no time
	// bound but ctx's): what a follower of the change feed waits on.
	WaitApplied(ctx context.Context, version uint64) error
}

// assignTimeout bounds placing a root and assigning it on its shard.
const assignTimeout = 10 * time.Second

// For returns the core of agent's root. A root never placed gets a core that reads as
// empty and places the root at its first command. Errors match outcome.ErrUnavailable
// when the control plane cannot tell where the root lives right now.
func (h *Host) For(agent string) (Core, error) {
	if id, ok := h.placement.Cached(agent); ok {
		return &rootCore{h: h, id: id, agent: agent}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), assignTimeout)
	defer cancel()
	id, err := h.placement.Resolve(ctx, agent)
	switch {
	case errors.Is(err, control.ErrRootNotPlaced):
		return &unplacedCore{h: h, agent: agent}, nil
	case err != nil && control.IsRetryable(err):
		return nil, fmt.Errorf("%w (placing root: %v)", shard.ErrNotLeader, err)
	case err != nil:
		return nil, err
	}
	return &rootCore{h: h, id: id, agent: agent}, nil
}

// Leaders returns the local replicas that are ready leaders, in shard order: the cores
// the node-wide operations (an admin's GC sweep) act on.
func (h *Host) Leaders() []*shard.Shard {
	var out []*shard.Shard
	list := h.Replicas()
	for _, id := range h.replicas.ids() {
		if r := list[id]; r != nil && r.Ready() {
			out = append(out, r)
		}
	}
	return out
}

// All returns every local replica in shard order.
func (h *Host) All() []*shard.Shard {
	list := h.Replicas()
	out := make([]*shard.Shard, 0, len(list))
	for _, id := range h.replicas.ids() {
		out = append(out, list[id])
	}
	return out
}

// rootCore serves one placed root through this node's replica of its shard.
type rootCore struct {
	h     *Host
	id    int
	agent string
}

// Propose assigns the root on its shard if this node has not seen it assigned (cluster),
// then proposes b on the shard's leader: the local replica when it leads, else the
// leader over the peer port.
func (c *rootCore) Propose(ctx context.Context, hd meta.Header, b meta.Body) (meta.Result, error) {
	if err := c.assign(ctx); err != nil {
		return meta.Result{}, err
	}
	return c.proposeMoving(ctx, hd, b) // move_route.go
}

// assign makes sure the root is assigned on its shard (a shard refuses roots it does not
// own, meta.Options.RequireRootAssignment).
func (c *rootCore) assign(ctx context.Context) error {
	if c.h.cfg.Cluster == nil {
		return nil
	}
	if _, ok := c.h.assigned.Load(c.agent); ok {
		return nil
	}
	v, err := c.h.leaders.readView(ctx, c.id)
	if err != nil {
		return err
	}
	if !v.Shard().HoldsRoot(c.agent) {
		res, err := c.h.leaders.propose(ctx, c.id, meta.Header{}, meta.AssignRoot{Agent: c.agent})
		if err != nil {
			return err
		}
		if res.Err != nil {
			if moved(res) { // a stale placement: learn the root's shard for the retry
				_, _ = c.h.placement.Refresh(ctx, c.agent)
			}
			return res.Err
		}
	}
	c.h.assigned.Store(c.agent, struct{}{})
	return nil
}

// ReadView reads the root's shard; a shard that released the root to another (a stale
// placement, move_route.go) is read again at the shard the placement names now: a read
// carries nothing of a view, so it may follow the move.
func (c *rootCore) ReadView(ctx context.Context) (*meta.View, error) {
	v, err := c.h.leaders.readView(ctx, c.id)
	if err != nil {
		return nil, err
	}
	if id, ok := c.movedAway(ctx, v); ok {
		return c.h.leaders.readView(ctx, id)
	}
	return v, nil
}

func (c *rootCore) ReadViewAt(ctx context.Context, version uint64) (*meta.View, error) {
	r := c.h.Replica(c.id)
	if r == nil {
		return nil, fmt.Errorf("%w: no replica of shard %d on this node", shard.ErrNotLeader, c.id)
	}
	v, err := r.ReadViewAt(ctx, version)
	if err == nil && !r.Ready() {
		c.h.followerReads.inc(c.id)
	}
	return v, err
}

func (c *rootCore) WaitApplied(ctx context.Context, version uint64) error {
	r := c.h.Replica(c.id)
	if r == nil {
		return fmt.Errorf("%w: no replica of shard %d on this node", shard.ErrNotLeader, c.id)
	}
	return r.WaitApplied(ctx, version)
}

// unplacedCore serves a root that was never placed: it reads as the empty state every
// shard shows for a root it never saw, and its first command places it.
type unplacedCore struct {
	h     *Host
	agent string
}

func (c *unplacedCore) Propose(ctx context.Context, hd meta.Header, b meta.Body) (meta.Result, error) {
	pctx, cancel := context.WithTimeout(ctx, assignTimeout)
	id, _, err := c.h.placement.Place(pctx, c.agent)
	cancel()
	if err != nil {
		if control.IsRetryable(err) {
			return meta.Result{}, fmt.Errorf("%w (placing root: %v)", shard.ErrNotLeader, err)
		}
		return meta.Result{}, err
	}
	return (&rootCore{h: c.h, id: id, agent: c.agent}).Propose(ctx, hd, b)
}

func (c *unplacedCore) ReadView(context.Context) (*meta.View, error) {
	return meta.New(c.h.cfg.FSM).View(), nil
}

func (c *unplacedCore) ReadViewAt(context.Context, uint64) (*meta.View, error) {
	return meta.New(c.h.cfg.FSM).View(), nil
}

// WaitApplied of a root that was never placed has nothing to wait for but its placement:
// it returns after unplacedPoll (or ctx's end), and the caller resolves the root again.
func (c *unplacedCore) WaitApplied(ctx context.Context, _ uint64) error {
	return pause.For(ctx, unplacedPoll)
}

// unplacedPoll is how often a waiter on a root that was never placed looks again.
const unplacedPoll = time.Second
