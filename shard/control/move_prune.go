package control

import (
	"context"
	"fmt"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Pruning ended moves: a move's record is what an operator reads (cairn admin root moves)
// and what the controller scans every moveScan, so ended records do not stay for ever. The
// leading controller deletes, at most once every movePruneEvery, every ended record older
// than ControllerConfig.MoveRetention, and the oldest ended records beyond
// MaxEndedMoves. An unfinished move is never pruned, nor a rolled-back one its sweep may
// still act on (MoveRetention is at least MoveSweepAfter+moveSweepWindow).

// DefaultMoveRetention is how long an ended move's record is kept by default.
const DefaultMoveRetention = 7 * 24 * time.Hour

// MaxEndedMoves is how many ended move records the controller keeps at most, newest first.
const MaxEndedMoves = 1000

// movePruneEvery is the least time between two prunes of one controller term.
const movePruneEvery = time.Minute

// movePruneBatch bounds the deletes of one pruning transaction (etcd refuses a transaction
// of more than --max-txn-ops, 128 by default, compares or operations).
const movePruneBatch = 50

// prunable returns the ended moves of moves (oldest first, as Plane.Moves lists them) to
// delete at now: those that ended more than retention ago, and the oldest beyond keep
// ended records. A rolled-back move within sweep of its end is kept whatever the count.
func prunable(moves []RootMove, now time.Time, retention, sweep time.Duration, keep int) []RootMove {
	var ended []RootMove
	for _, m := range moves {
		if m.Step.Ended() && m.Ended != nil {
			ended = append(ended, m)
		}
	}
	sort.SliceStable(ended, func(i, j int) bool { return ended[i].Ended.Before(*ended[j].Ended) })
	var out []RootMove
	for i, m := range ended {
		age := now.Sub(*m.Ended)
		if m.Step == MoveRolledBack && age < sweep {
			continue
		}
		if age > retention || len(ended)-i > keep {
			out = append(out, m)
		}
	}
	return out
}

// pruneMoves deletes the records prunable names, each only if unchanged since it was
// read, fenced by t. It returns how many it deleted.
func (c *Controller) pruneMoves(ctx context.Context, t *term, moves []RootMove, now time.Time) (int, error) {
	gone := prunable(moves, now, c.cfg.MoveRetention, c.cfg.MoveSweepAfter+moveSweepWindow, MaxEndedMoves)
	deleted := 0
	for len(gone) > 0 {
		batch := gone[:min(len(gone), movePruneBatch)]
		gone = gone[len(batch):]
		cmps := []clientv3.Cmp{t.fence()}
		ops := make([]clientv3.Op, 0, len(batch))
		for _, m := range batch {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(c.p.k.move(m.ID)), "=", m.Revision))
			ops = append(ops, clientv3.OpDelete(c.p.k.move(m.ID)))
		}
		var resp *clientv3.TxnResponse
		err := c.p.withTimeout(ctx, "prune moves", func(ctx context.Context) (err error) {
			resp, err = c.p.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
			return err
		})
		if err != nil {
			return deleted, err
		}
		if !resp.Succeeded {
			// Deposed, or a record changed under us: the next prune reads them again.
			return deleted, fmt.Errorf("prune moves: %w", ErrConflict)
		}
		deleted += len(batch)
	}
	return deleted, nil
}
