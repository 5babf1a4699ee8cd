package workbench

import "github.com/cairnstore/cairn/shard/outcome"

// Errors of the core (Core, Cores) that the adapter acts on: all it needs to know of the
// replication layer, so it does not depend on Raft (docs/architecture.md#packages). They are package
// outcome's values; the shard package's errors match them with errors.Is (shard.ErrNotLeader
// and shard.ErrClosed match ErrCoreUnavailable, shard.ErrTimeout ErrOutcomeUnknown,
// shard.ErrStorageFull ErrCoreStorageFull), and so must the errors of any other Core or
// Cores, such as a router's.
var (
	// ErrCoreUnavailable: the core did not serve the call (not the leader of the root's
	// shard, or shut down) and nothing applied. The caller sees a retryable
	// RoutingUnavailable.
	ErrCoreUnavailable = outcome.ErrUnavailable
	// ErrOutcomeUnknown: the command was not known to be committed in time and may still
	// apply. The caller sees a retryable Internal error that says to retry with the same
	// idempotency key.
	ErrOutcomeUnknown = outcome.ErrUnknown
	// ErrCoreStorageFull: the disk under the core's log is full and nothing applied. The
	// caller sees ResourceExhausted naming the Raft log.
	ErrCoreStorageFull = outcome.ErrStorageFull
)
