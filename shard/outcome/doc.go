// Package outcome names what the caller of a shard replica may conclude from a failed call,
// independent of how the replica failed: the call was not served and nothing applied
// (ErrUnavailable), it may or may not apply (ErrUnknown), or the replica's disk is full and
// nothing applied (ErrStorageFull).
//
// It is the error contract between the replication layer and its callers (docs/architecture.md#packages):
// the shard package's errors match these values with errors.Is (shard.ErrNotLeader and
// shard.ErrClosed match ErrUnavailable, shard.ErrTimeout ErrUnknown, shard.ErrStorageFull
// ErrStorageFull), and the Workbench adapter declares them as its own core errors, so the
// surfaces classify a replica's failure without importing Raft.
//
// Invariants:
//
//   - The package imports nothing but the standard library, and only the errors package of
//     it: whoever may import shard may import this, and importing it pulls in no Raft
//     library, log store or bbolt.
//   - The three values are distinct and each says what a retry may do: an ErrUnavailable or
//     ErrStorageFull call applied nothing and may be retried as is (later, or at the
//     leader); an ErrUnknown call may still apply and is retried only with the same request
//     id (the FSM deduplicates it).
package outcome
