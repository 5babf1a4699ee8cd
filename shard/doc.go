// Package shard replicates the metadata core: one hashicorp/raft group per shard, whose
// FSM is a meta.FSM, with a durable log (raft-wal) and file snapshots (zstd-compressed
// streams of the FSM's records).
//
// Invariants callers rely on:
//
//   - Propose returns only after the command is committed and applied: an acknowledged
//     write survives a crash of the process (the log is fsync'd before the leader counts
//     its own vote).
//   - ReadView is linearizable: it serves only from a leader that has applied everything
//     committed in earlier terms (a barrier after every election) and that still holds
//     leadership when the read starts (VerifyLeader, one round shared by concurrent reads).
//   - The leader stamps every command with its wall clock; the FSM never reads a clock.
//   - Errors that mean "try again or elsewhere" are typed (ErrNotLeader, ErrTimeout) and
//     retryable; ErrTimeout means the outcome is unknown.
//
// This slice runs one shard with a single voter on an in-memory transport; the
// multiplexed network transport, etcd placement and routing arrive with the cluster.
package shard
