package outcome

import "errors"

var (
	// ErrUnavailable: the replica did not serve the call (it is not the leader, has not
	// caught up yet, or is shut down); nothing applied. Retryable, later or at the leader.
	ErrUnavailable = errors.New("replica unavailable")
	// ErrUnknown: the call was not known to be committed in time; it may still apply.
	// Retryable with the same request id.
	ErrUnknown = errors.New("outcome unknown")
	// ErrStorageFull: the disk under the replica's log is full; nothing applied. Retryable
	// once space is freed.
	ErrStorageFull = errors.New("replica storage full")
)
