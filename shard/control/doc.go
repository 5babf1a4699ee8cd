// Package control is Cairn's control plane in etcd (docs/architecture.md#replication-and-placement): the node registry,
// the cluster's fixed settings, shard → replica set records, root → shard placement,
// advisory leader hints, and the elected controller that assigns replicas to shards.
//
// Key layout, under Config.Prefix (default "/cairn"):
//
//	<prefix>/cluster            {"id","shards","initial_shards","replication","created_at"}, created once;
//	                            its shard count grows (grow.go)
//	<prefix>/nodes/<node>       {"client_url","peer_addr","started_at"}, bound to the node's lease
//	<prefix>/shards/<shard>     {"voters":[...],"nonvoters":[...],"epoch":N}, written by the controller,
//	                            and by a recovery from a lost majority (RecoverRecord: epoch+1)
//	<prefix>/leaders/<shard>    {"node","term","updated_at"}, written by leaders, bound to their lease
//	<prefix>/roots/<root>       {"shard"}, created once; rewritten only by a move's switch (move.go)
//	<prefix>/moves/<id>         a root move (RootMove): root, source, target, step, started, …;
//	                            pruned by the controller once ended (move_prune.go)
//	<prefix>/moving/<root>      the id of the root's unfinished move (a lock StartMove takes)
//	<prefix>/backups/<id>       a cluster backup under way (a lock LockForBackup takes, bound
//	                            to its lease): no move starts while one exists (backup_lock.go)
//	<prefix>/load/<shard>       decimal count of roots placed on the shard; for a shard a grow
//	                            added, its presence opens the shard to placement
//	<prefix>/controller/<lease> the controller election (concurrency.Election), one key per candidate
//	<prefix>/rebalance          {"enabled","since"}, the operator's rebalance switch (absent: off)
//	<prefix>/node-instances/<node> the data directory instance the node id is bound to, once
//	<prefix>/leaving/<node>     RFC 3339 time of the request: the node is decommissioned (leaving.go)
//
// Shards are numbered 0..Shards-1 and written in decimal. Node ids are the Raft server
// ids: the UUID kept in each node's data directory.
//
// Invariants callers rely on:
//
//   - A root's placement is written once, by a transaction that succeeds only if the key
//     is absent, and changes only at a move's switch (MoveRun.Switch: one transaction,
//     only if it still names the source and the move record is at MoveFinished as read).
//     A cached answer goes stale only across a move: the watch follows it, and a shard
//     that no longer holds the root refuses its commands (NotOwner, RootMoving), after
//     which the node reads it again (Placement.Refresh).
//   - Placement picks a least-loaded open shard: the transaction also requires that no load
//     counter changed since it was read, so concurrent placements serialize on the counters.
//   - The cluster's shard count only grows, by GrowShards: one transaction conditional on
//     the record's revision and on the registry's, refused while a registered node publishes
//     a cluster version below GrowVersion. A node asking for a count that is neither the
//     count at creation nor the count now is a *MismatchError, never a silent change. A
//     shard a grow added takes no root until the controller opened it (its group has its
//     voters).
//   - Rebalance, like Plan, is a pure function: the same loads give the same moves. The
//     controller acts on it only while the switch is on, the cluster is settled (no
//     replica change planned, every open shard's load reported, no move under way), at
//     most once per RebalanceInterval, and leaves out for an hour a root whose latest move
//     rolled back for a lasting reason (RootMove.Lasting; rebalancer.go).
//   - The elected controller drives every unfinished move through its MoveDriver; each
//     step it writes (MoveRun.Step) is fenced like its other writes and conditional on
//     the move record's revision.
//   - A leaving mark is written only for a node id the cluster knows (registered, bound
//     to a data directory, or in a replica-set record): Decommission resolves a prefix of
//     exactly one such id to it and refuses an unknown id (ErrNodeNotFound) or an
//     ambiguous prefix before it writes (leaving.go).
//   - Every write the controller makes is fenced by its election key (its create revision
//     must be unchanged), so a deposed controller's late writes fail with ErrDeposed.
//   - Errors that mean "etcd cannot answer now" wrap ErrControlPlaneUnavailable and are
//     retryable; placed roots keep resolving from the cache while etcd is unreachable.
//   - The controller's decisions come from Plan, a pure function of what it observed; the
//     Raft side is reached only through ShardAdmin. The controller never removes a shard's
//     leader or its last voter, adds replicas as non-voters and promotes them only after
//     they caught up.
//
// The package never decides by itself that a node is gone: a node is gone when its
// registration has been absent for longer than ControllerConfig.Grace.
package control
