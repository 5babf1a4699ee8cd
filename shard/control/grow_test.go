package control

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
)

func TestGrowVersionIsOneThisBinaryPublishes(t *testing.T) {
	if meta.ClusterVersion < GrowVersion {
		t.Fatalf("meta.ClusterVersion %d is below GrowVersion %d: this binary's nodes would hold every grow back",
			meta.ClusterVersion, GrowVersion)
	}
}

func TestGrowShards(t *testing.T) {
	etcd := startEtcd(t, 1)
	p := newPlane(t, etcd.client(), testConfig(t))
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := p.GrowShards(ctx, 1, 0); !errors.Is(err, ErrClusterNotCreated) {
		t.Fatalf("grow without a cluster: %v, want ErrClusterNotCreated", err)
	}
	if _, err := p.CreateCluster(ctx, ClusterSpec{Shards: 2, Replication: 3}); err != nil {
		t.Fatal(err)
	}

	old, err := p.Register(ctx, "old", NodeInfo{PeerAddr: "old:7000", ClusterVersion: GrowVersion - 1})
	if err != nil {
		t.Fatal(err)
	}
	var ve *VersionError
	if _, err := p.GrowShards(ctx, 2, 2); !errors.Is(err, ErrUpgradeInProgress) || !errors.As(err, &ve) || ve.Node != "old" {
		t.Fatalf("grow with a node of version %d: %v, want a VersionError naming it", GrowVersion-1, err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	newer, err := p.Register(ctx, "new", NodeInfo{PeerAddr: "new:7000", ClusterVersion: GrowVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { newer.Close() })

	for _, tt := range []struct {
		name        string
		add, expect int
		want        error
	}{
		{"no shard to add is refused", 0, 0, ErrInvalidArgument},
		{"past the maximum count is refused", MaxShards, 0, ErrInvalidArgument},
		{"another expected count is refused", 1, 3, ErrShardCountChanged},
	} {
		if _, err := p.GrowShards(ctx, tt.add, tt.expect); !errors.Is(err, tt.want) {
			t.Fatalf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if c, err := p.Cluster(ctx); err != nil || c.Shards != 2 || c.InitialShards != 0 {
		t.Fatalf("after refused grows: %+v, %v; want 2 shards, never grown", c, err)
	}

	got, err := p.GrowShards(ctx, 2, 2)
	if err != nil || got.Shards != 4 || got.Created() != 2 {
		t.Fatalf("grow by 2: %+v, %v; want 4 shards created with 2", got, err)
	}
	if _, err := p.GrowShards(ctx, 2, 2); !errors.Is(err, ErrShardCountChanged) {
		t.Fatalf("the same grow again: %v, want ErrShardCountChanged (it must not add twice)", err)
	}
	if c, err := p.Cluster(ctx); err != nil || c.Shards != 4 || c.InitialShards != 2 {
		t.Fatalf("the record: %+v, %v; want 4 shards, 2 at creation", c, err)
	}

	// Nodes started with the count at creation, or the count now, join; another is refused.
	for _, n := range []int{2, 4, 0} {
		if c, err := p.CreateCluster(ctx, ClusterSpec{Shards: n}); err != nil || c.Shards != 4 {
			t.Fatalf("join with --shards %d: %+v, %v", n, c, err)
		}
	}
	var me *MismatchError
	if _, err := p.CreateCluster(ctx, ClusterSpec{Shards: 3}); !errors.As(err, &me) || me.Field != "shards" || me.Existing != "2 or 4" {
		t.Fatalf("join with --shards 3: %v, want a mismatch on shards naming 2 or 4", err)
	}

	// Concurrent grows each add what they ask: none is lost.
	var g errgroup.Group
	for range 4 {
		g.Go(func() error {
			_, err := p.GrowShards(ctx, 1, 0)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if c, err := p.Cluster(ctx); err != nil || c.Shards != 8 || c.Created() != 2 {
		t.Fatalf("after four concurrent grows by one: %+v, %v; want 8 shards, 2 at creation", c, err)
	}
}

func TestPlacementUsesGrownShardsOnlyOnceOpen(t *testing.T) {
	etcd := startEtcd(t, 1)
	cfg := testConfig(t)
	pl := newPlacement(t, etcd.client(), cfg, 2)
	other := newPlacement(t, etcd.client(), cfg, 2) // a node that does not follow the record
	p := pl.p
	ctx := ctxTimeout(t, 30*time.Second)
	for i := range 4 {
		if _, _, err := pl.Place(ctx, fmt.Sprintf("before-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := p.GrowShards(ctx, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	closed, err := p.ClosedShards(ctx, c)
	if err != nil || len(closed) != 2 || !closed[2] || !closed[3] {
		t.Fatalf("closed shards after the grow: %v, %v; want 2 and 3", closed, err)
	}
	for i := range 4 {
		s, _, err := pl.Place(ctx, fmt.Sprintf("closed-%d", i))
		if err != nil || s > 1 {
			t.Fatalf("a root placed while the new shards are closed went to shard %d (%v)", s, err)
		}
	}
	// The controller opens shard 2 (here by hand: its load counter).
	if _, err := p.cli.Put(ctx, p.k.load(2), "0"); err != nil {
		t.Fatal(err)
	}
	if closed, err := p.ClosedShards(ctx, c); err != nil || len(closed) != 1 || !closed[3] {
		t.Fatalf("closed shards after opening 2: %v, %v; want 3", closed, err)
	}
	// The empty shard fills first: every new root goes to it until it holds as many as the
	// least loaded old one (4 roots each on 0 and 1).
	for i := range 4 {
		s, _, err := pl.Place(ctx, fmt.Sprintf("open-%d", i))
		if err != nil || s != 2 {
			t.Fatalf("root %d after opening shard 2 went to shard %d (%v), want 2", i, s, err)
		}
	}
	// A node that had read 2 shards resolves a root on shard 2 (it reads the record again).
	if s, err := other.Resolve(ctx, "open-0"); err != nil || s != 2 {
		t.Fatalf("a node that knew 2 shards resolves a root on shard 2: %d, %v", s, err)
	}
	if other.Shards() != 4 {
		t.Fatalf("that node now knows %d shards, want 4", other.Shards())
	}
}

func TestControllerBuildsAndOpensGrownShards(t *testing.T) {
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: 2, Replication: 3}, 60*time.Second)
	for _, id := range []string{"n1", "n2", "n3"} {
		r, err := p.Register(ctx, id, NodeInfo{PeerAddr: id + ":7000", ClusterVersion: GrowVersion})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
	}
	admin := newFakeAdmin(10)
	c, err := p.NewController(admin, controllerConfig("n1"))
	if err != nil {
		t.Fatal(err)
	}
	runController(t, c)
	converged := func(shards int) func() error {
		return func() error {
			records, err := p.ReplicaSets(ctx)
			if err != nil {
				return err
			}
			return admin.converged(records, shards, 3, "")
		}
	}
	retry.Within(t, 30*time.Second, "two shards of three voters", converged(2))

	grown, err := p.GrowShards(ctx, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	retry.Within(t, 30*time.Second, "the grown shards open", func() error {
		closed, err := p.ClosedShards(ctx, grown)
		if err != nil || len(closed) > 0 {
			return fmt.Errorf("closed %v, %v", closed, err)
		}
		// Open only with their voters (voters never leave in this test, so what holds now
		// held when they opened).
		admin.mu.Lock()
		defer admin.mu.Unlock()
		for s := 2; s < 4; s++ {
			voters := 0
			for _, m := range admin.shards[s].servers {
				if m.Voter {
					voters++
				}
			}
			if voters != 3 {
				return fmt.Errorf("%w: shard %d is open with %d voters", retry.ErrStop, s, voters)
			}
		}
		return nil
	})
	retry.Within(t, 30*time.Second, "four shards of three voters", converged(4))
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if len(admin.violations) > 0 {
		t.Fatalf("the controller broke rules: %v", admin.violations)
	}
}
