package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// MoveDriver carries out a root's move on the shards (shard/host's Mover implements it):
// the steps on the source and the target through their leaders, writing each one it
// reaches through run. It returns when the move ended (run.Move().Step.Ended()) or with
// the error that stopped it; the controller then drives the move again later, as a resume
// (run.Resumed), until it ends.
type MoveDriver interface {
	DriveMove(ctx context.Context, run *MoveRun) error
}

// MoveSweeper, when a MoveDriver implements it, undoes a rolled-back move once more,
// MoveSweepAfter after it ended: a deposed controller may have had a command of the move
// in flight (a fence) that landed after the next controller rolled the move back. It must
// touch only records of that move (the move commands are idempotent under its id).
type MoveSweeper interface {
	SweepMove(ctx context.Context, m RootMove) error
}

// moveSweepWindow is how long after its rollback a move is still swept (a controller
// elected later does not sweep old moves again).
const moveSweepWindow = 10 * time.Minute

// MoveRun is one controller term's hold on a move: the record as last written, and the
// fenced writes of its steps.
type MoveRun struct {
	c    *Controller
	t    *term
	move RootMove
	// Resumed: another controller term (or an earlier run of this one) drove the move
	// before, so whatever it held in memory (the export view) is gone.
	Resumed bool
}

// Move returns the record as last read or written.
func (r *MoveRun) Move() RootMove { return r.move }

// Fence is the controller term's fence (the ShardAdmin calls' fence).
func (r *MoveRun) Fence() int64 { return r.t.rev }

// Check returns ErrDeposed unless the controller still holds its election key: a driver
// checks it right before each command it proposes on a shard, so that a deposed
// controller does not fence a root, or import into a shard, after the next controller
// rolled the move back (its context also ends when its lease does).
func (r *MoveRun) Check(ctx context.Context) error { return r.c.checkFence(ctx, r.t) }

// Step writes the move's next step (and what set changes beside it) if the controller
// still holds its election key and the record is unchanged since it was read. A step
// that ends the move drops the root's move lock in the same transaction. Errors:
// ErrDeposed, ErrConflict, ErrControlPlaneUnavailable.
func (r *MoveRun) Step(ctx context.Context, step MoveStep, set func(*RootMove)) error {
	next := r.move
	next.Step, next.Updated, next.Driver = step, time.Now().UTC(), r.t.rev
	if set != nil {
		set(&next)
	}
	if step.Ended() && next.Ended == nil {
		at := next.Updated
		next.Ended = &at
	}
	val, err := json.Marshal(next)
	if err != nil {
		return err
	}
	p := r.c.p
	ops := []clientv3.Op{clientv3.OpPut(p.k.move(next.ID), string(val))}
	if step.Ended() {
		ops = append(ops, clientv3.OpDelete(p.k.moving(next.Root)))
	}
	rev, err := r.fencedTxn(ctx, "write move "+next.ID, nil, ops)
	if err != nil {
		return err
	}
	next.Revision = rev
	r.move = next
	r.c.log.Info("control: root move", "move", next.ID, "root", next.Root, "step", string(step), "reason", next.Reason)
	return nil
}

// Switch is the move's commit point: one transaction moves the root's placement from the
// source to the target, only if it still names the source and the move record is still
// at MoveFinished as read, and moves one root from the source's load counter to the
// target's. A counter another placement changed meanwhile is read again (switchAttempts).
// Errors: ErrDeposed, ErrConflict (the record or the placement changed), and
// ErrControlPlaneUnavailable (the switch may have happened: read the record).
func (r *MoveRun) Switch(ctx context.Context) error {
	m := r.move
	if m.Step != MoveFinished {
		return fmt.Errorf("%w: move %s is %s, not %s", ErrConflict, m.ID, m.Step, MoveFinished)
	}
	p := r.c.p
	from, _ := json.Marshal(rootRecord{Shard: m.Source})
	for range switchAttempts {
		err := r.switchOnce(ctx, string(from))
		if !errors.Is(err, ErrConflict) {
			return err
		}
		// Only a counter changed (placements of other roots) while the record and the
		// placement are as read: read the counters again.
		resp, gerr := p.get(ctx, "read move and placement", p.k.move(m.ID))
		if gerr != nil {
			return gerr
		}
		root, gerr := p.get(ctx, "read move and placement", p.k.root(m.Root))
		if gerr != nil {
			return gerr
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != m.Revision || len(root.Kvs) == 0 || string(root.Kvs[0].Value) != string(from) {
			return err
		}
	}
	return fmt.Errorf("%w: switch placement of %s: the load counters changed %d times", ErrConflict, m.Root, switchAttempts)
}

// switchAttempts bounds how often Switch reads the load counters again.
const switchAttempts = 16

func (r *MoveRun) switchOnce(ctx context.Context, from string) error {
	m := r.move
	p := r.c.p
	loads, err := p.get(ctx, "read load counters", p.k.loads(), clientv3.WithPrefix())
	if err != nil {
		return err
	}
	type counter struct{ n, rev int64 }
	count := map[string]counter{}
	for _, kv := range loads.Kvs {
		n, _ := strconv.ParseInt(string(kv.Value), 10, 64)
		count[string(kv.Key)] = counter{n, kv.ModRevision}
	}
	to, _ := json.Marshal(rootRecord{Shard: m.Target})
	next := m
	next.Step, next.Updated, next.Driver = MoveSwitched, time.Now().UTC(), r.t.rev
	val, err := json.Marshal(next)
	if err != nil {
		return err
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.Value(p.k.root(m.Root)), "=", from)}
	ops := []clientv3.Op{clientv3.OpPut(p.k.root(m.Root), string(to)), clientv3.OpPut(p.k.move(m.ID), string(val))}
	for _, s := range []int{m.Source, m.Target} {
		key := p.k.load(s)
		c, ok := count[key]
		switch {
		case !ok && s == m.Source:
			continue // a shard without a counter counts nothing
		case !ok:
			// A shard of the creation that never held a root has no counter yet (a
			// grown shard has one once opened, and a move targets only open shards):
			// the move creates it, as the shard's first placement would.
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
			ops = append(ops, clientv3.OpPut(key, "1"))
			continue
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", c.rev))
		n := c.n + 1
		if s == m.Source {
			n = max(0, c.n-1)
		}
		ops = append(ops, clientv3.OpPut(key, strconv.FormatInt(n, 10)))
	}
	rev, err := r.fencedTxn(ctx, "switch placement of "+m.Root, cmps, ops)
	if err != nil {
		return err
	}
	next.Revision = rev
	r.move = next
	r.c.log.Info("control: root move switched placement", "move", m.ID, "root", m.Root, "to", m.Target)
	return nil
}

// fencedTxn commits ops if the controller still holds its election key, the move record
// is unchanged since r.move was read, and cmps hold. It returns the revision written.
func (r *MoveRun) fencedTxn(ctx context.Context, op string, cmps []clientv3.Cmp, ops []clientv3.Op) (int64, error) {
	p := r.c.p
	all := append([]clientv3.Cmp{r.t.fence(), clientv3.Compare(clientv3.ModRevision(p.k.move(r.move.ID)), "=", r.move.Revision)}, cmps...)
	var resp *clientv3.TxnResponse
	err := p.withTimeout(ctx, op, func(ctx context.Context) (err error) {
		resp, err = p.cli.Txn(ctx).If(all...).Then(ops...).Else(clientv3.OpGet(r.t.key)).Commit()
		return err
	})
	if err != nil {
		return 0, err
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 || kvs[0].CreateRevision != r.t.rev {
		return 0, fmt.Errorf("%s: %w", op, ErrDeposed)
	}
	return 0, fmt.Errorf("%s: %w", op, ErrConflict)
}

// moveScan is how often the controller looks for moves to drive.
const moveScan = 250 * time.Millisecond

// maxConcurrentMoves bounds the moves one controller drives at once.
const maxConcurrentMoves = 4

// runMoves drives every unfinished move while the term lasts: each in a goroutine of its
// own, one at a time per move, started again (resumed) when it returned before the move
// ended. It returns once every drive it started has returned.
func (c *Controller) runMoves(ctx context.Context, t *term) {
	if c.cfg.Mover == nil {
		return
	}
	// The drives end with the term's lease, not only when lead notices it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(t.sess.Ctx(), cancel)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	running := map[string]bool{}
	driven := map[string]bool{} // moves this term drove before: a new drive resumes
	swept := map[string]bool{}  // rolled-back moves this term swept
	tick := time.NewTicker(moveScan)
	defer tick.Stop()
	var pruned time.Time
	for {
		moves, err := c.p.Moves(ctx)
		if err == nil && time.Since(pruned) >= movePruneEvery {
			pruned = time.Now()
			if n, err := c.pruneMoves(ctx, t, moves, pruned); err != nil {
				c.log.Warn("control: pruning ended moves", "deleted", n, "err", err)
			} else if n > 0 {
				c.log.Info("control: pruned ended moves", "deleted", n)
			}
		}
		if err == nil {
			for _, m := range moves {
				if sw, ok := c.cfg.Mover.(MoveSweeper); ok && m.Step == MoveRolledBack && !swept[m.ID] && m.Ended != nil {
					if age := time.Since(*m.Ended); age >= c.cfg.MoveSweepAfter && age < c.cfg.MoveSweepAfter+moveSweepWindow {
						if err := sw.SweepMove(ctx, m); err != nil {
							c.log.Warn("control: sweeping a rolled-back move", "move", m.ID, "err", err)
						} else {
							swept[m.ID] = true
						}
					}
				}
				mu.Lock()
				busy := running[m.ID] || len(running) >= maxConcurrentMoves
				if !busy && !m.Step.Ended() {
					running[m.ID] = true
				}
				mu.Unlock()
				if busy || m.Step.Ended() {
					continue
				}
				run := &MoveRun{c: c, t: t, move: m, Resumed: driven[m.ID] || m.Driver != 0}
				driven[m.ID] = true
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := c.cfg.Mover.DriveMove(ctx, run); err != nil && ctx.Err() == nil {
						c.log.Warn("control: root move stopped; it resumes", "move", m.ID, "root", m.Root, "err", err)
					}
					mu.Lock()
					delete(running, m.ID)
					mu.Unlock()
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
