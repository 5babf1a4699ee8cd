package control

import (
	"context"
	"errors"
	"time"

	"github.com/cairnstore/cairn/internal/pause"
)

// A controller cut off from its peers: a node that reaches etcd but none of the other
// nodes keeps its election (its lease is renewed), yet every shard call it makes fails:
// the moves it drives stall with their roots fenced, and no replica is added or removed,
// until the partition heals. So the leading controller probes its peers after each
// reconcile round; once it has reached none of them for cutOffRounds intervals it steps
// down, and it campaigns again only once it reaches one (or is the only registered node):
// a controller that reaches them wins the election and resumes the moves (a move not yet
// switched rolls back, and its root's writes resume).

// PeerProber, when the ShardAdmin implements it, tells the controller whether its node
// reaches the other nodes.
type PeerProber interface {
	// ReachesAny reports whether any of peers (the other registered nodes, by id)
	// answers on its peer port before ctx ends.
	ReachesAny(ctx context.Context, peers map[string]NodeInfo) bool
}

// cutOffRounds is how many reconcile intervals a controller must have reached none of its
// peers before it steps down.
const cutOffRounds = 3

// peerProbeTimeout bounds one probe of the peers: a node that answers does so within
// milliseconds.
const peerProbeTimeout = 2 * time.Second

// errCutOff ends a term whose node reaches none of its peers.
var errCutOff = errors.New("control: this node reaches none of the other nodes; stepping down")

// cutOff reports whether this controller's node reaches none of the other registered
// nodes (false when it cannot tell: no prober, etcd unreadable, no other node).
func (c *Controller) cutOff(ctx context.Context) bool {
	prober, ok := c.admin.(PeerProber)
	if !ok {
		return false
	}
	nodes, _, err := c.p.Nodes(ctx)
	if err != nil {
		return false
	}
	peers := map[string]NodeInfo{}
	for id, n := range nodes {
		if id != c.cfg.ID {
			peers[id] = n
		}
	}
	if len(peers) == 0 {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, peerProbeTimeout)
	defer cancel()
	return !prober.ReachesAny(pctx, peers)
}

// cutOffWatch tracks, across a term's rounds, since when the node reached no peer.
type cutOffWatch struct{ since time.Time }

// observe records one probe at now and reports whether the node has been cut off for
// cutOffRounds intervals.
func (w *cutOffWatch) observe(cut bool, now time.Time, interval time.Duration) bool {
	if !cut {
		w.since = time.Time{}
		return false
	}
	if w.since.IsZero() {
		w.since = now
	}
	return now.Sub(w.since) >= cutOffRounds*interval
}

// sitOut waits, after a term ended cut off, until this node reaches a peer again (or ctx
// ends), looking every Interval.
func (c *Controller) sitOut(ctx context.Context) {
	for ctx.Err() == nil && c.cutOff(ctx) {
		pause.For(ctx, c.cfg.Interval)
	}
}
