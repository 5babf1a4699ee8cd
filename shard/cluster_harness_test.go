package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/mux"
)

// A test cluster: real Raft groups between "nodes" in this process, each node with its own
// mux.Mux on 127.0.0.1 carrying the Raft traffic of all its shards. Node-to-node dials go
// through faultNet, which can cut a node off.

type testNode struct {
	name   string
	id     string // Raft server id (a UUID, as a node's data directory holds)
	dir    string
	addr   string // advertised peer address, kept across restarts
	mux    *mux.Mux
	shards map[string]*Shard
	up     bool
}

type testCluster struct {
	t      *testing.T
	mu     sync.Mutex // guards every node's shards and up, read by writer goroutines
	net    *faultNet
	nodes  []*testNode
	shards []string
	tweak  func(*Config)
}

// newCluster starts voters nodes that bootstrap every shard in shards together.
func newCluster(t *testing.T, voters int, shards []string, tweak func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, net: newFaultNet(), shards: shards, tweak: tweak}
	t.Cleanup(c.closeAll)
	for i := 0; i < voters; i++ {
		c.addNode()
	}
	var boot []Member
	for _, n := range c.nodes {
		boot = append(boot, Member{ID: n.id, Address: n.addr, Voter: true})
	}
	for _, n := range c.nodes {
		for _, sh := range shards {
			c.openShard(n, sh, boot)
		}
	}
	return c
}

// addNode starts a node's mux (no shards yet).
func (c *testCluster) addNode() *testNode {
	c.t.Helper()
	n := &testNode{name: fmt.Sprintf("n%d", len(c.nodes)), id: uuid.NewString(), dir: c.t.TempDir(), shards: map[string]*Shard{}}
	c.listen(n, "127.0.0.1:0")
	n.addr = n.mux.Addr().String()
	c.net.own(n.addr, n.name)
	c.nodes = append(c.nodes, n)
	return n
}

func (c *testCluster) listen(n *testNode, addr string) {
	c.t.Helper()
	m, err := mux.Listen(addr, mux.Config{DialContext: c.net.dialer(n.name), Logger: testLogger()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	n.mux = m
	n.up = true
	c.mu.Unlock()
}

func (c *testCluster) config(n *testNode, shardID string, boot []Member) Config {
	cfg := Config{
		Dir:          filepath.Join(n.dir, "shards", shardID),
		NodeID:       n.id,
		Peer:         n.mux,
		ShardID:      shardID,
		Bootstrap:    boot,
		Logger:       testLogger(),
		TickInterval: time.Hour, // no background proposals in the middle of a comparison
	}
	if c.tweak != nil {
		c.tweak(&cfg)
	} else {
		loopbackTimeouts(&cfg)
	}
	return cfg
}

func (c *testCluster) openShard(n *testNode, shardID string, boot []Member) *Shard {
	c.t.Helper()
	s, err := Open(c.config(n, shardID, boot))
	if err != nil {
		c.t.Fatalf("open %s on %s: %v", shardID, n.name, err)
	}
	c.mu.Lock()
	n.shards[shardID] = s
	c.mu.Unlock()
	return s
}

// stop kills a node: its shards and its peer port close (a crash, as far as the others
// can tell: connections drop, nothing is handed over).
func (c *testCluster) stop(n *testNode) {
	c.t.Helper()
	c.mu.Lock()
	shards := n.shards
	n.shards = map[string]*Shard{}
	n.up = false
	c.mu.Unlock()
	for id, s := range shards {
		if err := s.Close(); err != nil {
			c.t.Errorf("close %s on %s: %v", id, n.name, err)
		}
	}
	if err := n.mux.Close(); err != nil {
		c.t.Errorf("close mux of %s: %v", n.name, err)
	}
}

// start restarts a stopped node on its old address with its old directories.
func (c *testCluster) start(n *testNode) {
	c.t.Helper()
	c.listen(n, n.addr)
	for _, sh := range c.shards {
		c.openShard(n, sh, nil)
	}
}

func (c *testCluster) closeAll() {
	for _, n := range c.nodes {
		c.mu.Lock()
		up := n.up
		c.mu.Unlock()
		if up {
			c.stop(n)
		}
	}
}

// replicas returns the open replicas of shardID.
func (c *testCluster) replicas(shardID string) map[*testNode]*Shard {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[*testNode]*Shard{}
	for _, n := range c.nodes {
		if s, ok := n.shards[shardID]; ok && n.up {
			out[n] = s
		}
	}
	return out
}

// leader waits for a ready leader of shardID among the open replicas.
func (c *testCluster) leader(shardID string) (*testNode, *Shard) {
	c.t.Helper()
	var ln *testNode
	var ls *Shard
	retry.SucceedsSoon(c.t, "a ready leader of "+shardID, func() error {
		for n, s := range c.replicas(shardID) {
			if s.Ready() {
				ln, ls = n, s
				return nil
			}
		}
		return errors.New("no ready replica")
	})
	return ln, ls
}

// onLeader runs op on the ready leader of shardID, again on whichever replica leads while
// op answers ErrNotLeader or ErrTimeout (leadership moved under a loaded machine); op must
// be idempotent. Any other error fails the test.
func (c *testCluster) onLeader(shardID string, op func(*testNode, *Shard) error) {
	c.t.Helper()
	retry.SucceedsSoon(c.t, "an operation on the leader of "+shardID, func() error {
		n, s := c.leader(shardID)
		err := op(n, s)
		if err != nil && !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrTimeout) {
			c.t.Fatalf("on the leader %s of %s: %v", n.name, shardID, err)
		}
		return err
	})
}

// propose sends b to whichever replica of shardID leads, retrying while none can take it.
// An ErrTimeout (outcome unknown) is returned as is.
func (c *testCluster) propose(ctx context.Context, shardID string, b meta.Body) (meta.Result, error) {
	for {
		for _, s := range c.replicas(shardID) {
			if !s.Ready() {
				continue
			}
			res, err := s.Propose(ctx, meta.Header{}, b)
			if errors.Is(err, ErrNotLeader) || errors.Is(err, ErrClosed) {
				continue
			}
			return res, err
		}
		select {
		case <-ctx.Done():
			return meta.Result{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// mustPropose proposes and fails the test on any error.
func (c *testCluster) mustPropose(shardID string, b meta.Body) meta.Result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		res, err := c.propose(ctx, shardID, b)
		if errors.Is(err, ErrTimeout) && ctx.Err() == nil {
			// Leadership moved while the entry was in flight (a loaded machine can miss a
			// heartbeat): the outcome is unknown. The test's puts are upserts, so send it again.
			continue
		}
		if err != nil || res.Err != nil {
			c.t.Fatalf("propose to %s: %v %v", shardID, err, res.Err)
		}
		return res
	}
}

// converged waits until every open replica of shardID has applied the same version and
// holds byte-identical state, and returns that version.
func (c *testCluster) converged(shardID string) uint64 {
	c.t.Helper()
	var version uint64
	retry.SucceedsSoon(c.t, shardID+" replicas converge", func() error {
		var digest meta.Digest
		first := true
		for n, s := range c.replicas(shardID) {
			v, d := s.FSM().AppliedVersion(), s.FSM().StateDigest()
			if first {
				version, digest, first = v, d, false
				continue
			}
			if v != version || d != digest {
				return fmt.Errorf("%s at version %d differs (other at %d)", n.name, v, version)
			}
		}
		return nil
	})
	return version
}

// loopbackTimeouts is the Raft tuning of the test clusters: every node is in this process
// and talks over loopback, so heartbeats arrive in well under a millisecond and a 200ms
// heartbeat timeout leaves a wide margin for scheduling and the race detector.
func loopbackTimeouts(c *Config) {
	c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
}

func testLogger() *slog.Logger {
	if os.Getenv("CAIRN_TEST_RAFT_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// faultNet dials for the nodes of a test cluster and can isolate a node: its connections
// drop and dials from or to it fail until it is healed.
type faultNet struct {
	mu    sync.Mutex
	owner map[string]string // peer address → node name
	cut   map[string]bool
	conns map[*faultConn]struct{}
}

func newFaultNet() *faultNet {
	return &faultNet{owner: map[string]string{}, cut: map[string]bool{}, conns: map[*faultConn]struct{}{}}
}

func (f *faultNet) own(addr, node string) {
	f.mu.Lock()
	f.owner[addr] = node
	f.mu.Unlock()
}

func (f *faultNet) dialer(from string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		f.mu.Lock()
		to := f.owner[addr]
		blocked := f.cut[from] || f.cut[to]
		f.mu.Unlock()
		if blocked {
			return nil, fmt.Errorf("faultnet: %s → %s is partitioned", from, to)
		}
		raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := &faultConn{Conn: raw, f: f, from: from, to: to}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.cut[from] || f.cut[to] {
			raw.Close()
			return nil, fmt.Errorf("faultnet: %s → %s is partitioned", from, to)
		}
		f.conns[c] = struct{}{}
		return c, nil
	}
}

// isolate cuts node off from every other node, both ways.
func (f *faultNet) isolate(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut[node] = true
	for c := range f.conns {
		if c.from == node || c.to == node {
			c.Conn.Close() // the far end reads EOF
			delete(f.conns, c)
		}
	}
}

func (f *faultNet) heal(node string) {
	f.mu.Lock()
	delete(f.cut, node)
	f.mu.Unlock()
}

type faultConn struct {
	net.Conn
	f        *faultNet
	from, to string
}

func (c *faultConn) Close() error {
	c.f.mu.Lock()
	delete(c.f.conns, c)
	c.f.mu.Unlock()
	return c.Conn.Close()
}
