package control

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// newPlacedRoot returns the plane of a new cluster of two shards in which agent-a was
// placed, on shard from.
func newPlacedRoot(t *testing.T) (p *Plane, ctx context.Context, from int) {
	t.Helper()
	etcd := startEtcd(t, 1)
	p = newPlane(t, etcd.client(), testConfig(t))
	ctx = ctxTimeout(t, 30*time.Second)
	if _, err := p.CreateCluster(ctx, ClusterSpec{Shards: 2, Replication: 1}); err != nil {
		t.Fatal(err)
	}
	_, from = placeRoot(t, ctx, p, 2, "agent-a")
	return p, ctx, from
}

// placeRoot places root through a new placement of p's cluster of shards shards (closed
// when t ends) and returns the placement and the root's shard.
func placeRoot(t *testing.T, ctx context.Context, p *Plane, shards int, root string) (*Placement, int) {
	t.Helper()
	pl := p.NewPlacement(Cluster{Shards: shards})
	t.Cleanup(pl.Close)
	s, _, err := pl.Place(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	return pl, s
}

func TestStartMoveRefusesBadRequests(t *testing.T) {
	p, ctx, from := newPlacedRoot(t)
	other := 1 - from
	old, err := p.Register(ctx, "old", NodeInfo{PeerAddr: "old:7000", ClusterVersion: MoveVersion - 1})
	if err != nil {
		t.Fatal(err)
	}
	var ve *VersionError
	if _, err := p.StartMove(ctx, "agent-a", other, time.Now()); !errors.As(err, &ve) || ve.Node != "old" || ve.Needed() != MoveVersion {
		t.Fatalf("move with a node of version %d: %v, want a VersionError naming it", MoveVersion-1, err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		root   string
		target int
		want   error
	}{
		{"a bad root name", "a/b", other, ErrInvalidArgument},
		{"a root never written", "agent-none", other, ErrRootNotPlaced},
		{"a shard past the count", "agent-a", 2, ErrInvalidArgument},
		{"a negative shard", "agent-a", -1, ErrInvalidArgument},
		{"the root's own shard", "agent-a", from, ErrInvalidArgument},
	} {
		_, err := p.StartMove(ctx, tt.root, tt.target, time.Now())
		var r *Refusal
		if !errors.Is(err, tt.want) || !errors.As(err, &r) || r.Reason == "" {
			t.Fatalf("%s: %v, want a refusal of %v", tt.name, err, tt.want)
		}
	}
	m, err := p.StartMove(ctx, "agent-a", other, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m.Step != MoveRequested || m.Source != from || m.Target != other || m.ID == "" {
		t.Fatalf("recorded move %+v", m)
	}
	if _, err := p.StartMove(ctx, "agent-a", other, time.Now()); !errors.Is(err, ErrMoveInProgress) {
		t.Fatalf("a second move of the root: %v, want ErrMoveInProgress", err)
	}
	if _, err := p.StartMove(ctx, "agent-a", from, time.Now()); !errors.Is(err, ErrMoveInProgress) {
		t.Fatalf("a move back to the shard the root is leaving: %v, want ErrMoveInProgress", err)
	}
	got, err := p.GetMove(ctx, m.ID)
	if err != nil || got.Root != "agent-a" || got.Step != MoveRequested {
		t.Fatalf("GetMove: %+v %v", got, err)
	}
	if _, err := p.GetMove(ctx, "nope"); !errors.Is(err, ErrMoveNotFound) {
		t.Fatalf("GetMove of an unknown id: %v", err)
	}
}

// stepMover walks a move through every step the way the host's driver does, without
// shards; a run that finds the root's placement changed under it stops at the switch.
type stepMover struct {
	mu   sync.Mutex
	runs []bool // Resumed of each run
	fail bool   // the first run fails after the fence
}

func (s *stepMover) DriveMove(ctx context.Context, run *MoveRun) error {
	s.mu.Lock()
	s.runs = append(s.runs, run.Resumed)
	fail := s.fail
	s.fail = false
	s.mu.Unlock()
	if run.Resumed && !run.Move().Step.Committed() {
		if err := run.Step(ctx, MoveRollingBack, func(m *RootMove) { m.Reason = "resumed before the switch" }); err != nil {
			return err
		}
		return run.Step(ctx, MoveRolledBack, nil)
	}
	for _, st := range []MoveStep{MoveImporting, MoveFenced, MoveCopied, MoveFinished} {
		if err := run.Step(ctx, st, func(m *RootMove) { m.Chunks, m.Records = 2, 10 }); err != nil {
			return err
		}
		if fail && st == MoveFenced {
			return errors.New("the source's leader went away")
		}
	}
	if err := run.Switch(ctx); err != nil {
		return err
	}
	if err := run.Step(ctx, MoveConfirmed, nil); err != nil {
		return err
	}
	return run.Step(ctx, MoveDone, nil)
}

func TestControllerDrivesMovesAndSwitchesPlacement(t *testing.T) {
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: 2, Replication: 1}, 60*time.Second)
	pl, from := placeRoot(t, ctx, p, 2, "agent-a")
	if _, _, err := pl.Place(ctx, "agent-b"); err != nil {
		t.Fatal(err)
	}
	to := 1 - from
	loadsBefore := mustLoads(t, ctx, pl)
	mover := &stepMover{}
	cfg := controllerConfig("c1")
	cfg.Mover = mover
	c, err := p.NewController(newFakeAdmin(10), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runController(t, c)

	m, err := p.StartMove(ctx, "agent-a", to, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	done := waitMove(t, ctx, p, m.ID)
	if done.Step != MoveDone || done.Ended == nil || done.Chunks != 2 || done.Records != 10 || done.Driver == 0 {
		t.Fatalf("move ended as %+v", done)
	}
	// The watch follows the switch: the cache names the target without a restart.
	if _, err := retry.Until(20*time.Second, func() error {
		if s, _ := pl.Cached("agent-a"); s != to {
			return errors.New("the placement cache still names the source")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if s, err := pl.Refresh(ctx, "agent-a"); err != nil || s != to {
		t.Fatalf("Refresh: %d %v, want %d", s, err, to)
	}
	loads := mustLoads(t, ctx, pl)
	if loads[from] != loadsBefore[from]-1 || loads[to] != loadsBefore[to]+1 {
		t.Fatalf("load counters %v after the move, %v before", loads, loadsBefore)
	}
	// The lock is gone: the root may move again, back.
	m2, err := p.StartMove(ctx, "agent-a", from, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if m2.Source != to {
		t.Fatalf("second move's source %d, want %d", m2.Source, to)
	}
	if got := waitMove(t, ctx, p, m2.ID); got.Step != MoveDone {
		t.Fatalf("second move ended as %+v", got)
	}

	// A drive that stops before the switch is resumed, and the resume rolls it back.
	mover.mu.Lock()
	mover.fail, mover.runs = true, nil
	mover.mu.Unlock()
	m3, err := p.StartMove(ctx, "agent-a", to, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := waitMove(t, ctx, p, m3.ID)
	mover.mu.Lock()
	runs := append([]bool(nil), mover.runs...)
	mover.mu.Unlock()
	if got.Step != MoveRolledBack || got.Reason == "" || len(runs) != 2 || runs[0] || !runs[1] {
		t.Fatalf("interrupted move ended as %+v after runs %v (resumed flags)", got, runs)
	}
	if s, err := pl.Refresh(ctx, "agent-a"); err != nil || s != from {
		t.Fatalf("a rolled-back move left the root on %d (%v), want %d", s, err, from)
	}
	list, err := p.Moves(ctx)
	if err != nil || len(list) != 3 || list[0].ID != m.ID || list[2].ID != m3.ID {
		t.Fatalf("Moves: %+v %v", list, err)
	}
}

func TestMoveSwitchRefusedWhenPlacementChanged(t *testing.T) {
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: 3, Replication: 1}, 60*time.Second)
	_, from := placeRoot(t, ctx, p, 3, "agent-a")
	c, tm := electedController(t, ctx, p)
	m, err := p.StartMove(ctx, "agent-a", (from+1)%3, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	run := &MoveRun{c: c, t: tm, move: m}
	if err := run.Switch(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("switch at step %s: %v, want ErrConflict", m.Step, err)
	}
	if err := run.Step(ctx, MoveFinished, nil); err != nil {
		t.Fatal(err)
	}
	// Someone else changed the placement (it names a third shard): the switch must not.
	if _, err := p.cli.Put(ctx, p.k.root("agent-a"), `{"shard":`+string(rune('0'+(from+2)%3))+`}`); err != nil {
		t.Fatal(err)
	}
	if err := run.Switch(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("switch over a changed placement: %v, want ErrConflict", err)
	}
	// A stale run (the record changed since it read it) writes nothing.
	stale := &MoveRun{c: c, t: tm, move: m}
	if err := stale.Step(ctx, MoveFenced, nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("a stale run's step: %v, want ErrConflict", err)
	}
	// A run of a term that lost its key is deposed.
	deposed := &MoveRun{c: c, t: &term{key: tm.key, rev: tm.rev - 1}, move: run.Move()}
	if err := deposed.Step(ctx, MoveRollingBack, nil); !errors.Is(err, ErrDeposed) {
		t.Fatalf("a deposed run's step: %v, want ErrDeposed", err)
	}
}

// A move to a shard of the creation that never held a root creates its load counter, as
// the shard's first placement would: the counters count the moved root on the target.
func TestAMoveToAShardThatNeverHeldARootCountsIt(t *testing.T) {
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: 2, Replication: 1}, 60*time.Second)
	pl, from := placeRoot(t, ctx, p, 2, "only")
	to := 1 - from
	cfg := controllerConfig("c1")
	cfg.Mover = &stepMover{}
	c, err := p.NewController(newFakeAdmin(10), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runController(t, c)
	for i, target := range []int{to, from, to} {
		m, err := p.StartMove(ctx, "only", target, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := waitMove(t, ctx, p, m.ID); got.Step != MoveDone {
			t.Fatalf("move %d ended as %+v", i+1, got)
		}
		loads := mustLoads(t, ctx, pl)
		want := make([]int64, 2)
		want[target] = 1
		if fmt.Sprint(loads) != fmt.Sprint(want) {
			t.Fatalf("load counters %v after move %d to shard %d, want %v", loads, i+1, target, want)
		}
	}
}

func waitMove(t *testing.T, ctx context.Context, p *Plane, id string) RootMove {
	t.Helper()
	var got RootMove
	if _, err := retry.Until(20*time.Second, func() error {
		m, err := p.GetMove(ctx, id)
		if err != nil {
			return err
		}
		got = m
		if !m.Step.Ended() {
			return errors.New("move " + id + " is " + string(m.Step))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// mustLoads returns the root counts per shard that pl's load counters hold; a read that
// fails fails the test.
func mustLoads(t *testing.T, ctx context.Context, pl *Placement) []int64 {
	t.Helper()
	loads, err := pl.Loads(ctx)
	if err != nil {
		t.Fatalf("read the load counters: %v", err)
	}
	return loads
}

// electedController is a controller of p (not running) that won the election, resigning
// when the test ends: a test drives its MoveRuns by hand.
func electedController(t *testing.T, ctx context.Context, p *Plane) (*Controller, *term) {
	t.Helper()
	c, err := p.NewController(newFakeAdmin(10), controllerConfig("c1"))
	if err != nil {
		t.Fatal(err)
	}
	tm, err := c.campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.resign(tm) })
	return c, tm
}

// Placements of other roots change the load counters while a move switches: the switch
// reads them again instead of failing the move.
func TestMoveSwitchSurvivesConcurrentPlacements(t *testing.T) {
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: 2, Replication: 1}, 60*time.Second)
	pl := p.NewPlacement(Cluster{Shards: 2})
	t.Cleanup(pl.Close)
	c, tm := electedController(t, ctx, p)
	const moves = 10
	from := map[int]int{}
	for i := range moves {
		s, _, err := pl.Place(ctx, fmt.Sprintf("moved-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		from[i] = s
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := pl.Place(ctx, fmt.Sprintf("churn-%d-%d", g, n)); err != nil && ctx.Err() == nil {
					t.Errorf("place: %v", err)
					return
				}
			}
		})
	}
	for i := range moves {
		m, err := p.StartMove(ctx, fmt.Sprintf("moved-%d", i), 1-from[i], time.Now())
		if err != nil {
			t.Fatal(err)
		}
		run := &MoveRun{c: c, t: tm, move: m}
		if err := run.Step(ctx, MoveFinished, nil); err != nil {
			t.Fatal(err)
		}
		if err := run.Switch(ctx); err != nil {
			t.Fatalf("switch %d under concurrent placements: %v", i, err)
		}
		if s, err := pl.Refresh(ctx, m.Root); err != nil || s != m.Target {
			t.Fatalf("root %s on %d (%v), want %d", m.Root, s, err, m.Target)
		}
	}
	close(stop)
	wg.Wait()
}
