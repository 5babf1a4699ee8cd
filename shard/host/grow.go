package host

import (
	"context"

	"github.com/cairnstore/cairn/shard/control"
)

// A cluster's shard count grows (shard/control/grow.go): the node follows the cluster
// record, so its placement accepts roots on the new shards and its status and backups
// cover them; the controller creates their groups and opens them to placement.

// current returns the cluster record as this node last read it.
func (cs *clusterState) current() control.Cluster { return *cs.record.Load() }

// follow takes a newer cluster record: a larger shard count replaces the known one (the
// count never shrinks, so a stale delivery changes nothing).
func (cs *clusterState) follow(c control.Cluster, pl *control.Placement) {
	for {
		cur := cs.record.Load()
		if c.Shards <= cur.Shards {
			return
		}
		if cs.record.CompareAndSwap(cur, &c) {
			pl.SetShards(c.Shards)
			return
		}
	}
}

// GrowShards adds add shards to the cluster (control.Plane.GrowShards; expect, when not
// 0, is the count the caller saw) and returns the record after the grow. Errors:
// ErrNotCluster, and those of control.Plane.GrowShards.
func (h *Host) GrowShards(ctx context.Context, add, expect int) (control.Cluster, error) {
	if h.cluster == nil {
		return control.Cluster{}, ErrNotCluster
	}
	c, err := h.cluster.cfg.Plane.GrowShards(ctx, add, expect)
	if err == nil {
		if pl, ok := h.placement.(*control.Placement); ok {
			h.cluster.follow(c, pl)
		}
	}
	return c, err
}
