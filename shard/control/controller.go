package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/internal/pause"
)

// ShardAdmin changes shards' Raft configurations on behalf of the controller. The node
// implements it over its shard host: each call goes to the shard's leader (forwarded to
// the node that hosts it when that is not this node), except Bootstrap, which goes to the
// named node. Node ids are Raft server ids; addresses are the nodes' peer addresses.
// Every call must be idempotent: the controller repeats a step until it sees its effect.
//
// Mutating calls carry fence, the create revision of the controller's election key. It
// grows with every new controller term, so an implementation may refuse a call whose
// fence is below the highest it has seen (a deposed controller). The controller also
// checks in etcd that it still holds its key right before every call.
type ShardAdmin interface {
	// Status returns the shard's Raft configuration and each member's lag as the leader
	// sees it. An error means "unknown now" (no leader reachable); the controller then
	// leaves the shard alone, except to bootstrap it.
	Status(ctx context.Context, shard int) (ShardStatus, error)
	// Bootstrap creates the shard's Raft group on node as its single voter. A node that
	// already has state for the shard must treat it as done.
	Bootstrap(ctx context.Context, fence int64, shard int, node, addr string) error
	// AddNonvoter adds node (at addr) to the shard as a non-voter (raft.AddNonvoter).
	AddNonvoter(ctx context.Context, fence int64, shard int, node, addr string) error
	// Promote makes the non-voter node a voter (raft.AddVoter on an existing member).
	Promote(ctx context.Context, fence int64, shard int, node string) error
	// Remove removes node from the shard (raft.RemoveServer).
	Remove(ctx context.Context, fence int64, shard int, node string) error
}

// ControllerConfig configures a Controller.
type ControllerConfig struct {
	// ID names this controller in the election (the node id). Required.
	ID string
	// Interval is the time between reconcile rounds; a registry change starts one at once.
	// Default 5s.
	Interval time.Duration
	// Grace is how long a node must be unregistered before its replicas are replaced and
	// removed. Default 1m.
	Grace time.Duration
	// MaxPromoteLag is the largest lag, in log entries, at which a non-voter is promoted.
	// Default 64.
	MaxPromoteLag int64
	// SessionTTL is the lease TTL of the election key: a controller that stops renewing it
	// loses the election this long after. Whole seconds, at least 1s. Default 10s.
	SessionTTL time.Duration
	// AdminTimeout bounds one ShardAdmin call. Default 10s.
	AdminTimeout time.Duration
	// StatusParallelism bounds concurrent ShardAdmin.Status calls in a round. Default 8.
	StatusParallelism int
	// Rebalance are the rebalance decision's knobs. Zero: DefaultRebalanceConfig.
	Rebalance RebalanceConfig
	// RebalanceInterval is the least time between two rebalance rounds. Default
	// DefaultRebalanceInterval.
	RebalanceInterval time.Duration
	// Mover, when set, drives the roots' moves (move_drive.go) while this controller leads.
	Mover MoveDriver
	// MoveSweepAfter is how long after a move rolled back the controller undoes it once
	// more (MoveSweeper), for a command a deposed controller had in flight. Default 1m.
	MoveSweepAfter time.Duration
	// MoveRetention is how long the record of an ended move is kept (move_prune.go); a
	// rolled-back move is kept while its sweep may still act on it. Default
	// DefaultMoveRetention.
	MoveRetention time.Duration
}

func (c *ControllerConfig) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = 5 * time.Second
	}
	if c.Grace <= 0 {
		c.Grace = time.Minute
	}
	if c.MaxPromoteLag <= 0 {
		c.MaxPromoteLag = 64
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = 10 * time.Second
	}
	if c.AdminTimeout <= 0 {
		c.AdminTimeout = 10 * time.Second
	}
	if c.StatusParallelism <= 0 {
		c.StatusParallelism = 8
	}
	if c.Rebalance == (RebalanceConfig{}) {
		c.Rebalance = DefaultRebalanceConfig()
	}
	if c.RebalanceInterval <= 0 {
		c.RebalanceInterval = DefaultRebalanceInterval
	}
	if c.MoveSweepAfter <= 0 {
		c.MoveSweepAfter = time.Minute
	}
	if c.MoveRetention <= 0 {
		c.MoveRetention = DefaultMoveRetention
	}
}

// Controller assigns replicas to shards while it holds the election under
// <prefix>/controller/. Run it on every node; one leads at a time.
type Controller struct {
	p     *Plane
	admin ShardAdmin
	cfg   ControllerConfig
	log   *slog.Logger

	leading atomic.Bool
	mu      sync.Mutex
	absent  map[string]time.Time // TrackAbsence state of the current term
	// mover starts the moves the rebalancer decides (rebalancer.go); nil: the controller
	// never rebalances, whatever the switch says. lastRebalance is when the last round
	// started moves; only the reconcile loop uses it.
	mover         rebalanceMover
	lastRebalance time.Time
}

// NewController returns a controller that acts through admin. Zero fields of cfg take
// their defaults. Errors: ErrInvalidArgument.
func (p *Plane) NewController(admin ShardAdmin, cfg ControllerConfig) (*Controller, error) {
	cfg.setDefaults()
	if err := validNodeID(cfg.ID); err != nil {
		return nil, err
	}
	if cfg.SessionTTL < time.Second || cfg.SessionTTL%time.Second != 0 {
		return nil, fmt.Errorf("%w: controller session TTL must be whole seconds, at least 1s, got %v",
			ErrInvalidArgument, cfg.SessionTTL)
	}
	if err := cfg.Rebalance.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{p: p, admin: admin, cfg: cfg, log: p.cfg.Logger.With("controller", cfg.ID)}
	if cfg.Mover != nil { // a controller that drives moves may start them (rebalancer.go)
		c.mover = planeMover{p}
	}
	return c, nil
}

// Leading reports whether this controller holds the election now.
func (c *Controller) Leading() bool { return c.leading.Load() }

// term is one tenure as controller: the session that holds the election key, and the fence
// every write checks.
type term struct {
	sess     *concurrency.Session
	election *concurrency.Election
	key      string
	rev      int64
}

// fence is the condition every controller write carries: its election key still has the
// create revision it had when the election was won.
func (t *term) fence() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(t.key), "=", t.rev)
}

// ControllerNode returns the id of the node whose controller holds the election: the
// candidate key of the lowest create revision ("" while none campaigns).
func (p *Plane) ControllerNode(ctx context.Context) (string, error) {
	resp, err := p.get(ctx, "read the controller election", p.k.controller()+"/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil || len(resp.Kvs) == 0 {
		return "", err
	}
	return string(resp.Kvs[0].Value), nil
}

// Run campaigns, and reconciles while it leads, until ctx ends; it campaigns again after
// losing the election (lease lost, or a write refused as deposed). It returns nil when ctx
// ends.
func (c *Controller) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		t, err := c.campaign(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("control: campaign failed", "err", err)
				pause.For(ctx, retryBackoff)
			}
			continue
		}
		c.log.Info("control: controller elected", "key", t.key, "rev", t.rev)
		c.leading.Store(true)
		err = c.lead(ctx, t)
		c.leading.Store(false)
		c.log.Info("control: controller stepped down", "err", err)
		c.resign(t)
		if errors.Is(err, errCutOff) {
			c.sitOut(ctx)
		}
	}
	return nil
}

// campaign waits until this controller wins the election.
func (c *Controller) campaign(ctx context.Context) (*term, error) {
	ttl := int64(c.cfg.SessionTTL / time.Second)
	var lease clientv3.LeaseID
	err := c.p.withTimeout(ctx, "grant controller lease", func(rctx context.Context) error {
		resp, err := c.p.cli.Grant(rctx, ttl)
		if err == nil {
			lease = resp.ID
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	// The election runs on a view of the client whose own context is ctx: when a campaign is
	// cancelled, concurrency.Election resigns under the client's context, which on the
	// shared client never ends and would hang while etcd is unreachable. The view shares
	// the connection, lease keeper and watcher of the plane's client and is never closed.
	ec := clientv3.NewCtxClient(ctx)
	ec.KV, ec.Lease, ec.Watcher = c.p.cli.KV, c.p.cli.Lease, c.p.cli.Watcher
	sess, err := concurrency.NewSession(ec, concurrency.WithLease(lease), concurrency.WithTTL(int(ttl)),
		concurrency.WithContext(ctx))
	if err != nil {
		return nil, wrapErr(ctx, "keep controller lease alive", err)
	}
	e := concurrency.NewElection(sess, c.p.k.controller())
	// Give up the campaign when the session ends: a key without a lease wins nothing.
	cctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(sess.Ctx(), cancel)
	err = e.Campaign(cctx, c.cfg.ID)
	stop()
	cancel()
	if err != nil {
		c.closeSession(sess)
		return nil, wrapErr(ctx, "campaign", err)
	}
	return &term{sess: sess, election: e, key: e.Key(), rev: e.Rev()}, nil
}

func (c *Controller) closeSession(sess *concurrency.Session) {
	sess.Orphan()
	_ = c.p.withTimeout(context.Background(), "revoke controller lease", func(ctx context.Context) error {
		_, err := c.p.cli.Revoke(ctx, sess.Lease())
		return err
	})
}

// resign gives the election up (deleting the key lets the next controller in at once).
func (c *Controller) resign(t *term) {
	_ = c.p.withTimeout(context.Background(), "resign", func(ctx context.Context) error {
		return t.election.Resign(ctx)
	})
	c.closeSession(t.sess)
}

// lead reconciles every Interval, on every registry change and on every change of the
// cluster record, until the term ends.
func (c *Controller) lead(ctx context.Context, t *term) error {
	c.mu.Lock()
	c.absent = map[string]time.Time{}
	c.mu.Unlock()
	wctx, cancel := context.WithCancel(ctx)
	var moves sync.WaitGroup
	moves.Add(1)
	go func() { defer moves.Done(); c.runMoves(wctx, t) }()
	defer moves.Wait() // no drive of this term outlives it
	defer cancel()
	nodes := c.p.WatchNodes(wctx)
	grown := c.p.WatchCluster(wctx) // a grow starts a round at once (grow.go)
	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	var cut cutOffWatch
	for {
		err := c.reconcile(ctx, t)
		switch {
		case errors.Is(err, ErrDeposed):
			return err
		case err != nil && ctx.Err() == nil:
			c.log.Warn("control: reconcile", "err", err)
		}
		if cut.observe(c.cutOff(ctx), time.Now(), c.cfg.Interval) {
			return errCutOff
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.sess.Done():
			return errors.New("controller lease lost")
		case <-tick.C:
		case <-nodes:
		case <-grown:
		}
	}
}

// reconcile runs one round: observe, Plan, execute. It returns ErrDeposed as soon as the
// fence fails, and checks it before it observes anything.
func (c *Controller) reconcile(ctx context.Context, t *term) error {
	if err := c.checkFence(ctx, t); err != nil {
		return err
	}
	cl, err := c.p.Cluster(ctx)
	if err != nil {
		return err
	}
	nodes, _, err := c.p.Nodes(ctx)
	if err != nil {
		return err
	}
	records, err := c.p.ReplicaSets(ctx)
	if err != nil {
		return err
	}
	leaving, err := c.p.Leaving(ctx)
	if err != nil {
		return err
	}
	closed, err := c.p.ClosedShards(ctx, cl)
	if err != nil {
		return err
	}
	status := c.statuses(ctx, cl.Shards)
	var members []string
	for _, r := range records {
		members = append(members, r.Members()...)
	}
	for _, s := range status {
		for _, m := range s.Servers {
			members = append(members, m.ID)
		}
	}
	c.mu.Lock()
	var gone map[string]bool
	c.absent, gone = TrackAbsence(c.absent, members, nodes, time.Now(), c.cfg.Grace)
	c.mu.Unlock()

	actions := Plan(State{Shards: cl.Shards, Replication: cl.Replication, Nodes: nodes, Gone: gone,
		Leaving: leaving, Records: records, Status: status, MaxPromoteLag: c.cfg.MaxPromoteLag, Closed: closed})
	skip := map[int]bool{} // shards whose record write failed this round
	var firstErr error
	for _, a := range actions {
		if skip[a.Shard] {
			continue
		}
		c.log.Info("control: reconcile", "action", a.String())
		if err := c.execute(ctx, t, a); err != nil {
			if errors.Is(err, ErrDeposed) {
				return err
			}
			c.log.Warn("control: action failed", "action", a.String(), "err", err)
			if a.Kind == ActionRecord {
				skip[a.Shard] = true
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if len(actions) == 0 { // settled: no replica to add, promote or remove
		return c.rebalanceRound(ctx, t, cl.Shards, status, closed)
	}
	return firstErr
}

// statuses asks every shard's leader for its configuration, a few at a time; shards that
// do not answer are left out.
func (c *Controller) statuses(ctx context.Context, shards int) map[int]ShardStatus {
	var mu sync.Mutex
	out := map[int]ShardStatus{}
	var g errgroup.Group
	g.SetLimit(c.cfg.StatusParallelism)
	for s := range shards {
		g.Go(func() error {
			actx, cancel := context.WithTimeout(ctx, c.cfg.AdminTimeout)
			defer cancel()
			st, err := c.admin.Status(actx, s)
			if err == nil {
				mu.Lock()
				out[s] = st
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// execute carries out one action.
func (c *Controller) execute(ctx context.Context, t *term, a Action) error {
	switch a.Kind {
	case ActionRecord:
		return c.writeRecord(ctx, t, a.Shard, a.Set)
	case ActionOpen:
		// The load counter is created once; one that exists means the shard is open.
		if err := c.fencedPut(ctx, t, c.p.k.load(a.Shard), "0", 0); err != nil && !errors.Is(err, ErrConflict) {
			return err
		}
		return nil
	}
	if err := c.checkFence(ctx, t); err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, c.cfg.AdminTimeout)
	defer cancel()
	switch a.Kind {
	case ActionBootstrap:
		return c.admin.Bootstrap(actx, t.rev, a.Shard, a.Node, a.Addr)
	case ActionAddNonvoter:
		return c.admin.AddNonvoter(actx, t.rev, a.Shard, a.Node, a.Addr)
	case ActionPromote:
		return c.admin.Promote(actx, t.rev, a.Shard, a.Node)
	case ActionRemove:
		return c.admin.Remove(actx, t.rev, a.Shard, a.Node)
	}
	return fmt.Errorf("control: unknown action %v", a.Kind)
}

// checkFence returns ErrDeposed unless the controller still holds its election key.
func (c *Controller) checkFence(ctx context.Context, t *term) error {
	var resp *clientv3.TxnResponse
	err := c.p.withTimeout(ctx, "check controller fence", func(rctx context.Context) (err error) {
		resp, err = c.p.cli.Txn(rctx).If(t.fence()).Commit()
		return err
	})
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("election key %s: %w", t.key, ErrDeposed)
	}
	return nil
}

// writeRecord writes a shard's replica set if the controller still holds its election key
// and the record still has the revision set.Revision. Errors: ErrDeposed, ErrConflict,
// ErrControlPlaneUnavailable.
func (c *Controller) writeRecord(ctx context.Context, t *term, shard int, set ReplicaSet) error {
	if set.Voters == nil {
		set.Voters = []string{}
	}
	if set.Nonvoters == nil {
		set.Nonvoters = []string{}
	}
	val, err := json.Marshal(set)
	if err != nil {
		return err
	}
	return c.fencedPut(ctx, t, c.p.k.shard(shard), string(val), set.Revision)
}

// fencedPut puts key=val if the election key is unchanged and key's mod revision is rev
// (0: absent).
func (c *Controller) fencedPut(ctx context.Context, t *term, key, val string, rev int64) error {
	var resp *clientv3.TxnResponse
	err := c.p.withTimeout(ctx, "write "+key, func(rctx context.Context) (err error) {
		resp, err = c.p.cli.Txn(rctx).If(t.fence(), clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, val)).Else(clientv3.OpGet(t.key)).Commit()
		return err
	})
	if err != nil {
		return err
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 || kvs[0].CreateRevision != t.rev {
		return fmt.Errorf("write %s: %w", key, ErrDeposed)
	}
	return fmt.Errorf("write %s: %w", key, ErrConflict)
}
