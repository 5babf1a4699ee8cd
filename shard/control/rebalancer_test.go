package control

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// loadAdmin is fakeAdmin whose leaders report loads (nil for a shard: no load reported),
// counting the status rounds.
type loadAdmin struct {
	*fakeAdmin
	mu     sync.Mutex
	loads  map[int]*ShardLoad
	asked  int
	starts []Move
	fences []int64
	moving int
	// unmovable are the roots Moving reports a round leaves alone.
	unmovable map[string]bool
}

func (a *loadAdmin) Status(ctx context.Context, shard int) (ShardStatus, error) {
	st, err := a.fakeAdmin.Status(ctx, shard)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked++
	if l := a.loads[shard]; l != nil {
		cp := *l
		st.Load = &cp
	}
	return st, err
}

func (a *loadAdmin) Moving(context.Context, time.Time) (int, map[string]bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.moving, a.unmovable, nil
}

func (a *loadAdmin) Start(_ context.Context, fence int64, m Move) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starts, a.fences = append(a.starts, m), append(a.fences, fence)
	return nil
}

func (a *loadAdmin) set(f func(a *loadAdmin)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

// rounds waits until the controller asked for n more status rounds of shards shards.
func (a *loadAdmin) rounds(t *testing.T, n, shards int) {
	t.Helper()
	a.mu.Lock()
	want := a.asked + n*shards
	a.mu.Unlock()
	retry.Within(t, 20*time.Second, fmt.Sprintf("%d more rounds", n), func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.asked < want {
			return errors.New("not yet")
		}
		return nil
	})
}

func (a *loadAdmin) started() []Move {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Move(nil), a.starts...)
}

// TestTheSwitchIsOffUntilSetAndDurable: never set, the switch reads off; it reads back
// what was set last, from another plane too.
func TestTheSwitchIsOffUntilSetAndDurable(t *testing.T) {
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: 2, Replication: 1}, 30*time.Second)
	if s, err := p.RebalanceSwitch(ctx); err != nil || s.Enabled || !s.Since.IsZero() {
		t.Fatalf("a switch never set: %+v %v", s, err)
	}
	at := time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)
	if _, err := p.SetRebalanceSwitch(ctx, true, at); err != nil {
		t.Fatal(err)
	}
	other := newPlane(t, p.cli, p.cfg)
	if s, err := other.RebalanceSwitch(ctx); err != nil || !s.Enabled || !s.Since.Equal(at) {
		t.Fatalf("after on: %+v %v", s, err)
	}
	if _, err := p.SetRebalanceSwitch(ctx, false, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s, err := other.RebalanceSwitch(ctx); err != nil || s.Enabled {
		t.Fatalf("after off: %+v %v", s, err)
	}
}

// TestTheControllerRebalancesOnlyWhenSwitchedOnAndSettled: with the switch off, or a
// move under way, or a shard that reported no load, no round starts a move; switched on,
// the settled controller starts the decision's moves (Rebalance) from the hot shard to
// the cold one, fenced by its term; switched off again, it starts none.
func TestTheControllerRebalancesOnlyWhenSwitchedOnAndSettled(t *testing.T) {
	const shards = 2
	p, ctx := newOneNodeCluster(t, shards)
	a := &loadAdmin{fakeAdmin: newFakeAdmin(10), loads: map[int]*ShardLoad{
		0: {Roots: 3, Bytes: 3000, WriteRate: 30, Candidates: []RootLoad{{Root: "big", Bytes: 2000, WriteRate: 20}, {Root: "b", Bytes: 500, WriteRate: 5}, {Root: "c", Bytes: 500, WriteRate: 5}}},
		1: {Roots: 1, Bytes: 100, WriteRate: 1, Candidates: []RootLoad{{Root: "d", Bytes: 100, WriteRate: 1}}},
	}}
	runRebalancingController(t, p, a)
	retry.Within(t, 30*time.Second, "the shards are formed", func() error {
		records, err := p.ReplicaSets(ctx)
		if err != nil {
			return err
		}
		return a.converged(records, shards, 1, "")
	})

	a.rounds(t, 5, shards)
	if got := a.started(); len(got) != 0 {
		t.Fatalf("moves started with the switch never set: %v", got)
	}
	a.set(func(a *loadAdmin) { a.moving = 1 })
	if _, err := p.SetRebalanceSwitch(ctx, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	a.rounds(t, 5, shards)
	if got := a.started(); len(got) != 0 {
		t.Fatalf("moves started while a move is under way: %v", got)
	}
	// One change at a time: a round reads the loads before it asks what is moving, so
	// clearing both at once lets a round in flight see the old loads and no move.
	a.set(func(a *loadAdmin) { a.loads[1] = nil })
	a.rounds(t, 2, shards)
	a.set(func(a *loadAdmin) { a.moving = 0 })
	a.rounds(t, 5, shards)
	if got := a.started(); len(got) != 0 {
		t.Fatalf("moves started while shard 1 reported no load: %v", got)
	}
	a.set(func(a *loadAdmin) {
		a.loads[1] = &ShardLoad{Roots: 1, Bytes: 100, WriteRate: 1, Candidates: []RootLoad{{Root: "d", Bytes: 100, WriteRate: 1}}}
	})
	retry.Within(t, 20*time.Second, "a rebalance move", func() error {
		if len(a.started()) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	got := a.started()
	a.mu.Lock()
	loads, why := rebalanceLoads(shards, map[int]ShardStatus{0: {Load: a.loads[0]}, 1: {Load: a.loads[1]}}, nil)
	fence := a.fences[0]
	a.mu.Unlock()
	want := Rebalance(loads, DefaultRebalanceConfig())
	if why != "" || len(want) == 0 || got[0] != want[0] || got[0].From != 0 || got[0].To != 1 {
		t.Fatalf("the first move %+v, want the decision's first %+v (%s)", got[0], want, why)
	}
	if fence <= 0 {
		t.Fatalf("a move started with fence %d", fence)
	}
	// Switched off: once a round that read the switch before is over, nothing starts.
	if _, err := p.SetRebalanceSwitch(ctx, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	a.rounds(t, 1, shards)
	before := len(a.started())
	a.rounds(t, 5, shards)
	if after := a.started(); len(after) != before {
		t.Fatalf("moves after the switch went off: %v", after[before:])
	}
}

// A root whose latest move rolled back for a lasting reason is left alone for a while: a
// round moves the hot shard's next root instead, and never that one.
func TestARoundLeavesAnUnmovableRootAlone(t *testing.T) {
	const shards = 2
	p, ctx := newOneNodeCluster(t, shards)
	a := &loadAdmin{fakeAdmin: newFakeAdmin(10), unmovable: map[string]bool{"b": true}, loads: map[int]*ShardLoad{
		0: {Roots: 3, Bytes: 3000, WriteRate: 30, Candidates: []RootLoad{{Root: "big", Bytes: 2000, WriteRate: 20}, {Root: "b", Bytes: 500, WriteRate: 5}, {Root: "c", Bytes: 500, WriteRate: 5}}},
		1: {Roots: 1, Bytes: 100, WriteRate: 1, Candidates: []RootLoad{{Root: "d", Bytes: 100, WriteRate: 1}}},
	}}
	loads, _ := rebalanceLoads(shards, map[int]ShardStatus{0: {Load: a.loads[0]}, 1: {Load: a.loads[1]}}, nil)
	if all := Rebalance(loads, DefaultRebalanceConfig()); len(all) == 0 || all[0].Root != "b" {
		t.Fatalf("the decision with every root moves %v first, want b", all)
	}
	runRebalancingController(t, p, a)
	if _, err := p.SetRebalanceSwitch(ctx, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	retry.Within(t, 30*time.Second, "two rounds' moves", func() error {
		if len(a.started()) < 2 {
			return errors.New("not yet")
		}
		return nil
	})
	loads[0].Candidates = slices.DeleteFunc(slices.Clone(loads[0].Candidates), func(r RootLoad) bool { return r.Root == "b" })
	want := Rebalance(loads, DefaultRebalanceConfig())
	got := a.started()
	for _, m := range got {
		if m.Root == "b" {
			t.Fatalf("a round moved the unmovable root: %v", got)
		}
	}
	if len(want) == 0 || got[0] != want[0] || got[0].Root != "c" {
		t.Fatalf("the first move %+v, want the decision without b, %v", got[0], want)
	}
}

// The plane's mover reports a root unmovable while its latest move rolled back for a
// lasting reason less than unmovableFor ago: not after that, not for a rollback of
// another reason, not once a later move of the root was recorded.
func TestPlaneMoverReportsRootsWhoseMoveFailedLasting(t *testing.T) {
	p, ctx, from := newPlacedRoot(t)
	c, tm := electedController(t, ctx, p)
	rollBack := func(lasting bool, started time.Time) RootMove {
		t.Helper()
		m, err := p.StartMove(ctx, "agent-a", 1-from, started)
		if err != nil {
			t.Fatal(err)
		}
		run := &MoveRun{c: c, t: tm, move: m}
		if err := run.Step(ctx, MoveRollingBack, func(r *RootMove) { r.Reason, r.Lasting = "refused", lasting }); err != nil {
			t.Fatal(err)
		}
		if err := run.Step(ctx, MoveRolledBack, nil); err != nil {
			t.Fatal(err)
		}
		return run.Move()
	}
	mover := planeMover{p}
	unmovable := func(now time.Time) bool {
		t.Helper()
		n, roots, err := mover.Moving(ctx, now)
		if err != nil || n != 0 {
			t.Fatalf("moving %d, %v", n, err)
		}
		return roots["agent-a"]
	}
	first := time.Now()
	m := rollBack(true, first)
	if !unmovable(time.Now()) || unmovable(m.Ended.Add(unmovableFor+time.Second)) {
		t.Fatalf("after a lasting rollback: unmovable now %v, after %v %v", unmovable(time.Now()), unmovableFor, unmovable(m.Ended.Add(unmovableFor+time.Second)))
	}
	rollBack(false, first.Add(time.Second)) // a later start

	if unmovable(time.Now()) {
		t.Fatal("a root whose latest move rolled back for a passing reason is unmovable")
	}
}

// newOneNodeCluster is newControlledCluster of shards shards of one replica, with one node
// (n1) registered.
func newOneNodeCluster(t *testing.T, shards int) (*Plane, context.Context) {
	t.Helper()
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: shards, Replication: 1}, 60*time.Second)
	reg, err := p.Register(ctx, "n1", NodeInfo{PeerAddr: "n1:7000"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return p, ctx
}

// runRebalancingController runs a controller of node n1 over a (its shards' admin and its
// mover) that rebalances every 200 ms once switched on.
func runRebalancingController(t *testing.T, p *Plane, a *loadAdmin) {
	t.Helper()
	cfg := controllerConfig("n1")
	cfg.RebalanceInterval = 200 * time.Millisecond
	c, err := p.NewController(a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.mover = a
	runController(t, c)
}
