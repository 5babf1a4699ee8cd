package host

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// Three hosts hold shard 0; a recovery is refused while the shard is healthy, on another
// node than the one named and for a shard the cluster lacks. Two hosts close for good and
// lose their data directories; the third, recovered, is the only voter with everything
// it applied, serves writes, and the record in etcd names it alone at epoch 1.
func TestRecoverShardOnTheSurvivorOfALostMajority(t *testing.T) {
	c := newTestCluster(t, 1, true)
	_, plane := newEtcdPlane(t, "/recover")
	ctx := t.Context()
	if _, err := plane.CreateCluster(ctx, control.ClusterSpec{Shards: 1, Replication: 3}); err != nil {
		t.Fatal(err)
	}
	regs := map[*Host]*control.Registration{}
	for _, h := range c.hosts {
		h.cluster.cfg.Plane = plane
		reg, err := plane.Register(ctx, h.NodeID(), control.NodeInfo{PeerAddr: h.cluster.cfg.Peer.Addr().String(), StartedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close() })
		regs[h] = reg
	}
	survivor := c.hosts[0]
	core, err := survivor.For("a")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		body := meta.Put{Agent: "a", Workspace: "w", Path: fmt.Sprintf("f%d", i), CreateWorkspace: true, Size: 1,
			Segments: []meta.Segment{{Size: 1, Inline: []byte("x")}}}
		if _, err := retry.Until(20*time.Second, func() error {
			res, err := core.Propose(ctx, meta.Header{RequestID: fmt.Sprintf("put-%d", i)}, body)
			if err == nil && res.Err != nil {
				return fmt.Errorf("%w: %v", retry.ErrStop, res.Err)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := survivor.Recovery().Plan(ctx, 0, "n0"); !errors.Is(err, ErrShardHasQuorum) {
		t.Fatalf("plan on a healthy shard: %v, want ErrShardHasQuorum", err)
	}
	if _, err := survivor.Recovery().Recover(ctx, 0, "n0"); !errors.Is(err, ErrShardHasQuorum) {
		t.Fatalf("recover a healthy shard: %v, want ErrShardHasQuorum", err)
	}
	if _, err := survivor.Recovery().Plan(ctx, 0, "n1"); !errors.Is(err, ErrNotSurvivor) {
		t.Fatalf("plan for another node: %v, want ErrNotSurvivor", err)
	}
	if _, err := survivor.Recovery().Plan(ctx, 1, "n0"); !errors.Is(err, ErrNoSuchShard) {
		t.Fatalf("plan for shard 1 of a one-shard cluster: %v, want ErrNoSuchShard", err)
	}
	retry.SucceedsSoon(t, "the survivor applied what was committed", func() error { return c.caughtUp(0, survivor) })
	before := survivor.Replica(0).FSM().AppliedVersion()

	// Two hosts are lost with their disks; their registrations end.
	for _, h := range c.hosts[1:] {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(h.cfg.DataDir); err != nil {
			t.Fatal(err)
		}
		if err := regs[h].Close(); err != nil {
			t.Fatal(err)
		}
	}

	var plan RecoveryPlan
	retry.SucceedsSoon(t, "the survivor no longer knows a leader", func() error {
		plan, err = survivor.Recovery().Plan(ctx, 0, "n0")
		if err != nil && !errors.Is(err, ErrShardHasQuorum) {
			return fmt.Errorf("%w: %w", retry.ErrStop, err)
		}
		return err
	})
	if len(plan.Members) != 3 || plan.Epoch != 1 || plan.LastIndex < plan.AppliedIndex || plan.AppliedVersion != before {
		t.Fatalf("plan %+v, want 3 members, epoch 1, applied version %d", plan, before)
	}
	res, err := survivor.Recovery().Recover(ctx, 0, "n0")
	if err != nil {
		t.Fatal(err)
	}
	if res.Recovered.LastIndex < plan.LastIndex || res.Recovered.Version < before {
		t.Fatalf("recovered %+v, want at least index %d and version %d", res.Recovered, plan.LastIndex, before)
	}
	r := survivor.Replica(0)
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	members, err := r.Configuration()
	if err != nil || !slices.Equal(members, []shard.Member{{ID: "n0", Address: survivor.cluster.cfg.Peer.Addr().String(), Voter: true}}) {
		t.Fatalf("configuration %+v %v, want n0 alone", members, err)
	}
	if got := r.FSM().AppliedVersion(); got < before {
		t.Fatalf("applied version %d after recovery, want at least %d", got, before)
	}
	res2, err := core.Propose(ctx, meta.Header{}, meta.Put{Agent: "a", Workspace: "w", Path: "after", Size: 1,
		Segments: []meta.Segment{{Size: 1, Inline: []byte("y")}}})
	if err != nil || res2.Err != nil {
		t.Fatalf("write after recovery: %v %v", err, res2.Err)
	}
	sets, err := plane.ReplicaSets(ctx)
	if err != nil || !slices.Equal(sets[0].Voters, []string{"n0"}) || len(sets[0].Nonvoters) != 0 || sets[0].Epoch != 1 {
		t.Fatalf("record %+v %v, want n0 alone at epoch 1", sets[0], err)
	}
	if got := readEpoch(survivor.replicas.dir(0)); got != 1 {
		t.Fatalf("the survivor's directory is at epoch %d, want 1", got)
	}
	if _, err := survivor.Recovery().Recover(ctx, 0, "n0"); !errors.Is(err, ErrShardHasQuorum) {
		t.Fatalf("recover again: %v, want ErrShardHasQuorum (it has a leader)", err)
	}
}
