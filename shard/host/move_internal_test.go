package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/internal/etcdtest"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/control"
)

// moveCluster is a testCluster of two shards whose placement is etcd's, with a
// controller that drives moves on node 0.
type moveCluster struct {
	*testCluster
	plane *control.Plane
	ctrl  *control.Controller // node 0's
}

func newMoveCluster(t testing.TB) *moveCluster {
	t.Helper()
	return newMoveClusterFSM(t, meta.Options{})
}

// newMoveClusterFSM is newMoveCluster whose replicas take fsm as their metadata options.
func newMoveClusterFSM(t testing.TB, fsm meta.Options) *moveCluster {
	t.Helper()
	c := newTestClusterFSM(t, 2, false, fsm)
	cli, plane := newEtcdPlane(t, "/move")
	ctx := t.Context()
	cl, err := plane.CreateCluster(ctx, control.ClusterSpec{Shards: 2, Replication: 3})
	if err != nil {
		t.Fatal(err)
	}
	// The groups exist: their records say so, and the controller has nothing to change.
	set, _ := json.Marshal(control.ReplicaSet{Voters: []string{"n0", "n1", "n2"}, Nonvoters: []string{}})
	for s := range 2 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/move/shards/%d", s), string(set)); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range c.hosts {
		h.cluster.cfg.Plane = plane
		h.cluster.record.Store(&cl)
		pl := plane.NewPlacement(cl)
		t.Cleanup(pl.Close)
		h.placement = pl
		reg, err := plane.Register(ctx, h.NodeID(), control.NodeInfo{PeerAddr: h.cluster.cfg.Peer.Addr().String(),
			StartedAt: time.Now(), ClusterVersion: meta.ClusterVersion})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close() })
	}
	mc := &moveCluster{testCluster: c, plane: plane}
	mc.ctrl = mc.runController(t, 0)
	return mc
}

// newEtcdPlane is a control plane under prefix in an embedded etcd of its own, with the
// client it talks through; both close when t ends.
func newEtcdPlane(t testing.TB, prefix string) (*clientv3.Client, *control.Plane) {
	t.Helper()
	e := etcdtest.Start(t)
	cli, err := clientv3.New(control.ClientConfig([]string{e.Endpoint()}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	plane, err := control.New(cli, control.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return cli, plane
}

// placeWrittenRoot writes the file "f" of root "a" through node 0, which places the root,
// and returns the root's shard.
func (c *moveCluster) placeWrittenRoot(t testing.TB) int {
	t.Helper()
	c.mustWrite(t, 0, meta.Header{}, putBody("a", "f", "v1"))
	id, err := c.hosts[0].placement.Resolve(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// runController runs a controller that drives moves on node i until t ends, and returns
// it.
func (c *moveCluster) runController(t testing.TB, i int) *control.Controller {
	t.Helper()
	h := c.hosts[i]
	ctrl, err := c.plane.NewController(clusterAdmin{h}, control.ControllerConfig{ID: h.NodeID(), Interval: time.Second,
		Grace: time.Minute, SessionTTL: 2 * time.Second, Mover: h.mover, MoveSweepAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(cctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ctrl
}

func putBody(agent, path, data string) meta.Put {
	return meta.Put{Agent: agent, Workspace: "w", Path: path, CreateWorkspace: true, Size: int64(len(data)),
		Segments: []meta.Segment{{Size: int64(len(data)), Inline: []byte(data)}}}
}

// mustWrite proposes b through node i until it applies or the FSM refuses it.
func (c *moveCluster) mustWrite(t testing.TB, i int, hd meta.Header, b meta.Body) meta.Result {
	t.Helper()
	var res meta.Result
	if _, err := retry.Until(20*time.Second, func() error {
		core, err := c.hosts[i].For(meta.AgentOf(b))
		if err != nil {
			return err
		}
		res, err = core.Propose(t.Context(), hd, b)
		if err == nil && res.Err != nil && !moved(res) {
			return fmt.Errorf("%w: %v", retry.ErrStop, res.Err)
		}
		if err == nil && res.Err != nil {
			return res.Err
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return res
}

// rootView returns a linearizable view of agent's root read through node i, and its
// workbench w there.
func (c *moveCluster) rootView(t testing.TB, i int, agent string) (*meta.View, *meta.Workspace) {
	t.Helper()
	core, err := c.hosts[i].For(agent)
	if err != nil {
		t.Fatal(err)
	}
	v, err := core.ReadView(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := v.Workspace(agent, "w")
	if err != nil {
		t.Fatalf("node %d: %v", i, err)
	}
	return v, ws
}

func (c *moveCluster) waitMove(t testing.TB, id string) control.RootMove {
	t.Helper()
	var m control.RootMove
	retry.Within(t, 60*time.Second, "the move ends", func() (err error) {
		m, err = c.plane.GetMove(t.Context(), id)
		if err == nil && !m.Step.Ended() {
			err = fmt.Errorf("move %s is %s", id, m.Step)
		}
		return err
	})
	return m
}

// A root with files, history and an idempotency record moves to the other shard: every
// node reads it there byte for byte, its history and a snapshot's read point keep
// working, the request id replays the first answer, and a node whose placement was stale
// learns the new shard from the refusal instead of sending the command to the target.
func TestDriveMoveMovesARootBetweenShards(t *testing.T) {
	c := newMoveCluster(t)
	ctx := t.Context()
	first := c.mustWrite(t, 1, meta.Header{RequestID: "req-1"}, putBody("a", "f", "v1"))
	second := c.mustWrite(t, 1, meta.Header{}, putBody("a", "f", "v2"))
	c.mustWrite(t, 2, meta.Header{}, putBody("a", "g", "other"))
	from, err := c.hosts[0].placement.Resolve(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	to := 1 - from

	m, err := c.plane.StartMove(ctx, "a", to, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := c.waitMove(t, m.ID); got.Step != control.MoveDone || got.Chunks == 0 || got.Records == 0 {
		t.Fatalf("move ended as %+v", got)
	}
	for i, h := range c.hosts {
		retry.Within(t, 10*time.Second, fmt.Sprintf("node %d places the root on shard %d", i, to), func() error {
			if s, _ := h.placement.Cached("a"); s != to {
				return fmt.Errorf("cached shard %d", s)
			}
			return nil
		})
		v, ws := c.rootView(t, i, "a")
		e, err := v.File(ws, "f")
		if err != nil || string(e.Segments[0].Inline) != "v2" || e.Generation != second.Generation {
			t.Fatalf("node %d reads f as %+v %v, want v2 at generation %d", i, e, err, second.Generation)
		}
		at, err := v.At(first.Version)
		if err != nil {
			t.Fatal(err)
		}
		old, err := at.File(ws, "f")
		if err != nil || string(old.Segments[0].Inline) != "v1" {
			t.Fatalf("node %d reads f at version %d as %+v %v, want v1", i, first.Version, old, err)
		}
	}
	// The request id answers the first write's answer on the target.
	replay := c.mustWrite(t, 0, meta.Header{RequestID: "req-1"}, putBody("a", "f", "v1"))
	if !replay.Replayed || replay.Generation != first.Generation {
		t.Fatalf("replay after the move: %+v, want the first answer (generation %d)", replay, first.Generation)
	}
	// A write after the move lands on the target, after every moved generation.
	after := c.mustWrite(t, 2, meta.Header{}, putBody("a", "f", "v3"))
	if after.Generation <= second.Generation {
		t.Fatalf("generation %d after the move, not above %d", after.Generation, second.Generation)
	}
	if v := c.hosts[0].Replica(to).AppliedView(); !v.Shard().HoldsRoot("a") {
		t.Fatal("the target does not hold the root")
	}

	// A stale route: the source refuses with NotOwner, the node learns the new shard and
	// answers the refusal (never re-routing the command as it is).
	stale := &rootCore{h: c.hosts[1], id: from, agent: "a"}
	res, err := stale.Propose(ctx, meta.Header{}, putBody("a", "f", "stale"))
	if err != nil || res.Err == nil || res.Err.Code != meta.CodeNotOwner {
		t.Fatalf("a command routed to the source after the move: %+v %v, want NotOwner", res.Err, err)
	}
	if s, _ := c.hosts[1].placement.Cached("a"); s != to {
		t.Fatalf("after the refusal node 1 places the root on %d, want %d", s, to)
	}
	// A read through the stale route follows the move.
	v, err := stale.ReadView(ctx)
	if err != nil || !v.Shard().HoldsRoot("a") {
		t.Fatalf("a read through the stale route: %v (holds the root: %v)", err, err == nil && v.Shard().HoldsRoot("a"))
	}

	list, err := c.plane.Moves(ctx)
	if err != nil || len(list) != 1 || list[0].ID != m.ID {
		t.Fatalf("moves %+v %v", list, err)
	}
}

// A controller whose node reaches etcd but none of the other nodes steps down, and sits
// out while it stays cut off: the controller elected instead ends the move the cut-off one
// could not drive (here it rolls it back: the move was interrupted before its switch), and
// the root takes writes again.
func TestACutOffControllerStepsDownAndTheMoveEnds(t *testing.T) {
	c := newMoveCluster(t)
	ctx := t.Context()
	c.mustWrite(t, 1, meta.Header{}, putBody("a", "f", "v1"))
	retry.Within(t, 20*time.Second, "node 0's controller leads", func() error {
		if !c.ctrl.Leading() {
			return errors.New("not yet")
		}
		return nil
	})
	second := c.runController(t, 1)
	from, err := c.hosts[1].placement.Resolve(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	c.net.set(func() { c.net.frozen[0] = true })
	defer c.net.releaseAll()
	m, err := c.plane.StartMove(ctx, "a", 1-from, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ended := c.waitMove(t, m.ID)
	if !second.Leading() || c.ctrl.Leading() {
		t.Fatalf("the move ended with node 1's controller leading: %v, node 0's: %v", second.Leading(), c.ctrl.Leading())
	}
	t.Logf("the move ended %s (%s)", ended.Step, ended.Reason)
	c.mustWrite(t, 1, meta.Header{}, putBody("a", "f", "v2"))
}

// A root moved back as soon as its move ended moves back: the shard it left is still
// walking its release (a retention batch of one item walks one step per command), and the
// move's import there waits for the walk instead of rolling back.
func TestARootMovesBackWhileTheShardItLeftStillReleasesIt(t *testing.T) {
	c := newMoveClusterFSM(t, meta.Options{RetentionBatch: 2})
	ctx := t.Context()
	const files = 300 // a few walk steps of records
	for i := range files {
		c.mustWrite(t, i%3, meta.Header{}, putBody("a", fmt.Sprintf("f%03d", i), fmt.Sprint(i)))
	}
	from, err := c.hosts[0].placement.Resolve(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	for n, to := range []int{1 - from, from} {
		m, err := c.plane.StartMove(ctx, "a", to, time.Now())
		if err != nil {
			t.Fatalf("move %d: %v", n, err)
		}
		if got := c.waitMove(t, m.ID); got.Step != control.MoveDone {
			t.Fatalf("move %d to shard %d ended %s: %s", n, to, got.Step, got.Reason)
		}
		if n == 0 {
			left, err := c.hosts[0].leaders.readView(ctx, from)
			if err != nil {
				t.Fatal(err)
			}
			if rec, ok := left.Moves().Of("a"); !ok || rec.State != meta.MoveReleasing {
				t.Fatalf("the shard the root left holds move record %+v (%v), want one still releasing", rec, ok)
			}
		}
	}
	v, ws := c.rootView(t, 1, "a")
	for i := range files {
		if e, err := v.File(ws, fmt.Sprintf("f%03d", i)); err != nil || string(e.Segments[0].Inline) != fmt.Sprint(i) {
			t.Fatalf("f%03d after moving back: %+v %v", i, e, err)
		}
	}
}

// A command refused because its root is fenced waits for the move; a rolled-back move
// lifts the fence and the command applies on the same shard, within the call.
func TestCommandOfAFencedRootAppliesAfterTheFenceLifts(t *testing.T) {
	c := newMoveCluster(t)
	ctx := t.Context()
	id := c.placeWrittenRoot(t)
	ref := meta.MoveRef{Agent: "a", MoveID: "m-fence"}
	fence, err := c.hosts[0].mover.proposeMove(ctx, id, meta.MoveFence{MoveRef: ref})
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res meta.Result
		err error
	}
	got := make(chan answer, 1)
	go func() {
		core, err := c.hosts[1].For("a")
		if err != nil {
			got <- answer{err: err}
			return
		}
		res, err := core.Propose(ctx, meta.Header{}, putBody("a", "f", "v2"))
		got <- answer{res, err}
	}()
	// The command is refused (a log entry past the fence) and still waits.
	retry.Within(t, 10*time.Second, "the shard applied a command after the fence", func() error {
		if v := c.hosts[0].Replica(id).FSM().AppliedVersion(); v <= fence.Version {
			return fmt.Errorf("applied %d, fence at %d", v, fence.Version)
		}
		return nil
	})
	select {
	case a := <-got:
		t.Fatalf("the command ended while the root was fenced: %+v %v", a.res.Err, a.err)
	default:
	}
	if _, err := c.hosts[0].mover.proposeMove(ctx, id, meta.MoveLift{MoveRef: ref}); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.err != nil || a.res.Err != nil || a.res.Generation == 0 {
		t.Fatalf("the command after the fence lifted: %+v %v", a.res.Err, a.err)
	}
}

// A fenced root whose fence never lifts answers the retryable refusal at the end of the
// wait.
func TestCommandOfAFencedRootEndsRefusedAtItsDeadline(t *testing.T) {
	c := newMoveCluster(t)
	id := c.placeWrittenRoot(t)
	if _, err := c.hosts[0].mover.proposeMove(t.Context(), id, meta.MoveFence{MoveRef: meta.MoveRef{Agent: "a", MoveID: "m"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	core, err := c.hosts[2].For("a")
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.Propose(ctx, meta.Header{}, putBody("a", "f", "v2"))
	if err != nil || res.Err == nil || res.Err.Code != meta.CodeRootMoving {
		t.Fatalf("a command of a fenced root at its deadline: %+v %v, want RootMoving", res.Err, err)
	}
}

// A move a shard refuses rolls back: the target holds another move's import of the root,
// so its import is refused; the record ends rolled_back with the reason, the root stays
// writable on its shard, and no fence is left behind.
func TestDriveMoveRollsBackWhenAShardRefuses(t *testing.T) {
	c := newMoveCluster(t)
	ctx := t.Context()
	from := c.placeWrittenRoot(t)
	to := 1 - from
	if _, err := c.hosts[0].mover.proposeMove(ctx, to, meta.MoveImportBegin{MoveRef: meta.MoveRef{Agent: "a", MoveID: "other"}, RootUID: "zz1"}); err != nil {
		t.Fatal(err)
	}
	m, err := c.plane.StartMove(ctx, "a", to, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := c.waitMove(t, m.ID)
	if got.Step != control.MoveRolledBack || got.Reason == "" {
		t.Fatalf("move ended as %+v, want rolled_back with a reason", got)
	}
	if s, err := c.hosts[1].placement.Refresh(ctx, "a"); err != nil || s != from {
		t.Fatalf("the root's shard after the rollback: %d %v, want %d", s, err, from)
	}
	if _, fenced := c.hosts[0].Replica(from).AppliedView().Moves().Of("a"); fenced {
		t.Fatal("the rollback left a move record on the source")
	}
	if res := c.mustWrite(t, 2, meta.Header{}, putBody("a", "f", "v2")); res.Generation == 0 {
		t.Fatalf("write after the rollback: %+v", res)
	}
	// A deposed controller's fence of the move lands after the rollback: the sweep lifts it.
	if _, err := c.hosts[0].mover.proposeMove(ctx, from, meta.MoveFence{MoveRef: meta.MoveRef{Agent: "a", MoveID: m.ID}}); err != nil {
		t.Fatal(err)
	}
	retry.Within(t, 20*time.Second, "the sweep lifts the late fence", func() error {
		if rec, fenced := c.hosts[0].Replica(from).AppliedView().Moves().Of("a"); fenced {
			return fmt.Errorf("the source holds %+v", rec)
		}
		return nil
	})
	if res := c.mustWrite(t, 1, meta.Header{}, putBody("a", "f", "v3")); res.Generation == 0 {
		t.Fatalf("write after the sweep: %+v", res)
	}
}

// The copy reads from one view: a leader asked to continue an export it has no view of
// (it was elected since) answers that the view is lost, and never exports from another.
func TestExportOfAMoveWithoutItsViewIsLost(t *testing.T) {
	c := newMoveCluster(t)
	ctx := t.Context()
	id := c.placeWrittenRoot(t)
	ref := meta.MoveRef{Agent: "a", MoveID: "m"}
	// Not fenced: the export is refused.
	if _, err := c.hosts[1].mover.exportStep(ctx, id, exportRequest{Agent: "a", MoveID: "m"}); err == nil {
		t.Fatal("an export of a root not fenced for the move was served")
	}
	if _, err := c.hosts[1].mover.proposeMove(ctx, id, meta.MoveFence{MoveRef: ref}); err != nil {
		t.Fatal(err)
	}
	first, err := c.hosts[1].mover.exportStep(ctx, id, exportRequest{Agent: "a", MoveID: "m"})
	if err != nil || first.Chunk.Records == 0 || !first.Chunk.Done {
		t.Fatalf("first chunk: %+v %v", first.Chunk, err)
	}
	if _, err := c.hosts[2].mover.exportStep(ctx, id, exportRequest{Agent: "a", MoveID: "other", From: meta.MovePosition{Table: 1}}); !errors.Is(err, errExportViewLost) {
		t.Fatalf("an export continued without its view: %v, want errExportViewLost", err)
	}
}

// An export continues only from the view it started from, not from another view of the
// same move: a pre-copy's first request, answered by a leader that then lost the shard,
// is tried again on the next leader, which takes a view of its own; when the first leader
// leads again, it still holds its older view, and the copy going on from the newer one is
// answered Lost there instead of being continued from the older.
func TestExportContinuesOnlyFromTheViewItStartedFrom(t *testing.T) {
	c := newMoveCluster(t)
	ctx := t.Context()
	id := c.placeWrittenRoot(t)
	first := c.shardLeader(t, id)
	req := exportRequest{Agent: "a", MoveID: "m", PreCopy: true}
	older, err := c.hosts[first].mover.exportStep(ctx, id, req)
	if err != nil || older.Chunk.Records == 0 {
		t.Fatalf("the first leader's chunk: %+v %v", older.Chunk, err)
	}
	c.mustWrite(t, 0, meta.Header{}, putBody("a", "g", "after the first view"))
	leader := c.moveShardLeader(t, id)
	newer, err := c.hosts[leader].mover.exportStep(ctx, id, req) // the same first request, tried again
	if err != nil || newer.Version <= older.Version {
		t.Fatalf("the next leader's chunk: version %d (the first view's %d) %v", newer.Version, older.Version, err)
	}
	for range 8 {
		if leader == first {
			break
		}
		leader = c.moveShardLeader(t, id)
	}
	if leader != first {
		t.Fatalf("node %d did not lead shard %d again", first, id)
	}
	next := req
	next.From, next.View = newer.Chunk.Next, newer.Version
	if _, err := c.hosts[first].mover.exportStep(ctx, id, next); !errors.Is(err, errExportViewLost) {
		t.Fatalf("the copy of view %d continued on a leader holding view %d: %v, want errExportViewLost", newer.Version, older.Version, err)
	}
	next.View = older.Version
	if rep, err := c.hosts[first].mover.exportStep(ctx, id, next); err != nil || rep.Version != older.Version {
		t.Fatalf("the copy of view %d on the leader holding it: %+v %v", older.Version, rep, err)
	}
	// So is the delta after the fence, against the base view the pre-copy read.
	if _, err := c.hosts[first].mover.proposeMove(ctx, id, meta.MoveFence{MoveRef: meta.MoveRef{Agent: "a", MoveID: "m"}}); err != nil {
		t.Fatal(err)
	}
	delta := exportRequest{Agent: "a", MoveID: "m", Delta: true, Base: newer.Version}
	if _, err := c.hosts[first].mover.exportStep(ctx, id, delta); !errors.Is(err, errExportViewLost) {
		t.Fatalf("a delta against base view %d on a leader holding base view %d: %v, want errExportViewLost", newer.Version, older.Version, err)
	}
	delta.Base = older.Version
	if rep, err := c.hosts[first].mover.exportStep(ctx, id, delta); err != nil || rep.Chunk.Records == 0 {
		t.Fatalf("a delta against base view %d on the leader holding it: %+v %v", older.Version, rep, err)
	}
}
