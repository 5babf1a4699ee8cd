package control

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// endedMove is a move record of step that ended at ended (nil for an unfinished step).
func endedMove(id string, step MoveStep, ended time.Time) RootMove {
	m := RootMove{ID: id, Root: "r-" + id, Step: step, Started: ended.Add(-time.Second)}
	if step.Ended() {
		m.Ended = &ended
	}
	return m
}

// TestPrunableKeepsWhatAnOperatorOrASweepStillNeeds: over random sets of moves, prunable
// never names an unfinished move or a rolled-back one within its sweep; it names every
// other ended move older than the retention, and keeps at most keep ended moves beyond
// those, the newest.
func TestPrunableKeepsWhatAnOperatorOrASweepStillNeeds(t *testing.T) {
	const retention, sweep = 10 * time.Hour, time.Hour
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	steps := []MoveStep{MoveDone, MoveRolledBack, MoveRequested, MoveFenced, MoveSwitched, MoveRollingBack}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		keep := 1 + r.IntN(8)
		var moves []RootMove
		for i := range r.IntN(30) {
			age := time.Duration(r.Int64N(int64(2 * retention)))
			moves = append(moves, endedMove(fmt.Sprint(i), steps[r.IntN(len(steps))], now.Add(-age)))
		}
		gone := map[string]bool{}
		for _, m := range prunable(moves, now, retention, sweep, keep) {
			gone[m.ID] = true
		}
		kept := 0
		for _, m := range moves {
			switch {
			case !m.Step.Ended():
				if gone[m.ID] {
					t.Fatalf("seed %d: an unfinished move %+v pruned", seed, m)
				}
				continue
			case m.Step == MoveRolledBack && now.Sub(*m.Ended) < sweep:
				if gone[m.ID] {
					t.Fatalf("seed %d: a rolled-back move within its sweep pruned: %+v", seed, m)
				}
				continue
			case now.Sub(*m.Ended) > retention && !gone[m.ID]:
				t.Fatalf("seed %d: a move past the retention kept: %+v", seed, m)
			}
			if !gone[m.ID] {
				kept++
				for _, o := range moves { // nothing newer of the same kind was pruned
					if gone[o.ID] && o.Ended.After(*m.Ended) && now.Sub(*o.Ended) <= retention {
						t.Fatalf("seed %d: %+v pruned while the older %+v was kept", seed, o, m)
					}
				}
			}
		}
		if kept > keep {
			t.Fatalf("seed %d: %d prunable ended moves kept, at most %d", seed, kept, keep)
		}
	}
}

// blockedMover never finishes a move: it holds each until its context ends.
type blockedMover struct{}

func (blockedMover) DriveMove(ctx context.Context, _ *MoveRun) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestTheControllerPrunesEndedMoves: the leading controller deletes the record of a move
// that ended longer ago than its retention, and keeps a recent one and an unfinished one.
func TestTheControllerPrunesEndedMoves(t *testing.T) {
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: 2, Replication: 1}, 60*time.Second)
	now := time.Now()
	records := []RootMove{
		endedMove("old-done", MoveDone, now.Add(-3*time.Hour)),
		endedMove("old-rolled-back", MoveRolledBack, now.Add(-3*time.Hour)),
		endedMove("recent", MoveDone, now.Add(-time.Minute)),
		endedMove("unfinished", MoveFenced, now.Add(-3*time.Hour)),
	}
	for _, m := range records {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.cli.Put(ctx, p.k.move(m.ID), string(b)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := controllerConfig("c1")
	cfg.Mover = blockedMover{}
	cfg.MoveRetention = time.Hour
	cfg.MoveSweepAfter = time.Second
	c, err := p.NewController(newFakeAdmin(10), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runController(t, c)
	retry.Within(t, 30*time.Second, "the old records go", func() error {
		moves, err := p.Moves(ctx)
		if err != nil {
			return err
		}
		ids := map[string]bool{}
		for _, m := range moves {
			ids[m.ID] = true
		}
		if !ids["recent"] || !ids["unfinished"] {
			return fmt.Errorf("%w: records %v", retry.ErrStop, ids)
		}
		if len(ids) != 2 {
			return fmt.Errorf("records %v", ids)
		}
		return nil
	})
	if _, err := p.GetMove(ctx, "old-done"); err == nil {
		t.Fatal("a pruned move still answers")
	}
}
