package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/mux"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/corestest"
)

// The Cores conformance suite (workbench/corestest) against the host's cores: the
// embedded default, and a cluster of three nodes in this process whose roots are either
// placed before their first write (every call meets a rootCore) or not (the first calls
// meet an unplacedCore, whose first write places the root).

func TestCoresSuiteEmbeddedHost(t *testing.T) {
	corestest.Run(t, func(t *testing.T) corestest.Harness {
		return embeddedHarness{openEmbeddedHost(t, 10*time.Second)}
	})
}

// The shared harness has two shards, so that roots live on groups with different leaders;
// a fault subtest's harness serves one root, and has one shard.
func TestCoresSuiteClusterPlacedRoots(t *testing.T) {
	shards := 2
	corestest.Run(t, func(t *testing.T) corestest.Harness {
		c := newTestCluster(t, shards, true)
		shards = 1
		return c
	})
}

func TestCoresSuiteClusterUnplacedRoots(t *testing.T) {
	corestest.Run(t, func(t *testing.T) corestest.Harness { return unplacedCluster{newTestCluster(t, 2, false)} })
}

var quietLog = slog.New(slog.DiscardHandler)

// openEmbeddedHost opens an embedded host (node n0, logging nowhere) on a temporary data
// directory, closed when the test ends, and waits up to ready for its shard to be ready.
func openEmbeddedHost(t *testing.T, ready time.Duration) *Host {
	t.Helper()
	h, err := Open(t.Context(), Config{DataDir: t.TempDir(), NodeID: "n0", Logger: quietLog})
	if err != nil {
		t.Fatalf("open the embedded host: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), ready)
	defer cancel()
	if err := h.WaitReady(ctx); err != nil {
		t.Fatalf("the embedded host did not become ready within %v: %v", ready, err)
	}
	return h
}

// testCores is a host's workbench.Cores (api/server's, without the server).
type testCores struct{ h *Host }

func (c testCores) For(_ context.Context, agent string) (workbench.Core, error) {
	core, err := c.h.For(agent)
	if err != nil {
		return nil, err
	}
	return core, nil
}

type embeddedHarness struct{ h *Host }

func (e embeddedHarness) Nodes() int                { return 1 }
func (e embeddedHarness) Cores(int) workbench.Cores { return testCores(e) }

// clusterNodes is the number of nodes of a testCluster; each has a replica of every shard.
const clusterNodes = 3

// testCluster is a cluster of hosts in this process, as openCluster builds them but for
// etcd: the registry is fixed, the placement shared in memory (memPlacement), no leader
// hint is published (every node has a replica of every shard, whose own view of its leader
// routes), and the groups are formed as the controller forms them (bootstrap on one node,
// the others added as non-voters, then promoted). Peer traffic goes over loopback Muxes
// through a faultNet.
type testCluster struct {
	net       *faultNet
	placement *memPlacement
	hosts     []*Host
}

// unplacedCluster is a testCluster whose roots have no shard until their first write. It
// injects no faults: a root is placed by its first write, and every call after that meets
// the placed roots' cores, which the placed-roots run puts through the faults.
type unplacedCluster struct{ c *testCluster }

func (u unplacedCluster) Nodes() int                           { return u.c.Nodes() }
func (u unplacedCluster) Cores(i int) workbench.Cores          { return u.c.Cores(i) }
func (u unplacedCluster) Leader(t *testing.T, root string) int { return u.c.Leader(t, root) }
func (u unplacedCluster) Forwarded(i int) int                  { return u.c.Forwarded(i) }

func (u unplacedCluster) Placed(root string) bool {
	_, ok := u.c.placement.lookup(root)
	return ok
}

// newTestCluster returns a cluster of clusterNodes nodes and shards shards; shard i is
// founded by node i (modulo the nodes), so the shards start with different leaders.
func newTestCluster(t testing.TB, shards int, placeOnSight bool) *testCluster {
	t.Helper()
	return newTestClusterFSM(t, shards, placeOnSight, meta.Options{})
}

// newTestClusterFSM is newTestCluster whose replicas take fsm as their metadata options.
func newTestClusterFSM(t testing.TB, shards int, placeOnSight bool, fsm meta.Options) *testCluster {
	t.Helper()
	c := &testCluster{net: newFaultNet(), placement: newMemPlacement(shards, placeOnSight)}
	var muxes []*mux.Mux
	t.Cleanup(func() {
		c.net.releaseAll()
		var wg sync.WaitGroup
		for _, h := range c.hosts {
			wg.Go(func() { h.Close() })
		}
		wg.Wait()
		for _, m := range muxes {
			m.Close()
		}
	})
	nodes := control.NodeSet{}
	for i := range clusterNodes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		m, err := mux.New(c.net.listener(i, ln), mux.Config{DialContext: c.net.dialer(i), Logger: quietLog})
		if err != nil {
			ln.Close()
			t.Fatal(err)
		}
		muxes = append(muxes, m)
		h, wctx := newHost(Config{DataDir: t.TempDir(), NodeID: fmt.Sprintf("n%d", i), Logger: quietLog, FSM: fsm,
			Cluster: &ClusterConfig{Peer: m}})
		c.hosts = append(c.hosts, h)
		h.placement = c.placement
		h.goRun(func() { h.watchLeadership(wctx) })
		if err := h.ServePeer(http.NotFoundHandler()); err != nil {
			t.Fatal(err)
		}
		nodes[h.NodeID()] = control.NodeInfo{PeerAddr: m.Addr().String(), ClusterVersion: meta.ClusterVersion}
	}
	for _, h := range c.hosts {
		h.cluster.storeNodes(nodes)
	}
	var wg sync.WaitGroup
	errs := make([]error, shards)
	for id := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[id] = c.formGroup(t.Context(), id, id%clusterNodes)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return c
}

// formGroup forms shard id's group as the controller does: founder bootstraps it alone,
// then every other node is added as a non-voter and promoted once it caught up. Each
// change is retried at the current leader while it fails retryably (a loaded machine may
// cost the young group its leader).
func (c *testCluster) formGroup(ctx context.Context, id, founder int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	f := c.hosts[founder]
	if _, err := f.adminLocal(ctx, adminCall{Op: "bootstrap", Fence: 1, Shard: id, Addr: f.cluster.cfg.Peer.Addr().String()}); err != nil {
		return fmt.Errorf("shard %d: bootstrap on %s: %w", id, f.NodeID(), err)
	}
	for _, h := range c.hosts {
		if h == f {
			continue
		}
		if _, err := h.replicas.ensure(id); err != nil {
			return err
		}
		if err := c.onLeader(ctx, id, "add", h); err != nil {
			return err
		}
		if _, err := retry.Until(20*time.Second, func() error { return c.caughtUp(id, h) }); err != nil {
			return err
		}
		if err := c.onLeader(ctx, id, "promote", h); err != nil {
			return err
		}
	}
	return nil
}

// onLeader runs the membership change op of node on shard id's ready leader, retrying
// while there is none or the change fails retryably.
func (c *testCluster) onLeader(ctx context.Context, id int, op string, node *Host) error {
	_, err := retry.Until(20*time.Second, func() error {
		l, err := c.readyLeader(id, -1)
		if err != nil {
			return err
		}
		_, err = c.hosts[l].adminLocal(ctx, adminCall{Op: op, Fence: 1, Shard: id, Node: node.NodeID(),
			Addr: node.cluster.cfg.Peer.Addr().String()})
		if err != nil && !errors.Is(err, shard.ErrNotLeader) && !errors.Is(err, shard.ErrTimeout) {
			return fmt.Errorf("%w: %w", retry.ErrStop, err)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("shard %d: %s %s: %w", id, op, node.NodeID(), err)
	}
	return nil
}

// caughtUp reports (nil) whether node's replica of shard id applied what its ready leader
// committed.
func (c *testCluster) caughtUp(id int, node *Host) error {
	l, err := c.readyLeader(id, -1)
	if err != nil {
		return err
	}
	commit, applied := c.hosts[l].Replica(id).Stats().CommitIndex, node.Replica(id).Stats().AppliedIndex
	if applied < commit {
		return fmt.Errorf("shard %d: %s applied index %d, the leader committed %d", id, node.NodeID(), applied, commit)
	}
	return nil
}

func (c *testCluster) Nodes() int                  { return len(c.hosts) }
func (c *testCluster) Cores(i int) workbench.Cores { return testCores{c.hosts[i]} }

// shardOf returns root's shard, failing t when it has none.
func (c *testCluster) shardOf(t *testing.T, root string) int {
	t.Helper()
	id, ok := c.placement.lookup(root)
	if !ok {
		t.Fatalf("root %q has no shard", root)
	}
	return id
}

// readyLeader returns the node whose replica of shard id is ready, not counting skip
// (-1: none); with two (a deposed one still within its lease), the one in the later
// term.
func (c *testCluster) readyLeader(id, skip int) (int, error) {
	leader, term := -1, uint64(0)
	for i, h := range c.hosts {
		if r := h.Replica(id); i != skip && r != nil && r.Ready() {
			if st := r.Stats(); leader < 0 || st.Term > term {
				leader, term = i, st.Term
			}
		}
	}
	if leader < 0 {
		return -1, fmt.Errorf("shard %d has no ready leader", id)
	}
	return leader, nil
}

func (c *testCluster) Leader(t *testing.T, root string) int {
	t.Helper()
	return c.shardLeader(t, c.shardOf(t, root))
}

// shardLeader returns the node whose replica of shard id is its ready leader, waiting for
// one.
func (c *testCluster) shardLeader(t *testing.T, id int) int {
	t.Helper()
	var leader int
	retry.Within(t, 20*time.Second, fmt.Sprintf("a ready leader of shard %d", id), func() (err error) {
		leader, err = c.readyLeader(id, -1)
		return err
	})
	return leader
}

func (c *testCluster) MoveLeader(t *testing.T, root string) int {
	t.Helper()
	return c.moveShardLeader(t, c.shardOf(t, root))
}

// moveShardLeader hands shard id's leadership to another node and returns it once it is
// ready.
func (c *testCluster) moveShardLeader(t *testing.T, id int) int {
	t.Helper()
	old := c.shardLeader(t, id)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := c.hosts[old].Replica(id).TransferLeadership(ctx); err != nil {
		t.Fatalf("shard %d: leadership transfer from node %d: %v", id, old, err)
	}
	var leader int
	retry.Within(t, 20*time.Second, fmt.Sprintf("a new ready leader of shard %d", id), func() (err error) {
		leader, err = c.readyLeader(id, old)
		return err
	})
	return leader
}

func (c *testCluster) Forwarded(i int) int {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	return c.net.forwarded[i]
}

func (c *testCluster) Lag(t *testing.T, i int) (resume func()) {
	c.net.set(func() { c.net.lagging[i] = true })
	var once sync.Once
	resume = func() { once.Do(func() { c.net.set(func() { delete(c.net.lagging, i) }) }) }
	t.Cleanup(resume)
	return resume
}

func (c *testCluster) LoseLeaderMidCall(t *testing.T, root string) (recover func()) {
	t.Helper()
	id := c.shardOf(t, root)
	leader := c.Leader(t, root)
	c.net.set(func() { c.net.trap = &proposeTrap{node: leader, shard: id} })
	var once sync.Once
	recover = func() {
		once.Do(func() {
			c.net.set(func() {
				c.net.trap = nil
				delete(c.net.frozen, leader)
			})
		})
	}
	t.Cleanup(recover)
	return recover
}

// memPlacement is the control plane's placement, shared by the nodes of a testCluster:
// a root gets the least-loaded shard when placed, and keeps it. With placeOnSight, a root
// is placed the first time any node looks it up, so calls meet placed roots only.
type memPlacement struct {
	mu           sync.Mutex
	placeOnSight bool
	roots        map[string]int
	load         []int
}

func newMemPlacement(shards int, placeOnSight bool) *memPlacement {
	return &memPlacement{placeOnSight: placeOnSight, roots: map[string]int{}, load: make([]int, shards)}
}

func (p *memPlacement) lookup(root string) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.roots[root]
	return id, ok
}

// place returns root's shard, placing it first if it has none.
func (p *memPlacement) place(root string) (id int, created bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.roots[root]; ok {
		return id, false
	}
	for i, n := range p.load {
		if n < p.load[id] {
			id = i
		}
	}
	p.roots[root] = id
	p.load[id]++
	return id, true
}

func (p *memPlacement) Cached(root string) (int, bool) {
	if p.placeOnSight {
		id, _ := p.place(root)
		return id, true
	}
	return p.lookup(root)
}

func (p *memPlacement) Resolve(_ context.Context, root string) (int, error) {
	if id, ok := p.Cached(root); ok {
		return id, nil
	}
	return 0, fmt.Errorf("root %q: %w", root, control.ErrRootNotPlaced)
}

func (p *memPlacement) Place(_ context.Context, root string) (int, bool, error) {
	id, created := p.place(root)
	return id, created, nil
}

func (p *memPlacement) Close() {}

var (
	_ Placement         = (*memPlacement)(nil)
	_ corestest.Cluster = (*testCluster)(nil)
	_ corestest.Placer  = unplacedCluster{}
	_ workbench.Cores   = testCores{}
	_ corestest.Harness = embeddedHarness{}
)

func (p *memPlacement) Refresh(ctx context.Context, root string) (int, error) {
	return p.Resolve(ctx, root)
}
