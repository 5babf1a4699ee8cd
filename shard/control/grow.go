package control

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Adding shards to a running cluster (docs/runbook.md, "Add shards"). The walk:
//
//  1. GrowShards raises the cluster record's shard count in one etcd transaction,
//     conditional on the record's mod revision (no concurrent grow is lost) and on no node
//     having registered since the registry was read, once every registered node runs a
//     binary of at least GrowVersion; the count at creation is kept in InitialShards.
//  2. Every node follows the record (WatchCluster): its placement accepts roots on the new
//     shards, its controller candidate plans them.
//  3. The controller bootstraps each new shard's Raft group on the least-loaded live node
//     and brings it to the replication factor (Plan, the same rules as a shard of the
//     creation); a new shard is closed to placement until then.
//  4. Once the shard's leader reports Replication live voters, the controller opens it
//     (ActionOpen; a node down keeps it closed): it creates the shard's load counter,
//     which is what placement reads as "open". The new shards hold no root, so
//     least-loaded placement fills them first.
//
// A node of a release before GrowVersion reads the shard count once, at start: it would
// refuse every root placed on a shard added after, so the grow waits for it to be
// upgraded. Such a node that starts later reads the grown count (or refuses to start when
// its --shards names another count than the current one).

// GrowVersion is the cluster version (meta.ClusterVersion, published in NodeInfo) a node's
// binary must have before the shard count may grow: its nodes follow the cluster record
// instead of reading the count once at start.
const GrowVersion = 4

// Created returns the shard count the cluster was created with.
func (c Cluster) Created() int {
	if c.InitialShards > 0 {
		return c.InitialShards
	}
	return c.Shards
}

// growAttempts bounds how often GrowShards reads again after its transaction lost a race
// (a node registered, or another grow ran).
const growAttempts = 8

// GrowShards adds add shards to the cluster: the record's count becomes Shards+add in one
// transaction guarded by the record's mod revision and by the registry's (a node
// registering in between makes it read again). expect, when not 0, is the count the
// caller saw: the grow is refused with ErrShardCountChanged if the cluster has another, so
// a retried request never adds twice. It returns the record in force after the grow.
//
// Errors: ErrInvalidArgument (add < 1, or more than the maximum count); ErrClusterNotCreated;
// ErrShardCountChanged; *VersionError (ErrUpgradeInProgress) when a registered node runs a
// release older than GrowVersion; ErrConflict after growAttempts lost races;
// ErrControlPlaneUnavailable (retryable; the grow may have happened: read the count).
func (p *Plane) GrowShards(ctx context.Context, add, expect int) (Cluster, error) {
	if add < 1 {
		return Cluster{}, Refuse(ErrInvalidArgument, "shards to add must be at least 1, got %d", add)
	}
	for range growAttempts {
		var read *clientv3.TxnResponse
		err := p.withTimeout(ctx, "read cluster and registry", func(ctx context.Context) (err error) {
			read, err = p.cli.Txn(ctx).Then(clientv3.OpGet(p.k.cluster()),
				clientv3.OpGet(p.k.nodes(), clientv3.WithPrefix())).Commit()
			return err
		})
		if err != nil {
			return Cluster{}, err
		}
		kvs := read.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return Cluster{}, ErrClusterNotCreated
		}
		var c Cluster
		if err := json.Unmarshal(kvs[0].Value, &c); err != nil {
			return Cluster{}, fmt.Errorf("control: cluster metadata: %w", err)
		}
		if expect != 0 && expect != c.Shards {
			return c, Refuse(ErrShardCountChanged, "the cluster has %d shards, the request expected %d: read the count again", c.Shards, expect)
		}
		if c.Shards+add > MaxShards {
			return c, Refuse(ErrInvalidArgument, "%d shards plus %d is more than the maximum %d in total", c.Shards, add, MaxShards)
		}
		for _, kv := range read.Responses[1].GetResponseRange().Kvs {
			var n NodeInfo
			if json.Unmarshal(kv.Value, &n) != nil {
				continue
			}
			if v := max(1, n.ClusterVersion); v < GrowVersion {
				return c, &VersionError{Node: strings.TrimPrefix(string(kv.Key), p.k.nodes()), Version: v}
			}
		}
		next := c
		next.InitialShards = c.Created()
		next.Shards = c.Shards + add
		val, err := json.Marshal(next)
		if err != nil {
			return Cluster{}, err
		}
		var resp *clientv3.TxnResponse
		err = p.withTimeout(ctx, "grow the shard count", func(ctx context.Context) (err error) {
			resp, err = p.cli.Txn(ctx).If(
				clientv3.Compare(clientv3.ModRevision(p.k.cluster()), "=", kvs[0].ModRevision),
				clientv3.Compare(clientv3.ModRevision(p.k.nodes()), "<", read.Header.Revision+1).WithPrefix(),
			).Then(clientv3.OpPut(p.k.cluster(), string(val))).Commit()
			return err
		})
		if err != nil {
			return Cluster{}, err
		}
		if resp.Succeeded {
			p.cfg.Logger.Info("control: shard count grown", "from", c.Shards, "to", next.Shards)
			return next, nil
		}
	}
	return Cluster{}, fmt.Errorf("%w: grow the shard count: lost %d races with registrations or other grows", ErrConflict, growAttempts)
}

// WatchCluster delivers the cluster record now and after every change, until ctx ends (a
// slow reader gets the latest record). Nodes follow the shard count through it. The
// channel is closed when ctx ends.
func (p *Plane) WatchCluster(ctx context.Context) <-chan Cluster {
	key := p.k.cluster()
	src := watchMap(ctx, p, key, func(k string) (struct{}, bool) { return struct{}{}, k == key },
		func(val []byte, _ int64) (Cluster, bool) {
			var c Cluster
			return c, json.Unmarshal(val, &c) == nil && c.Shards > 0
		})
	out := make(chan Cluster, 1)
	go func() {
		defer close(out)
		for m := range src {
			c, ok := m[struct{}{}]
			if !ok {
				continue
			}
			select {
			case <-out:
			default:
			}
			out <- c
		}
	}()
	return out
}

// ClosedShards returns the shards of c added by a grow that are not open to placement
// yet: those at or past the count at creation without a load counter. A shard of the
// creation is always open.
func (p *Plane) ClosedShards(ctx context.Context, c Cluster) (map[int]bool, error) {
	closed := map[int]bool{}
	if c.Shards <= c.Created() {
		return closed, nil
	}
	resp, err := p.get(ctx, "read load counters", p.k.loads(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	for s := c.Created(); s < c.Shards; s++ {
		closed[s] = true
	}
	for _, kv := range resp.Kvs {
		if s, ok := shardOf(p.k.loads(), string(kv.Key)); ok {
			delete(closed, s)
		}
	}
	return closed, nil
}
