package host

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
)

// Shards are the shards of the node's cluster addressed by number rather than through an
// agent root, for the node-wide operations that act on every shard (a backup places its
// hold on each shard's leader and reads each shard's state from this node's replica).
// It holds the leader calls that propose on a shard, the replicas it reads and the
// cluster state that knows the shard count; it places no root and routes none.
type Shards struct {
	cluster  *clusterState // nil on the embedded default: its one shard is EmbeddedShard
	leaders  *leaderCalls
	replicas *replicaSet
}

// Shards returns the host's shards by number.
func (h *Host) Shards() *Shards { return h.shards }

// IDs returns the shards of the node's cluster, in id order: the embedded default's one
// shard, or 0..Shards-1 of a cluster.
func (s *Shards) IDs() []int {
	if s.cluster == nil {
		return []int{EmbeddedShard}
	}
	ids := make([]int, s.cluster.current().Shards)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// Propose proposes b on shard id's leader (forwarded over the peer port when another node
// leads), for commands that belong to a shard rather than a root (backup holds). Errors:
// those of a forwarded proposal (outcome.ErrUnavailable, outcome.ErrUnknown).
func (s *Shards) Propose(ctx context.Context, id int, hd meta.Header, b meta.Body) (meta.Result, error) {
	return s.leaders.propose(ctx, id, hd, b)
}

// ReadView returns a linearizable view of shard id from this node's replica: every
// command acknowledged before the call is in it. On the ready leader it confirms its
// leadership; on a follower it asks the leader for a read index and waits (at most 2 s)
// until its replica has applied that far. Admin reads of a shard's own records (backup
// holds) use it: a follower's applied view may still show what an acknowledged command
// changed. Errors: shard.ErrNotLeader wrapped when no leader answers or this node holds
// no replica of the shard, shard.ErrBehind when the replica is too far behind.
func (s *Shards) ReadView(ctx context.Context, id int) (*meta.View, error) {
	return s.leaders.readView(ctx, id)
}

// SnapshotAt returns a copy of shard id's state from this node's replica once it has
// applied version (a version's content never changes, so any replica serves it).
// Errors: shard.ErrNotLeader wrapped when this node holds no replica of the shard,
// shard.ErrBehind when the replica has not applied version within ctx (at most 2 s).
func (s *Shards) SnapshotAt(ctx context.Context, id int, version uint64) (*meta.Snapshot, error) {
	r := s.replicas.get(id)
	if r == nil {
		return nil, fmt.Errorf("%w: no replica of shard %d on this node", shard.ErrNotLeader, id)
	}
	if _, err := r.ReadViewAt(ctx, version); err != nil {
		return nil, err
	}
	return r.FSM().Snapshot(), nil
}
