package shard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/cairnstore/cairn/meta"
)

// Ready reports whether this replica is the shard's ready leader: it applied its
// post-election barrier, and its newest passed leadership round (confirm.go) began less
// than a leader lease (Config.LeaderLeaseTimeout) ago: no sooner than raft itself would
// step down without a quorum, and at once after a pause of the process, until a round
// passes again. A deposed leader may look ready for at most that lease after its last
// round, which no read relies on (each read runs its own round). The single voter of a
// group is ready as soon as it caught up.
func (s *Shard) Ready() bool {
	if !s.caughtUp.Load() {
		return false
	}
	if s.soloVoter.Load() {
		return true // no other voter can lead: nothing to confirm against a clock
	}
	return s.monotonic()-time.Duration(s.confirmedAt.Load()) < s.cfg.LeaderLeaseTimeout
}

// WaitReady blocks until Ready or ctx ends.
func (s *Shard) WaitReady(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !s.Ready() {
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
			s.caughtUp.Store(false)
			s.publishReady()
			if !leader {
				continue
			}
			// Everything committed in earlier terms must be applied before this leader
			// answers reads: the barrier commits an entry of the new term and waits for it.
			// Its commit also confirms the leadership at the time it started.
			term, start := s.raft.CurrentTerm(), s.monotonic()
			if err := s.barrier(); err != nil {
				s.cfg.Logger.Warn("shard: barrier after election failed", "err", err)
				continue
			}
			if s.raft.State() == raft.Leader && s.raft.CurrentTerm() == term {
				s.leaderTerm.Store(term)
				// Whether this replica is the group's only voter is known before it reports
				// itself caught up, so a single voter never looks ready only for a lease.
				if f := s.raft.GetConfiguration(); f.Error() == nil {
					s.soloVoter.Store(onlyVoter(f.Configuration(), raft.ServerID(s.cfg.NodeID)))
				}
				s.caughtUp.Store(true)
				s.confirmed(start)
				// A first round now learns whether the group has other voters (soloVoter).
				ctx, cancel := context.WithTimeout(context.Background(), s.cfg.HeartbeatTimeout)
				_ = s.confirm.confirm(ctx)
				cancel()
			}
		}
	}
}

// keepLeadership runs a leadership round (shared with the reads in flight) four times per
// leader lease while this replica is the caught-up leader, so that Ready turns false
// within a lease of the leadership ending — a pause, a partition — and true
// again as soon as a round passes; it reports each change to Config.OnReady.
func (s *Shard) keepLeadership() {
	s.every(max(s.cfg.LeaderLeaseTimeout/4, time.Millisecond), func() {
		if s.caughtUp.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.HeartbeatTimeout)
			_ = s.confirm.confirm(ctx)
			cancel()
		}
		s.publishReady()
	})
}

// every calls fn every d until the replica closes. It runs as a goroutine counted in s.wg.
func (s *Shard) every(d time.Duration, fn func()) {
	defer s.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			fn()
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

// publishReady reports a change of Ready to Config.OnReady.
func (s *Shard) publishReady() {
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	ready := s.Ready()
	if ready == s.published {
		return
	}
	s.published = ready
	if s.cfg.OnReady != nil {
		s.cfg.OnReady(ready)
	}
}

func (s *Shard) tickLoop() {
	s.every(s.cfg.TickInterval/2, func() {
		if !s.caughtUp.Load() || time.Since(time.UnixMilli(s.lastApply.Load())) < s.cfg.TickInterval {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
		if _, err := s.Propose(ctx, meta.Header{}, meta.Tick{}); err != nil && !errors.Is(err, ErrClosed) {
			s.cfg.Logger.Debug("shard: idle tick failed", "err", err)
		}
		cancel()
	})
}
