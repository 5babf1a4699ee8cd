package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Rebalancing (docs/architecture.md, "Rebalance decision"). The switch is a durable etcd
// key (<prefix>/rebalance; absent: off), so every controller that wins the election reads
// the operator's last word. While it is on, the elected controller runs a round at most
// every RebalanceInterval, and only when the cluster is settled: its reconcile planned
// nothing, every open shard's leader answered with its load, and no root move is under
// way. A round asks Rebalance (a pure function) for a few moves and starts each through
// its rebalanceMover; it never waits for one.

// rebalanceMover starts the root moves the rebalancer decides.
type rebalanceMover interface {
	// Moving returns how many root moves are recorded and not yet finished (an error:
	// unknown, the round is skipped), and the roots a round leaves alone: those whose
	// latest move rolled back less than unmovableFor before now for a lasting reason
	// (RootMove.Lasting).
	Moving(ctx context.Context, now time.Time) (int, map[string]bool, error)
	// Start records the move of m.Root from shard m.From to shard m.To and starts it,
	// fenced by the controller's fence (ShardAdmin); it returns once the move is recorded,
	// not when it ends. A root no longer on m.From is refused, and moves nothing.
	Start(ctx context.Context, fence int64, m Move) error
}

// planeMover starts a round's moves as an operator's are (Plane.StartMove): recorded in
// etcd, then driven by the elected controller (move_drive.go). A move recorded meanwhile
// by an operator for the same root refuses the round's (ErrMoveInProgress).
type planeMover struct{ p *Plane }

func (m planeMover) Moving(ctx context.Context, now time.Time) (int, map[string]bool, error) {
	moves, err := m.p.Moves(ctx)
	n := 0
	latest := map[string]RootMove{}
	for _, mv := range moves {
		if !mv.Step.Ended() {
			n++
		}
		if l, ok := latest[mv.Root]; !ok || mv.Started.After(l.Started) {
			latest[mv.Root] = mv
		}
	}
	unmovable := map[string]bool{}
	for root, mv := range latest {
		if mv.Lasting && mv.Step == MoveRolledBack && mv.Ended != nil && now.Sub(*mv.Ended) < unmovableFor {
			unmovable[root] = true
		}
	}
	return n, unmovable, err
}

// unmovableFor is how long the rebalancer leaves a root alone after its move rolled back
// for a lasting reason (a record larger than a move chunk while a node runs a release
// that cannot import it in parts): moving it again at every round would fail the same
// way and keep the shard as hot, while another root of the shard can move.
const unmovableFor = time.Hour

func (m planeMover) Start(ctx context.Context, _ int64, mv Move) error {
	_, err := m.p.StartMove(ctx, mv.Root, mv.To, time.Now())
	return err
}

// DefaultRebalanceInterval is the least time between two rebalance rounds: the length of
// the window a leader measures its write rate over (shard.LoadWindow), so that a round
// sees the load after the previous round's moves.
const DefaultRebalanceInterval = time.Minute

// RebalanceSwitch is the operator's switch of the rebalancer.
type RebalanceSwitch struct {
	Enabled bool `json:"enabled"`
	// Since is when it was last set (zero when it never was: off).
	Since time.Time `json:"since"`
}

// RebalanceSwitch reads the switch; never set, it is off. Errors wrap
// ErrControlPlaneUnavailable.
func (p *Plane) RebalanceSwitch(ctx context.Context) (RebalanceSwitch, error) {
	resp, err := p.get(ctx, "read the rebalance switch", p.k.rebalance())
	if err != nil || len(resp.Kvs) == 0 {
		return RebalanceSwitch{}, err
	}
	var s RebalanceSwitch
	if err := json.Unmarshal(resp.Kvs[0].Value, &s); err != nil {
		return RebalanceSwitch{}, fmt.Errorf("control: the rebalance switch in etcd is damaged: %w", err)
	}
	return s, nil
}

// SetRebalanceSwitch turns the rebalancer on or off, at now. A round already started
// finishes starting its moves; moves under way go on (cairn admin root moves shows them).
func (p *Plane) SetRebalanceSwitch(ctx context.Context, enabled bool, now time.Time) (RebalanceSwitch, error) {
	s := RebalanceSwitch{Enabled: enabled, Since: now.UTC().Truncate(time.Millisecond)}
	b, err := json.Marshal(s)
	if err != nil {
		return RebalanceSwitch{}, err
	}
	return s, p.withTimeout(ctx, "set the rebalance switch", func(ctx context.Context) error {
		_, err := p.cli.Put(ctx, p.k.rebalance(), string(b))
		return err
	})
}

// rebalanceRound runs one rebalance round when it is due (see above); a skipped round
// says why at debug level, a failed start at warn. It returns ErrDeposed when the fence
// fails.
func (c *Controller) rebalanceRound(ctx context.Context, t *term, shards int, status map[int]ShardStatus, closed map[int]bool) error {
	if c.mover == nil || time.Since(c.lastRebalance) < c.cfg.RebalanceInterval {
		return nil
	}
	sw, err := c.p.RebalanceSwitch(ctx)
	if err != nil || !sw.Enabled {
		return nil
	}
	loads, why := rebalanceLoads(shards, status, closed)
	if why != "" {
		c.log.Debug("control: rebalance round skipped", "reason", why)
		return nil
	}
	n, unmovable, err := c.mover.Moving(ctx, time.Now())
	if err != nil || n > 0 {
		c.log.Debug("control: rebalance round skipped", "reason", "moves under way or unknown", "moving", n, "err", err)
		return nil
	}
	for i := range loads {
		loads[i].Candidates = slices.DeleteFunc(slices.Clone(loads[i].Candidates), func(r RootLoad) bool { return unmovable[r.Root] })
	}
	c.lastRebalance = time.Now()
	for _, m := range Rebalance(loads, c.cfg.Rebalance) {
		if err := c.checkFence(ctx, t); err != nil {
			return err
		}
		c.log.Info("control: rebalance", "root", m.Root, "from", m.From, "to", m.To)
		if err := c.mover.Start(ctx, t.rev, m); err != nil {
			if errors.Is(err, ErrDeposed) {
				return err
			}
			c.log.Warn("control: rebalance move not started", "root", m.Root, "from", m.From, "to", m.To, "err", err)
		}
	}
	return nil
}

// rebalanceLoads are the loads of the open shards of status, or why a round cannot be
// decided: a shard whose leader did not answer with its load would look empty.
func rebalanceLoads(shards int, status map[int]ShardStatus, closed map[int]bool) ([]ShardLoad, string) {
	var loads []ShardLoad
	for id := range shards {
		if closed[id] {
			continue
		}
		st, ok := status[id]
		if !ok || st.Load == nil {
			return nil, fmt.Sprintf("shard %d reported no load", id)
		}
		l := *st.Load
		l.Shard = id
		loads = append(loads, l)
	}
	return loads, ""
}
