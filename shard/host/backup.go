package host

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// ShardIDs returns the shards of the node's cluster, in id order: the embedded default's
// one shard, or 0..Shards-1 of a cluster.
func (h *Host) ShardIDs() []int {
	if h.cluster == nil {
		return []int{EmbeddedShard}
	}
	ids := make([]int, h.cluster.current().Shards)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// ProposeOn proposes b on shard id's leader (forwarded over the peer port when another
// node leads), for commands that belong to a shard rather than a root (backup holds).
// Errors: those of a forwarded proposal (outcome.ErrUnavailable, outcome.ErrUnknown).
func (h *Host) ProposeOn(ctx context.Context, id int, hd meta.Header, b meta.Body) (meta.Result, error) {
	return h.leaders.propose(ctx, id, hd, b)
}

// SnapshotAt returns a copy of shard id's state from this node's replica once it has
// applied version (a version's content never changes, so any replica serves it).
// Errors: shard.ErrNotLeader wrapped when this node holds no replica of the shard,
// shard.ErrBehind when the replica has not applied version within ctx (at most 2 s).
func (h *Host) SnapshotAt(ctx context.Context, id int, version uint64) (*meta.Snapshot, error) {
	r := h.Replica(id)
	if r == nil {
		return nil, fmt.Errorf("%w: no replica of shard %d on this node", shard.ErrNotLeader, id)
	}
	if _, err := r.ReadViewAt(ctx, version); err != nil {
		return nil, err
	}
	return r.FSM().Snapshot(), nil
}

// ControlPlane returns the etcd control plane of a cluster node (nil on the embedded
// default).
func (h *Host) ControlPlane() *control.Plane {
	if h.cluster == nil {
		return nil
	}
	return h.cfg.Cluster.Plane
}
