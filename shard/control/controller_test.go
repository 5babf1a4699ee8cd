package control

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/internal/retry"
)

// fakeAdmin is an in-memory stand-in for the node's shard host, for unit tests of the
// controller only: each shard is a Raft configuration with a leader; a crashed node's
// replicas stop answering, and a new leader is chosen among live voters when they are a
// majority. A new non-voter starts far behind and catches up a little on every status
// report. It records every rule the controller must never break.
type fakeAdmin struct {
	mu         sync.Mutex
	shards     map[int]*fakeShard
	down       map[string]bool
	maxLag     int64
	maxFence   int64
	violations []string
}

type fakeShard struct {
	leader  string
	servers []Server
}

func newFakeAdmin(maxLag int64) *fakeAdmin {
	return &fakeAdmin{shards: map[int]*fakeShard{}, down: map[string]bool{}, maxLag: maxLag}
}

func (f *fakeAdmin) violate(format string, args ...any) {
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
}

// leaderOf returns the shard with a live leader, electing one if needed; nil if the shard
// does not exist or has no live majority.
func (f *fakeAdmin) leaderOf(shard int) *fakeShard {
	sh := f.shards[shard]
	if sh == nil {
		return nil
	}
	if !f.down[sh.leader] {
		return sh
	}
	var voters, liveVoters []string
	for _, s := range sh.servers {
		if s.Voter {
			voters = append(voters, s.ID)
			if !f.down[s.ID] {
				liveVoters = append(liveVoters, s.ID)
			}
		}
	}
	if 2*len(liveVoters) <= len(voters) {
		return nil
	}
	sh.leader = liveVoters[0]
	return sh
}

func (f *fakeAdmin) Status(_ context.Context, shard int) (ShardStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sh := f.leaderOf(shard)
	if sh == nil {
		return ShardStatus{}, errors.New("fake: no leader")
	}
	st := ShardStatus{Leader: sh.leader}
	for i, s := range sh.servers {
		if f.down[s.ID] {
			s.Lag = -1
		}
		st.Servers = append(st.Servers, s)
		if !f.down[s.ID] && sh.servers[i].Lag > 0 { // catching up
			sh.servers[i].Lag /= 4
		}
	}
	return st, nil
}

func (f *fakeAdmin) Bootstrap(_ context.Context, fence int64, shard int, node, addr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkFence(fence)
	if f.down[node] {
		return errors.New("fake: node down")
	}
	if !strings.HasSuffix(addr, ":7000") {
		f.violate("bootstrap %d on %s with address %q", shard, node, addr)
	}
	if f.shards[shard] == nil {
		f.shards[shard] = &fakeShard{leader: node, servers: []Server{{ID: node, Voter: true}}}
	}
	return nil
}

func (f *fakeAdmin) AddNonvoter(_ context.Context, fence int64, shard int, node, addr string) error {
	return f.onLeader(fence, shard, func(sh *fakeShard) error {
		if !strings.HasSuffix(addr, ":7000") {
			f.violate("add %s to %d with address %q", node, shard, addr)
		}
		if f.down[node] {
			f.violate("added crashed node %s to shard %d", node, shard)
		}
		for _, s := range sh.servers {
			if s.ID == node {
				return nil
			}
		}
		sh.servers = append(sh.servers, Server{ID: node, Lag: 5000})
		return nil
	})
}

func (f *fakeAdmin) Promote(_ context.Context, fence int64, shard int, node string) error {
	return f.onLeader(fence, shard, func(sh *fakeShard) error {
		for i, s := range sh.servers {
			if s.ID == node {
				if !s.Voter && (s.Lag < 0 || s.Lag > f.maxLag) {
					f.violate("promoted %s on shard %d with lag %d", node, shard, s.Lag)
				}
				sh.servers[i].Voter = true
				return nil
			}
		}
		f.violate("promoted %s on shard %d, which it is not a member of", node, shard)
		return errors.New("fake: not a member")
	})
}

func (f *fakeAdmin) Remove(_ context.Context, fence int64, shard int, node string) error {
	return f.onLeader(fence, shard, func(sh *fakeShard) error {
		if node == sh.leader {
			f.violate("removed leader %s of shard %d", node, shard)
		}
		if !f.down[node] {
			f.violate("removed live node %s from shard %d", node, shard)
		}
		sh.servers = slices.DeleteFunc(sh.servers, func(s Server) bool { return s.ID == node })
		return nil
	})
}

// onLeader runs a membership change on shard's group as its leader would: under f's lock,
// after checking the fence, and failing when the shard has no live leader.
func (f *fakeAdmin) onLeader(fence int64, shard int, change func(*fakeShard) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkFence(fence)
	sh := f.leaderOf(shard)
	if sh == nil {
		return errors.New("fake: no leader")
	}
	return change(sh)
}

// checkFence records a call from an older controller term than one already seen.
func (f *fakeAdmin) checkFence(fence int64) {
	if fence <= 0 || fence < f.maxFence {
		f.violate("call with fence %d after fence %d", fence, f.maxFence)
	}
	f.maxFence = max(f.maxFence, fence)
}

func (f *fakeAdmin) crash(node string) {
	f.mu.Lock()
	f.down[node] = true
	f.mu.Unlock()
}

// converged checks that every shard has exactly want voters in Raft and in its record,
// none of them in avoid, and no non-voters.
func (f *fakeAdmin) converged(records map[int]ReplicaSet, shards, want int, avoid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range shards {
		sh := f.shards[s]
		if sh == nil {
			return fmt.Errorf("shard %d: no Raft group", s)
		}
		var voters []string
		for _, m := range sh.servers {
			if !m.Voter {
				return fmt.Errorf("shard %d: non-voter %s left", s, m.ID)
			}
			voters = append(voters, m.ID)
		}
		rec := records[s]
		if len(voters) != want || slices.Contains(voters, avoid) {
			return fmt.Errorf("shard %d: Raft voters %v, want %d without %q", s, voters, want, avoid)
		}
		if !sameSet(rec, ReplicaSet{Voters: voters}) {
			return fmt.Errorf("shard %d: record %v/%v, Raft voters %v", s, rec.Voters, rec.Nonvoters, voters)
		}
	}
	return nil
}

// registerNodes registers nodes ids (peer address "<id>:7000") until t ends.
func registerNodes(t *testing.T, ctx context.Context, p *Plane, ids ...string) map[string]*Registration {
	t.Helper()
	regs := map[string]*Registration{}
	for _, id := range ids {
		r, err := p.Register(ctx, id, NodeInfo{PeerAddr: id + ":7000"})
		if err != nil {
			t.Fatal(err)
		}
		regs[id] = r
		t.Cleanup(func() { r.Close() })
	}
	return regs
}

func controllerConfig(id string) ControllerConfig {
	return ControllerConfig{ID: id, Interval: 50 * time.Millisecond, Grace: 500 * time.Millisecond,
		MaxPromoteLag: 10, SessionTTL: time.Second, AdminTimeout: time.Second}
}

// runController runs c until the returned stop is called or the test ends.
func runController(t *testing.T, c *Controller) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

func TestControllerAssignsPromotesAndReplaces(t *testing.T) {
	const shards = 4
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: shards, Replication: 3}, 60*time.Second)
	regs := registerNodes(t, ctx, p, "n1", "n2", "n3", "n4")
	admin := newFakeAdmin(10)
	// Every node runs a controller; one leads.
	ctrls := map[string]*Controller{}
	stops := map[string]func(){}
	for id := range regs {
		c, err := p.NewController(admin, controllerConfig(id))
		if err != nil {
			t.Fatal(err)
		}
		ctrls[id] = c
		stops[id] = runController(t, c)
	}
	leader := func() (string, error) {
		var ids []string
		for id, c := range ctrls {
			if c.Leading() {
				ids = append(ids, id)
			}
		}
		if len(ids) != 1 {
			return "", fmt.Errorf("controllers leading: %v, want exactly one", ids)
		}
		return ids[0], nil
	}

	check := func(avoid string) func() error {
		return func() error {
			records, err := p.ReplicaSets(ctx)
			if err != nil {
				return err
			}
			return admin.converged(records, shards, 3, avoid)
		}
	}
	retry.Within(t, 30*time.Second, "the controllers converge on the replica sets", check(""))
	victim, err := leader()
	if err != nil {
		t.Fatal(err)
	}
	// 12 replicas on 4 nodes: 3 each.
	records, _ := p.ReplicaSets(ctx)
	perNode := map[string]int{}
	for _, r := range records {
		for _, m := range r.Members() {
			perNode[m]++
		}
	}
	for id, n := range perNode {
		if n != 3 {
			t.Fatalf("node %s hosts %d replicas, want 3 each: %v", id, n, perNode)
		}
	}

	// The node of the leading controller dies: another controller takes over, and the
	// dead node's replicas move to the others once the grace period is over.
	admin.crash(victim)
	stops[victim]()
	delete(ctrls, victim)
	crash(regs[victim])
	retry.Within(t, 30*time.Second, "the controllers converge without the crashed node", check(victim))
	if _, err := leader(); err != nil {
		t.Fatal(err)
	}

	admin.mu.Lock()
	defer admin.mu.Unlock()
	if len(admin.violations) > 0 {
		t.Fatalf("the controller broke rules:\n%s", strings.Join(admin.violations, "\n"))
	}
}

func TestControllerFencing(t *testing.T) {
	p, ctx := newControlledCluster(t, ClusterSpec{Shards: 1, Replication: 2}, 30*time.Second)
	registerNodes(t, ctx, p, "x", "y")

	// c1 wins the election by hand, so the test holds its term.
	c1, t1 := electedController(t, ctx, p)
	if err := c1.writeRecord(ctx, t1, 0, ReplicaSet{Voters: []string{"x"}}); err != nil {
		t.Fatalf("the elected controller's write: %v", err)
	}
	records, _ := p.ReplicaSets(ctx)
	written := records[0]

	t.Run("a write conditional on a stale record revision is a conflict", func(t *testing.T) {
		err := c1.writeRecord(ctx, t1, 0, ReplicaSet{Voters: []string{"y"}, Revision: written.Revision - 1})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("stale write: %v, want ErrConflict", err)
		}
	})

	// c2 campaigns and waits while c1 holds the election.
	c2, err := p.NewController(newFakeAdmin(10), controllerConfig("c2"))
	if err != nil {
		t.Fatal(err)
	}
	runController(t, c2)
	if err := c1.writeRecord(ctx, t1, 0, ReplicaSet{Voters: []string{"x"}, Revision: written.Revision}); err != nil {
		t.Fatalf("c1 still leads, its write must succeed: %v", err)
	}
	if c2.Leading() {
		t.Fatal("c2 leads while c1 holds the election")
	}
	records, _ = p.ReplicaSets(ctx)
	written = records[0]

	// c1 stalls (a long pause, a partition from etcd): its lease is no longer renewed and
	// expires; c2 takes over.
	t1.sess.Orphan()
	retry.Within(t, 10*time.Second, "c2 takes over once c1's lease expired", func() error {
		if !c2.Leading() {
			return errors.New("c2 does not lead")
		}
		return nil
	})

	// c1 wakes up and writes with the record revision it last read: the fence refuses it.
	err = c1.writeRecord(ctx, t1, 0, ReplicaSet{Voters: []string{"stale"}, Revision: written.Revision})
	if !errors.Is(err, ErrDeposed) {
		t.Fatalf("deposed controller's write: %v, want ErrDeposed", err)
	}
	if err := c1.reconcile(ctx, t1); !errors.Is(err, ErrDeposed) {
		t.Fatalf("deposed controller's reconcile: %v, want ErrDeposed", err)
	}
	records, _ = p.ReplicaSets(ctx)
	if got := records[0]; slices.Contains(got.Voters, "stale") {
		t.Fatalf("a deposed controller's write landed: %+v", got)
	}

	// The new controller's fenced writes go through: it bootstraps shard 0 on x and adds y.
	retry.Within(t, 10*time.Second, "the new controller's fenced writes land", func() error {
		records, err := p.ReplicaSets(ctx)
		if err != nil {
			return err
		}
		if got := records[0]; !sameSet(got, ReplicaSet{Voters: []string{"x", "y"}}) {
			return fmt.Errorf("record %+v, want voters x, y", got)
		}
		return nil
	})
}

func TestControllerConfig(t *testing.T) {
	p := &Plane{cfg: DefaultConfig()}
	p.cfg.Logger = nil
	p.cfg.setDefaults()
	for _, tc := range []ControllerConfig{{}, {ID: "a/b"}, {ID: "a", SessionTTL: 1500 * time.Millisecond}} {
		if _, err := p.NewController(nil, tc); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("NewController(%+v): %v, want ErrInvalidArgument", tc, err)
		}
	}
}

func TestControllerStopsWhileEtcdIsUnreachable(t *testing.T) {
	etcd := startEtcd(t, 1)
	proxy := newCutProxy(t, etcd.Endpoints()[0])
	cfg := testConfig(t)
	cfg.RequestTimeout = 300 * time.Millisecond
	p := newPlane(t, etcd.clientOf([]string{proxy.addr()}), cfg)
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := p.CreateCluster(ctx, ClusterSpec{Shards: 1}); err != nil {
		t.Fatal(err)
	}
	// c1 leads, c2 waits in its campaign. Their leases outlive the outage, so both still
	// think they hold their keys when they are told to stop.
	var ctrls []*Controller
	var cancels []context.CancelFunc
	var done []chan struct{}
	for _, id := range []string{"c1", "c2"} {
		ccfg := controllerConfig(id)
		ccfg.SessionTTL = time.Minute
		c, err := p.NewController(newFakeAdmin(10), ccfg)
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(context.Background())
		d := make(chan struct{})
		go func() {
			defer close(d)
			c.Run(rctx)
		}()
		ctrls, cancels, done = append(ctrls, c), append(cancels, cancel), append(done, d)
		retry.Within(t, 10*time.Second, "c1 leads", func() error {
			if !ctrls[0].Leading() {
				return errors.New("c1 does not lead")
			}
			return nil
		})
	}

	// Both candidates' keys are in etcd: c2 is waiting inside its campaign.
	direct := etcd.client()
	retry.Within(t, 10*time.Second, "both candidates' election keys are in etcd", func() error {
		resp, err := direct.Get(ctx, p.k.controller()+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || resp.Count != 2 {
			return fmt.Errorf("election keys: %v, %v; want 2", resp, err)
		}
		return nil
	})
	proxy.partition()
	for i, cancel := range cancels {
		cancel()
		select {
		case <-done[i]:
		case <-time.After(15 * time.Second):
			t.Fatalf("controller %d did not stop with etcd unreachable", i+1)
		}
	}
}
