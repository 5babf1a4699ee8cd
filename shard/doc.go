// Package shard replicates the metadata core: one hashicorp/raft group per shard, whose
// FSM is a meta.FSM, with a durable log (one bbolt file, Dir/raft.db, in
// hashicorp/raft-boltdb's layout: logstore.go, boltlog.go; a raft-wal log left by an earlier build is moved into
// it once at Open) and file snapshots (zstd-compressed streams of the FSM's records).
//
// A replica runs embedded (the default: a single voter on an in-memory transport) or in
// cluster mode (Config.Peer): its Raft traffic then travels over one stream of the node's
// shard/mux port, shared by all the shards the node hosts (docs/architecture.md#replication-and-placement). A cluster group
// is bootstrapped once with its initial voters; later replicas start empty, are added by
// the leader as non-voters and promoted once they caught up.
//
// Invariants callers rely on:
//
//   - Propose returns only after the command is committed and applied: an acknowledged
//     write survives a crash of the process and, in a group, the loss of any minority of
//     its voters (the log is fsync'd on a majority before the leader counts it committed).
//   - ReadView is linearizable: it serves only from a leader that has applied everything
//     committed in earlier terms (a barrier after every election, in the term it leads)
//     and that a majority of voters confirmed in that term after the read began: a
//     heartbeat round of its own, shared by concurrent reads (a single voter's needs no
//     heartbeat and runs in the read itself), counting only answers to heartbeats sent
//     after the round began (confirm.go states the argument; hashicorp/
//     raft's VerifyLeader is not used: it counts answers to heartbeats sent before a pause
//     as votes for a check begun after it), and whose FSM has then applied every command
//     committed when the read began (read.go, catchUp: a follower may apply a committed
//     entry before the leader's FSM does, and serve it). No clock is part of the
//     argument. Anywhere else it answers ErrNotLeader; it never serves a stale view, nor
//     one older than any replica's view served before the read began. ReadIndex is the same
//     check answering the leader's applied version, for a follower's read (shard/host
//     batches those calls: one per batch of concurrent follower reads).
//   - Ready is true only on the caught-up leader whose newest leadership round began less
//     than a leader lease ago (a background round runs four times per lease): false at
//     once after a pause of the process, and on a voter's answer in a newer term.
//   - ReadViewAt(v) serves shard version v on any replica that has applied it: a version's
//     content never changes, so no leader is needed.
//   - The leader stamps every command with its wall clock; the FSM never reads a clock.
//   - Errors that mean "try again or elsewhere" are typed (ErrNotLeader, ErrTimeout,
//     ErrBehind) and retryable; ErrTimeout means the outcome is unknown (including a
//     leader deposed, or a replica closed, while the command was in flight). Each error a caller acts on also
//     matches, with errors.Is, the outcome it implies in package shard/outcome
//     (ErrNotLeader, ErrClosed and ErrBehind: outcome.ErrUnavailable; ErrTimeout:
//     outcome.ErrUnknown; ErrStorageFull: outcome.ErrStorageFull), so the surfaces
//     classify it without importing this package and Raft with it.
//   - A proposal is refused with ErrStorageFull, before it reaches the log, while the disk
//     under the replica's directory has less than Config.MinFreeBytes free; a log write
//     that still hits ENOSPC maps to it too.
//   - A replica directory is locked while open (ErrLocked) and bound to the Raft server id
//     that created it (ErrIdentity): copied state never starts under a second identity.
//   - Storage is verified before Raft starts (logcheck.go): every log entry this build
//     writes carries a CRC-32C, checked on every read and, for the whole log, at Open
//     (entries of builds that wrote none stay readable); the newest snapshot's CRC-64
//     (raft's FileSnapshotStore) is checked at Open, and the log must continue where it
//     ends. Damage — a truncated or changed raft.db, a changed snapshot — is a
//     *DamagedError (ErrDamaged) naming the file and what to do, never a panic of bbolt
//     (recovered, with memory faults, while the file is checked), a start on an older
//     snapshot, or a damaged command applied as if it were good.
//   - A replica that opens with more log entries past its newest snapshot than
//     Config.SnapshotThreshold snapshots once it has applied them (replay.go), instead
//     of at Raft's next periodic check, which a node killed often may never reach.
//   - Membership changes (AddNonvoter, PromoteToVoter, RemoveServer) and TransferLeadership
//     run on the leader only and return once committed (or handed over). A change, like a
//     proposal, waits at most its context's deadline (else Config.ApplyTimeout), and one
//     raft wrote to its log before it failed or shut down is ErrTimeout (it may still
//     commit), never ErrClosed (awaitEntry).
//
// Observability: Stats carries a replica's Raft figures (role, term, indexes, log size,
// elections and leaders it saw, snapshot installs), counted from raft's observer and the
// log store; Config.Metrics (Metrics.Replica) receives its latencies (proposal, FSM apply,
// snapshot install and persist), labelled by shard id only. shard/host exports both.
//
// The etcd control plane (placement, replica sets, leader hints, the controller) is
// shard/control; the replicas of a node, routing a root to its shard's leader and
// forwarding commands and requests there are shard/host's; the leader-only workers are
// shard/worker's. This package never decides which node should hold a replica.
package shard
