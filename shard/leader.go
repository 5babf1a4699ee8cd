package shard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/cairnstore/cairn/meta"
)

// Ready reports whether this replica is a leader that has caught up (serves writes and
// linearizable reads).
func (s *Shard) Ready() bool { return s.ready.Load() }

// WaitReady blocks until Ready or ctx ends.
func (s *Shard) WaitReady(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !s.ready.Load() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("shard: not ready: %w", ctx.Err())
		case <-s.stop:
			return ErrClosed
		case <-t.C:
		}
	}
	return nil
}

func (s *Shard) watchLeadership() {
	defer s.wg.Done()
	ch := s.raft.LeaderCh()
	for {
		select {
		case <-s.stop:
			return
		case leader := <-ch:
			s.setReady(false)
			if !leader {
				continue
			}
			// Everything committed in earlier terms must be applied before this leader
			// answers reads: the barrier commits an entry of the new term and waits for it.
			if err := s.barrier(); err != nil {
				s.cfg.Logger.Warn("shard: barrier after election failed", "err", err)
				continue
			}
			if s.raft.State() == raft.Leader {
				s.setReady(true)
			}
		}
	}
}

// barrier commits an entry of the current term and waits until it is applied, or until
// the replica closes: raft may never answer a barrier still queued when its leader shuts
// down (as with Propose), and Close waits for this goroutine.
func (s *Shard) barrier() error {
	f := s.raft.Barrier(s.cfg.ApplyTimeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-s.stop:
		return ErrClosed
	}
}

// setReady records the replica's readiness and reports a change to Config.OnReady.
func (s *Shard) setReady(ready bool) {
	if s.ready.Swap(ready) != ready && s.cfg.OnReady != nil {
		s.cfg.OnReady(ready)
	}
}

func (s *Shard) tickLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.TickInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if !s.ready.Load() || time.Since(time.UnixMilli(s.lastApply.Load())) < s.cfg.TickInterval {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			if _, err := s.Propose(ctx, meta.Header{}, meta.Tick{}); err != nil && !errors.Is(err, ErrClosed) {
				s.cfg.Logger.Debug("shard: idle tick failed", "err", err)
			}
			cancel()
		}
	}
}
