// Package host hosts a node's replicas (docs/architecture.md#packages,
// #replication-and-placement): it opens the replica of every
// shard placed on this node, routes an agent root to its shard and that shard's leader,
// forwards metadata commands and read-index requests to the leader over the peer port,
// serves the node-to-node API (the controller's shard administration, replica figures,
// forwarded commands, a move's export), publishes leader hints, reports each replica's
// leadership to the leader-only workers, and drives the moves of roots between shards for
// the controller (move.go).
//
// Host holds the parts, each built once with it and holding only what it uses: the local
// replicas (replicaSet, replicas.go); the calls on a shard's leader, here or over the peer
// port, behind the cluster-version gate (leaderCalls, leader.go, versions.go); a cluster
// node's state from etcd and the leader hints it publishes (clusterState, cluster.go); the
// moves of roots and the rebalance switch (Mover, move.go, move_export.go, rebalance.go);
// the recovery of a shard that lost a majority (Recovery, recover.go); the shards by
// number, for node-wide operations such as a backup (Shards, shards.go). Host.Mover,
// Host.Recovery and Host.Shards return the exported ones.
//
// The embedded default is a Host with one fixed shard (0), a single voter on an in-memory
// transport and a static placement (Static); a cluster node is a Host whose placement,
// replica sets, registry and leader hints live in etcd (shard/control). Both answer
// through the same Core, so the surfaces above are wired once.
//
// Invariants:
//
//   - The host never carries a body: a write's segments are uploaded by the node that
//     received it (workbench) before the command that references them is proposed;
//     only the command (with its inline bytes) crosses the peer port. Reads are served
//     from this node's replica: a linearizable read asks the leader for a read index
//     (shard.ReadIndex) and waits until the local replica applied that far; a read at a
//     snapshot id needs no leader at all (ReadViewAt).
//   - A command is proposed at most once per call, but for one its shard refused because
//     its root was fenced for a move (which changed nothing): it is proposed again on the
//     same shard once the fence lifts, and never sent to another shard as it is
//     (move_route.go). A call that failed before the leader
//     could have applied it (no leader, not the leader, shut down) answers an error
//     matching outcome.ErrUnavailable and may be retried anywhere; one that may have
//     applied (the leader was reached and then lost) answers outcome.ErrUnknown, retried
//     only with the same request id.
//   - A request forwarded to another node (HTTP, for a node without a replica of the
//     root's shard) is never forwarded again: the receiving node serves it from its own
//     replica or answers a retryable error.
//   - A read never places a root: a root that was never placed reads as empty, and is
//     placed (etcd) by its first write. A root its caller may not use is read as one
//     never placed (ForHidden), after the same placement lookup: its shard is not read.
//   - Every wait on etcd or a peer has a deadline and ends in a retryable error.
//   - A shard that lost a majority of its voters is recovered on a survivor only
//     (Recovery.Recover): never while it has a leader or a majority of registered voters. A
//     replica directory older than its shard's recovery epoch is moved aside, never
//     opened: its log is of the group before the recovery.
//   - A move's copy reads one view of the source, kept by the source's leader; a leader
//     without it answers that it is lost, and the move rolls back. Before the placement
//     switch a move only rolls back; after it, it only goes forward.
//   - The host never imports api: it knows roots by name, commands as meta values, and
//     HTTP only as the forwarding transport.
package host
