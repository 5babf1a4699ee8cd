package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/klauspost/compress/zstd"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/mux"
	"github.com/cairnstore/cairn/shard/outcome"
)

// Errors of the replication layer. The retryable ones say nothing about where to go: the
// routing layer decides that. Each also matches, with errors.Is, the outcome it implies
// (package outcome), so that callers above — the Workbench adapter — classify it without
// importing this package and Raft with it.
var (
	// ErrNotLeader: this replica cannot serve the request now (not the leader, or a new
	// leader that has not caught up yet). Retryable. Matches outcome.ErrUnavailable.
	ErrNotLeader = outcomeError("shard: not the leader", outcome.ErrUnavailable)
	// ErrTimeout: the command was not known to be committed in time; it may still apply.
	// Retryable with the same request id. Matches outcome.ErrUnknown.
	ErrTimeout = outcomeError("shard: timed out waiting for the command to commit", outcome.ErrUnknown)
	// ErrClosed: the shard is shut down. Matches outcome.ErrUnavailable.
	ErrClosed = outcomeError("shard: closed", outcome.ErrUnavailable)
	// ErrBehind: this replica has not applied the requested shard version yet (ReadViewAt).
	// Retryable, here a little later or on another replica. Matches outcome.ErrUnavailable.
	ErrBehind = outcomeError("shard: replica has not applied that version yet", outcome.ErrUnavailable)
	// ErrLocked: another replica (in this process or another) has the directory open.
	ErrLocked = errors.New("shard: directory in use")
	// ErrIdentity: the shard directory belongs to another Raft server id.
	ErrIdentity = errors.New("shard: directory belongs to another server")
)

// Config configures one shard replica.
type Config struct {
	// Dir holds the shard's Raft log (Dir/raft.db) and snapshots (Dir/snapshots). Created if
	// missing.
	Dir string
	// NodeID is the Raft server id of this replica.
	NodeID string
	// FSM options; equal on every replica.
	FSM meta.Options
	// SnapshotInterval is how often Raft checks whether to snapshot. Default 2m.
	SnapshotInterval time.Duration
	// SnapshotThreshold is how many log entries since the last snapshot trigger one.
	// Default 8192.
	SnapshotThreshold uint64
	// TickInterval is how long the leader lets a shard idle before it proposes a Tick so
	// that command time (leases, retention) still advances. Default 10s.
	TickInterval time.Duration
	// ApplyTimeout bounds a proposal when the caller's context has no deadline. Default 30s.
	ApplyTimeout time.Duration
	// MinFreeBytes is the free space, in bytes, the disk under Dir must keep: below it
	// proposals fail with ErrStorageFull before reaching the log (a log write that fails
	// leaves hashicorp/raft stepping down, and a failed term write panics it). 0 means
	// DefaultMinFreeBytes (64 MiB); negative disables the check.
	MinFreeBytes int64
	// Logger receives Raft's warnings and errors. Default: slog.Default().
	Logger *slog.Logger
	// OnReady, when set, is called (from the replica's leadership goroutine; it must not
	// block) each time this replica becomes a ready leader or stops being one, with the
	// new readiness. A cluster node publishes its leader hint from it at once instead of
	// waiting for a poll.
	OnReady func(ready bool)
	// Clock returns the leader's wall time for stamping commands. Default time.Now.
	Clock func() time.Time

	// Cluster mode (DESIGN.md §9). With Peer nil the replica is the embedded default: a
	// single voter on an in-memory transport, bootstrapped on first open.

	// Peer carries the replica's Raft traffic: the replica serves stream
	// RaftStream(ShardID) on it, and its address in the group is Peer.Addr() (the node's
	// advertised peer address). NodeID must then be the node's UUID from its data
	// directory, so a node that lost its disk cannot rejoin as its old self.
	Peer *mux.Mux
	// ShardID names the shard in the cluster. Required with Peer.
	ShardID string
	// Bootstrap lists the initial voters of a new group, this replica included; every
	// initial member passes the same list. Used only while Dir holds no Raft state. Empty
	// with Peer: the replica starts without a configuration and waits until a leader adds
	// it (AddNonvoter), receiving the log or a snapshot.
	Bootstrap []Member
	// HeartbeatTimeout: a follower that has not heard from the leader for a random time
	// between one and two HeartbeatTimeouts starts an election; the leader heartbeats ten
	// times per HeartbeatTimeout. Default 500ms in cluster mode: a LAN margin that still
	// fails over in about a second (TestFailoverTime on loopback: median 0.8–0.9s; with
	// 200ms/200ms/100ms, the loopback tuning of the tests, 0.4–0.5s). 200ms embedded.
	HeartbeatTimeout time.Duration
	// ElectionTimeout: how long a candidate waits for votes before it retries (randomized
	// up to twice as long). At least HeartbeatTimeout. Default 500ms in cluster mode, 200ms
	// embedded.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout: a leader that has not reached a quorum for this long steps down,
	// so a partitioned leader stops accepting writes. At most HeartbeatTimeout. Default
	// 250ms in cluster mode, 100ms embedded.
	LeaderLeaseTimeout time.Duration
	// TrailingLogs is how many log entries a snapshot leaves behind, so that a follower a
	// little behind catches up from the log instead of a snapshot install. Default 10240.
	TrailingLogs uint64
	// TransportTimeout is the I/O deadline of one Raft RPC between nodes (raft scales it
	// up for snapshot installs). Default 5s.
	TransportTimeout time.Duration
}

// Member is one server of a shard's Raft group.
type Member struct {
	// ID is the Raft server id: the node's UUID.
	ID string
	// Address is the node's advertised peer address (its mux.Mux).
	Address string
	// Voter: counts for elections and commits. A non-voter only receives the log.
	Voter bool
}

// RaftStream is the mux stream that carries the Raft traffic of shard id.
func RaftStream(shardID string) string { return "raft/" + shardID }

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.Dir == "" {
		return errors.New("shard: Dir is required")
	}
	if c.Peer == nil {
		if c.ShardID != "" || len(c.Bootstrap) > 0 {
			return errors.New("shard: ShardID and Bootstrap need Peer (cluster mode)")
		}
	} else {
		if c.NodeID == "" {
			return errors.New("shard: NodeID (the node's UUID) is required in cluster mode")
		}
		if c.ShardID == "" {
			return errors.New("shard: ShardID is required in cluster mode")
		}
		if err := checkMembers(c.Bootstrap, c.NodeID, c.Peer.Addr().String()); err != nil {
			return err
		}
	}
	if c.HeartbeatTimeout < 0 || c.ElectionTimeout < 0 || c.LeaderLeaseTimeout < 0 {
		return errors.New("shard: negative Raft timeout")
	}
	if c.HeartbeatTimeout > 0 && c.ElectionTimeout > 0 && c.ElectionTimeout < c.HeartbeatTimeout {
		return fmt.Errorf("shard: ElectionTimeout %v is shorter than HeartbeatTimeout %v", c.ElectionTimeout, c.HeartbeatTimeout)
	}
	if c.HeartbeatTimeout > 0 && c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return fmt.Errorf("shard: LeaderLeaseTimeout %v is longer than HeartbeatTimeout %v", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	return nil
}

func checkMembers(ms []Member, self, selfAddr string) error {
	if len(ms) == 0 {
		return nil
	}
	seen := map[string]bool{}
	found := false
	for _, m := range ms {
		if m.ID == "" || m.Address == "" {
			return fmt.Errorf("shard: bootstrap member %+v needs an ID and an Address", m)
		}
		if seen[m.ID] {
			return fmt.Errorf("shard: bootstrap member %q listed twice", m.ID)
		}
		seen[m.ID] = true
		if !m.Voter {
			return fmt.Errorf("shard: bootstrap member %q must be a voter (non-voters join later)", m.ID)
		}
		if m.ID == self {
			found = true
			if m.Address != selfAddr {
				return fmt.Errorf("shard: bootstrap lists this node at %s, but its peer address is %s", m.Address, selfAddr)
			}
		}
	}
	if !found {
		return fmt.Errorf("shard: bootstrap members do not include this node %q", self)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.MinFreeBytes == 0 {
		c.MinFreeBytes = DefaultMinFreeBytes
	}
	if c.SnapshotInterval <= 0 {
		c.SnapshotInterval = 2 * time.Minute
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TickInterval <= 0 {
		c.TickInterval = 10 * time.Second
	}
	if c.ApplyTimeout <= 0 {
		c.ApplyTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.NodeID == "" && c.Peer == nil {
		c.NodeID = "node-1"
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.TransportTimeout <= 0 {
		c.TransportTimeout = 5 * time.Second
	}
	hb, el, lease := 500*time.Millisecond, 500*time.Millisecond, 250*time.Millisecond
	if c.Peer == nil {
		// A single voter elects itself as soon as its election timer fires.
		hb, el, lease = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = hb
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = max(el, c.HeartbeatTimeout)
	}
	if c.LeaderLeaseTimeout == 0 {
		c.LeaderLeaseTimeout = min(lease, c.HeartbeatTimeout)
	}
}

// Shard is one replica of one shard.
type Shard struct {
	cfg       Config
	fsm       *meta.FSM
	raft      *raft.Raft
	log       *logStore
	lock      *flock.Flock
	snaps     *raft.FileSnapshotStore
	transport raft.Transport
	verify    verifier
	applied   applyWaiters

	disk      diskGauge    // free space under Dir; proposals stop while it is short
	ready     atomic.Bool  // leader whose post-election barrier has applied
	lastApply atomic.Int64 // unix ms of the last proposal, for idle ticks
	opened    atomic.Bool  // NewRaft returned: later FSM restores are snapshot installs
	installs  atomic.Uint64
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	closeMu   sync.RWMutex
	closed    bool
}

// Open opens the shard replica in cfg.Dir, creating it if missing. Embedded (no Peer), a
// new replica bootstraps itself as the single voter. In cluster mode a new replica
// bootstraps the group in cfg.Bootstrap, or waits to be added. Errors: an invalid Config,
// ErrLocked when another replica has cfg.Dir open, ErrIdentity when Dir was created for
// another NodeID, mux.ErrStreamInUse when the shard is already open on cfg.Peer, or an
// I/O error.
func Open(cfg Config) (*Shard, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Shard{cfg: cfg, fsm: meta.New(cfg.FSM), stop: make(chan struct{}), disk: diskGauge{dir: cfg.Dir, min: cfg.MinFreeBytes}}
	s.applied.waiting = map[chan struct{}]uint64{}
	if err := s.start(); err != nil {
		return nil, err
	}
	s.opened.Store(true)
	s.verify.r = s.raft
	s.wg.Add(2)
	go s.watchLeadership()
	go s.tickLoop()
	return s, nil
}

// start acquires the directory, log, snapshots and transport, bootstraps a new group and
// starts Raft. On error it has released whatever it acquired.
func (s *Shard) start() (err error) {
	cfg := s.cfg
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	// One replica per directory, in this process or another; fail fast.
	s.lock = flock.New(filepath.Join(cfg.Dir, "LOCK"))
	if locked, err := s.lock.TryLock(); err != nil || !locked {
		return fmt.Errorf("%w: %s (%v)", ErrLocked, cfg.Dir, err)
	}
	undo = append(undo, func() { s.lock.Unlock() })
	if err := bindServerID(cfg.Dir, cfg.NodeID); err != nil {
		return err
	}
	var layer *mux.StreamLayer
	if cfg.Peer != nil {
		if layer, err = cfg.Peer.StreamLayer(RaftStream(cfg.ShardID)); err != nil {
			return fmt.Errorf("shard %s: %w", cfg.ShardID, err)
		}
		undo = append(undo, func() { layer.Close() })
	}

	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Error, Output: slogWriter{cfg.Logger}, DisableTime: true})
	if s.log, err = openLog(cfg.Dir); err != nil {
		return err
	}
	undo = append(undo, func() { s.log.Close() })
	s.snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hlog.Named("snapshots"))
	if err != nil {
		return fmt.Errorf("shard: open snapshots: %w", err)
	}
	if err := checkSnapshots(s.snaps, cfg.Dir, s.log); err != nil {
		return err
	}

	var boot []raft.Server
	if layer == nil {
		addr, inmem := raft.NewInmemTransport(raft.ServerAddress(cfg.NodeID))
		s.transport = inmem
		boot = []raft.Server{{ID: raft.ServerID(cfg.NodeID), Address: addr, Suffrage: raft.Voter}}
	} else {
		// MaxPool: connections kept per peer (pipelined appends, heartbeats, votes).
		s.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: layer, MaxPool: 3, Timeout: cfg.TransportTimeout, Logger: hlog.Named("net")})
		for _, m := range cfg.Bootstrap {
			boot = append(boot, raft.Server{ID: raft.ServerID(m.ID), Address: raft.ServerAddress(m.Address), Suffrage: raft.Voter})
		}
	}
	undo = append(undo, func() { // also closes the stream layer
		if c, ok := s.transport.(raft.WithClose); ok {
			c.Close()
		}
	})

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = hlog
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = cfg.TrailingLogs
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	// Group commit: the leader writes every proposal waiting in its queue (up to this
	// many) with one log append and one fsync, and ships them in one AppendEntries.
	rc.MaxAppendEntries = 1024
	rc.BatchApplyCh = true
	rc.NoSnapshotRestoreOnStart = false

	existing, err := raft.HasExistingState(s.log, s.log, s.snaps)
	if err != nil {
		return fmt.Errorf("shard: inspect state: %w", err)
	}
	if !existing && len(boot) > 0 {
		if err := raft.BootstrapCluster(rc, s.log, s.log, s.snaps, s.transport, raft.Configuration{Servers: boot}); err != nil {
			return fmt.Errorf("shard: bootstrap: %w", err)
		}
	}
	if s.raft, err = raft.NewRaft(rc, &raftFSM{s: s}, s.log, s.log, s.snaps, s.transport); err != nil {
		return fmt.Errorf("shard: start raft: %w", err)
	}
	return nil
}

// bindServerID records id as the Raft server id of the replica in dir, or checks that it
// is the one recorded: Raft state copied to another node, or a node that changed its id,
// must not start under a new identity.
func bindServerID(dir, id string) error {
	p := filepath.Join(dir, "server-id")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(p+".tmp", []byte(id+"\n"), 0o644); err != nil {
			return fmt.Errorf("shard: %w", err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			return fmt.Errorf("shard: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("shard: %w", err)
	}
	if got := strings.TrimSpace(string(b)); got != id {
		return fmt.Errorf("%w: %s was created for server %q, not %q", ErrIdentity, dir, got, id)
	}
	return nil
}

// FSM returns the replica's state machine (for views; never apply to it directly).
func (s *Shard) FSM() *meta.FSM { return s.fsm }

// Ready reports whether this replica is a leader that has caught up (serves writes and
// linearizable reads).
func (s *Shard) Ready() bool { return s.ready.Load() }

// WaitReady blocks until Ready or ctx ends.
func (s *Shard) WaitReady(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !s.ready.Load() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("shard: not ready: %w", ctx.Err())
		case <-s.stop:
			return ErrClosed
		case <-t.C:
		}
	}
	return nil
}

func (s *Shard) watchLeadership() {
	defer s.wg.Done()
	ch := s.raft.LeaderCh()
	for {
		select {
		case <-s.stop:
			return
		case leader := <-ch:
			s.setReady(false)
			if !leader {
				continue
			}
			// Everything committed in earlier terms must be applied before this leader
			// answers reads: the barrier commits an entry of the new term and waits for it.
			if err := s.barrier(); err != nil {
				s.cfg.Logger.Warn("shard: barrier after election failed", "err", err)
				continue
			}
			if s.raft.State() == raft.Leader {
				s.setReady(true)
			}
		}
	}
}

// barrier commits an entry of the current term and waits until it is applied, or until
// the replica closes: raft may never answer a barrier still queued when its leader shuts
// down (as with Propose), and Close waits for this goroutine.
func (s *Shard) barrier() error {
	f := s.raft.Barrier(s.cfg.ApplyTimeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-s.stop:
		return ErrClosed
	}
}

// setReady records the replica's readiness and reports a change to Config.OnReady.
func (s *Shard) setReady(ready bool) {
	if s.ready.Swap(ready) != ready && s.cfg.OnReady != nil {
		s.cfg.OnReady(ready)
	}
}

func (s *Shard) tickLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.TickInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if !s.ready.Load() || time.Since(time.UnixMilli(s.lastApply.Load())) < s.cfg.TickInterval {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			if _, err := s.Propose(ctx, meta.Header{}, meta.Tick{}); err != nil && !errors.Is(err, ErrClosed) {
				s.cfg.Logger.Debug("shard: idle tick failed", "err", err)
			}
			cancel()
		}
	}
}

// Propose stamps the command with the leader's clock, replicates it, and returns the FSM's
// result once applied. Errors: ErrNotLeader, ErrTimeout (outcome unknown), ErrClosed, or an
// encoding error (*meta.Error, InvalidArguments) for a command too large.
func (s *Shard) Propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error) {
	h.TimeMs = s.cfg.Clock().UnixMilli()
	data, err := meta.EncodeCommand(h, b)
	if err != nil {
		return meta.Result{}, err
	}
	timeout := s.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return meta.Result{}, ErrTimeout
		}
	}
	if free, full := s.disk.full(); full {
		return meta.Result{}, s.disk.storageFull(free)
	}
	s.lastApply.Store(time.Now().UnixMilli())
	// hashicorp/raft accepts an Apply after Shutdown into its buffered apply channel and
	// never answers it, so proposals and Close exclude each other while enqueueing.
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return meta.Result{}, ErrClosed
	}
	f := s.raft.Apply(data, timeout)
	s.closeMu.RUnlock()
	// hashicorp/raft's timeout covers only the enqueue: an entry a leader enqueued just
	// before it shut down, or lost leadership, may never be answered. Wait no longer than
	// the caller allows (the outcome is then unknown); the waiter ends when raft answers or
	// shuts down.
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	select {
	case err := <-done:
		if err != nil {
			return meta.Result{}, mapRaftError(err)
		}
	case <-ctx.Done():
		return meta.Result{}, ErrTimeout
	case <-wait.C:
		return meta.Result{}, ErrTimeout
	}
	res, ok := f.Response().(meta.Result)
	if !ok {
		return meta.Result{}, fmt.Errorf("shard: unexpected FSM response %T", f.Response())
	}
	return res, nil
}

func mapRaftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w (%v)", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost):
		// Deposed after the entry went out: a majority may hold it, and the next leader
		// then commits it. The outcome is unknown, not a refusal.
		return fmt.Errorf("%w (%v)", ErrTimeout, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return ErrTimeout
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	case isNoSpace(err):
		return fmt.Errorf("%w (%v)", ErrStorageFull, err)
	}
	return fmt.Errorf("shard: %w", err)
}

// ReadView returns a linearizable view: every write acknowledged before ReadView was
// called is in it. ErrNotLeader when this replica cannot guarantee that.
func (s *Shard) ReadView(ctx context.Context) (*meta.View, error) {
	if !s.ready.Load() {
		return nil, ErrNotLeader
	}
	if err := s.verify.verify(ctx); err != nil {
		switch {
		case errors.Is(err, raft.ErrRaftShutdown):
			return nil, ErrClosed
		case ctx.Err() != nil:
			return nil, fmt.Errorf("shard: read: %w", err)
		}
		// Deposed, partitioned, or no longer sure: a read has no outcome to be unsure of.
		return nil, fmt.Errorf("%w (%v)", ErrNotLeader, err)
	}
	return s.fsm.View(), nil
}

// AppliedView returns a view of everything this replica has applied, leader or not,
// without a leader round trip. It is NOT linearizable: a follower may lag the leader by
// any number of versions, and a deposed leader may not know it yet. Use it only for reads
// whose answer cannot depend on that lag: data at a fixed shard version that the view
// holds (a live snapshot's read version; DESIGN.md §6). Never fails; its Version is the
// replica's applied shard version.
func (s *Shard) AppliedView() *meta.View { return s.fsm.View() }

// maxReadAtWait bounds how long ReadViewAt waits for this replica to apply a version.
const maxReadAtWait = 2 * time.Second

// ReadViewAt returns a view at shard version `version` (a version some earlier view or
// write reported) on any replica, leader or not, that has applied it: what a version
// shows never changes, so no leader is needed (DESIGN.md §6). It waits up to ctx's
// deadline, at most two seconds, for the replica to apply that far. Errors: ErrBehind
// (retry later or on another replica), ErrClosed.
func (s *Shard) ReadViewAt(ctx context.Context, version uint64) (*meta.View, error) {
	if err := s.waitApplied(ctx, version); err != nil {
		return nil, err
	}
	v, err := s.fsm.View().At(version)
	if err != nil {
		return nil, err // unreachable: the view holds at least version
	}
	return v, nil
}

func (s *Shard) waitApplied(ctx context.Context, version uint64) error {
	select {
	case <-s.stop:
		return ErrClosed
	default:
	}
	if s.fsm.AppliedVersion() >= version {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, maxReadAtWait)
	defer cancel()
	ch := s.applied.add(version)
	defer s.applied.remove(ch)
	// Registered first, checked second: an apply between the two still wakes us.
	if s.fsm.AppliedVersion() >= version {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-s.stop:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("%w: version %d, applied %d", ErrBehind, version, s.fsm.AppliedVersion())
	}
}

// applyWaiters wakes ReadViewAt calls waiting for a shard version.
type applyWaiters struct {
	n       atomic.Int32 // len(waiting), read without the lock on every apply
	mu      sync.Mutex
	waiting map[chan struct{}]uint64
}

func (w *applyWaiters) add(version uint64) chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	w.waiting[ch] = version
	w.n.Add(1)
	w.mu.Unlock()
	return ch
}

func (w *applyWaiters) remove(ch chan struct{}) {
	w.mu.Lock()
	if _, ok := w.waiting[ch]; ok {
		delete(w.waiting, ch)
		w.n.Add(-1)
	}
	w.mu.Unlock()
}

func (w *applyWaiters) notify(applied uint64) {
	if w.n.Load() == 0 {
		return
	}
	w.mu.Lock()
	for ch, v := range w.waiting {
		if v <= applied {
			close(ch)
			delete(w.waiting, ch)
			w.n.Add(-1)
		}
	}
	w.mu.Unlock()
}

// Stats describes the replica for metrics, status pages and the controller.
type Stats struct {
	// State is Raft's role: Leader, Follower, Candidate or Shutdown.
	State string
	// Ready: a leader that has caught up (serves writes and linearizable reads).
	Ready bool
	// AppliedVersion is the shard version of the last command the FSM applied.
	AppliedVersion uint64
	// AppliedIndex is the last log index Raft handed to the FSM (commands, and the
	// barrier and configuration entries the FSM never sees).
	AppliedIndex uint64
	// CommitIndex is the last log index known committed.
	CommitIndex uint64
	// LastIndex is the last index in this replica's log (or snapshot).
	LastIndex uint64
	// Lag is LastIndex − AppliedIndex: log entries this replica holds but has not applied.
	// A follower is caught up when its AppliedIndex is near the leader's CommitIndex.
	Lag uint64
	// Term is the current Raft term.
	Term uint64
	// LeaderID is the server id of the leader this replica knows, "" if none.
	LeaderID string
	// SnapshotInstalls counts snapshots this replica received from a leader and restored
	// since it opened (a follower too far behind for the log).
	SnapshotInstalls uint64
	// LogAppends counts log writes since open; each is one fsync. LogEntriesWritten counts
	// the entries they held: their ratio is the group-commit batch size.
	LogAppends        uint64
	LogEntriesWritten uint64
}

// Stats returns the replica's current Raft figures.
func (s *Shard) Stats() Stats {
	applied, last := s.raft.AppliedIndex(), s.raft.LastIndex()
	_, leader := s.raft.LeaderWithID()
	st := Stats{State: s.raft.State().String(), Ready: s.ready.Load(), AppliedVersion: s.fsm.AppliedVersion(),
		AppliedIndex: applied, CommitIndex: s.raft.CommitIndex(), LastIndex: last, Term: s.raft.CurrentTerm(),
		LeaderID: string(leader), SnapshotInstalls: s.installs.Load(),
		LogAppends: s.log.appends.Load(), LogEntriesWritten: s.log.entries.Load()}
	if last > applied {
		st.Lag = last - applied
	}
	return st
}

// Snapshot forces a Raft snapshot now (tests, admin). It returns when the snapshot is on disk.
func (s *Shard) Snapshot() error {
	if err := s.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return fmt.Errorf("shard: snapshot: %w", err)
	}
	return nil
}

// Close stops the replica: pending proposals fail with ErrClosed; the log is closed.
func (s *Shard) Close() error {
	s.closeOnce.Do(func() {
		s.closeMu.Lock()
		s.closed = true
		s.closeMu.Unlock()
		close(s.stop)
		s.ready.Store(false)
		err := s.raft.Shutdown().Error()
		// Shutdown closes the transport (and with it every connection of the stream)
		// only the first time; a replica removed from its group already shut down.
		if c, ok := s.transport.(raft.WithClose); ok {
			c.Close()
		}
		s.wg.Wait()
		if cerr := s.log.Close(); err == nil {
			err = cerr
		}
		if cerr := s.lock.Unlock(); err == nil {
			err = cerr
		}
		s.closeErr = err
	})
	return s.closeErr
}

// verifier coalesces leadership checks: reads that arrive while one VerifyLeader round runs
// share the next round, which starts after they arrived (so it proves leadership at a
// time after each of them began).
type verifier struct {
	r       *raft.Raft
	mu      sync.Mutex
	waiting []chan error
	running bool
}

func (v *verifier) verify(ctx context.Context) error {
	ch := make(chan error, 1)
	v.mu.Lock()
	v.waiting = append(v.waiting, ch)
	if !v.running {
		v.running = true
		go v.loop()
	}
	v.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (v *verifier) loop() {
	for {
		v.mu.Lock()
		batch := v.waiting
		v.waiting = nil
		if len(batch) == 0 {
			v.running = false
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		err := v.r.VerifyLeader().Error()
		for _, ch := range batch {
			ch <- err
		}
	}
}

// raftFSM adapts meta.FSM to raft.FSM.
type raftFSM struct{ s *Shard }

func (f *raftFSM) Apply(l *raft.Log) any {
	res := f.s.fsm.Apply(l.Index, l.Data)
	f.s.applied.notify(l.Index)
	return res
}

func (f *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{snap: f.s.fsm.Snapshot()}, nil
}

func (f *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	zr, err := zstd.NewReader(rc, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("shard: snapshot decoder: %w", err)
	}
	defer zr.Close()
	if err := f.s.fsm.Restore(zr); err != nil {
		return err
	}
	if f.s.opened.Load() { // not the restore of our own snapshot at start
		f.s.installs.Add(1)
	}
	f.s.applied.notify(f.s.fsm.AppliedVersion())
	return nil
}

type fsmSnapshot struct{ snap *meta.Snapshot }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	zw, err := zstd.NewWriter(sink, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err == nil {
		_, err = s.snap.WriteTo(zw)
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("shard: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// slogWriter routes hclog's text lines into slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	msg := string(p)
	if n := len(msg); n > 0 && msg[n-1] == '\n' {
		msg = msg[:n-1]
	}
	w.l.Warn(msg)
	return len(p), nil
}
