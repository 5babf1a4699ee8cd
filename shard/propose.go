package shard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/cairnstore/cairn/meta"
)

// Propose stamps the command with the leader's clock, replicates it, and returns the FSM's
// result once applied. Errors: ErrNotLeader, ErrTimeout (outcome unknown), ErrClosed, or an
// encoding error (*meta.Error, InvalidArguments) for a command too large.
func (s *Shard) Propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error) {
	h.TimeMs = s.cfg.Clock().UnixMilli()
	data, err := meta.EncodeCommand(h, b)
	if err != nil {
		return meta.Result{}, err
	}
	timeout := s.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return meta.Result{}, ErrTimeout
		}
	}
	if free, full := s.disk.full(); full {
		return meta.Result{}, s.disk.storageFull(free)
	}
	s.lastApply.Store(time.Now().UnixMilli())
	// hashicorp/raft accepts an Apply after Shutdown into its buffered apply channel and
	// never answers it, so proposals and Close exclude each other while enqueueing.
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return meta.Result{}, ErrClosed
	}
	start := time.Now()
	f := s.raft.Apply(data, timeout)
	s.closeMu.RUnlock()
	if err := awaitEntry(ctx, f, timeout); err != nil {
		return meta.Result{}, err
	}
	s.cfg.Metrics.since(timingPropose, start)
	res, ok := f.Response().(meta.Result)
	if !ok {
		return meta.Result{}, fmt.Errorf("shard: unexpected FSM response %T", f.Response())
	}
	s.countApplied(b)
	return res, nil
}

// awaitEntry waits for f, the future of an entry handed to raft (a command or a
// membership change), for at most timeout or until ctx ends. hashicorp/raft's timeout
// covers only the enqueue: an entry a leader enqueued just before it shut down, or lost
// leadership, may never be answered, so the wait is bounded here (ErrTimeout: the outcome
// is unknown); the waiter ends when raft answers or shuts down. An entry raft wrote to
// its log (it has an index) and then answered with ErrRaftShutdown is ErrTimeout too:
// hashicorp/raft also answers a committed entry so (raft.go, processLogs), which then
// applies after a restart or on the next leader. Only a refusal before the log is
// ErrClosed.
func awaitEntry(ctx context.Context, f raft.IndexFuture, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	select {
	case err := <-done:
		switch {
		case err == nil:
			return nil
		case errors.Is(err, raft.ErrRaftShutdown) && f.Index() != 0:
			return fmt.Errorf("%w (%v after it was written at index %d)", ErrTimeout, err, f.Index())
		}
		return mapRaftError(err)
	case <-ctx.Done():
		return ErrTimeout
	case <-wait.C:
		return ErrTimeout
	}
}

func mapRaftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w (%v)", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost):
		// Deposed after the entry went out: a majority may hold it, and the next leader
		// then commits it. The outcome is unknown, not a refusal.
		return fmt.Errorf("%w (%v)", ErrTimeout, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return ErrTimeout
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	case isNoSpace(err):
		return fmt.Errorf("%w (%v)", ErrStorageFull, err)
	}
	return fmt.Errorf("shard: %w", err)
}
