package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/klauspost/compress/zstd"

	"github.com/cairnstore/cairn/meta"
)

// Errors of the replication layer. Both retryable ones say nothing about where to go: the
// routing layer decides that.
var (
	// ErrNotLeader: this replica cannot serve the request now (not the leader, or a new
	// leader that has not caught up yet). Retryable.
	ErrNotLeader = errors.New("shard: not the leader")
	// ErrTimeout: the command was not known to be committed in time; it may still apply.
	// Retryable with the same request id.
	ErrTimeout = errors.New("shard: timed out waiting for the command to commit")
	// ErrClosed: the shard is shut down.
	ErrClosed = errors.New("shard: closed")
)

// Config configures one shard replica.
type Config struct {
	// Dir holds the shard's Raft log (Dir/wal) and snapshots (Dir/snapshots). Created if
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
	// Logger receives Raft's warnings and errors. Default: slog.Default().
	Logger *slog.Logger
	// Clock returns the leader's wall time for stamping commands. Default time.Now.
	Clock func() time.Time
}

func (c *Config) setDefaults() {
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
	if c.NodeID == "" {
		c.NodeID = "node-1"
	}
}

// Shard is one replica of one shard.
type Shard struct {
	cfg       Config
	fsm       *meta.FSM
	raft      *raft.Raft
	log       *wal.WAL
	logMeta   *metadb.BoltMetaDB
	snaps     *raft.FileSnapshotStore
	transport *raft.InmemTransport
	verify    verifier

	ready     atomic.Bool  // leader whose post-election barrier has applied
	lastApply atomic.Int64 // unix ms of the last proposal, for idle ticks
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	closeMu   sync.RWMutex
	closed    bool
}

// Open opens (or creates and bootstraps as a single voter) the shard replica in cfg.Dir.
func Open(cfg Config) (*Shard, error) {
	cfg.setDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Error, Output: slogWriter{cfg.Logger}, DisableTime: true})
	walDir := filepath.Join(cfg.Dir, "wal")
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	// The WAL does not close a meta store it opened itself, so own it: a replica reopened
	// in the same process would otherwise block on the store's file lock.
	metaStore := &metadb.BoltMetaDB{}
	logStore, err := wal.Open(walDir, wal.WithLogger(hlog.Named("wal")), wal.WithMetaStore(metaStore))
	if err != nil {
		metaStore.Close()
		return nil, fmt.Errorf("shard: open log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hlog.Named("snapshots"))
	if err != nil {
		closeLog(logStore, metaStore)
		return nil, fmt.Errorf("shard: open snapshots: %w", err)
	}
	addr, transport := raft.NewInmemTransport(raft.ServerAddress(cfg.NodeID))
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = hlog
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = 10240
	// A single voter elects itself as soon as its election timer fires.
	rc.HeartbeatTimeout = 200 * time.Millisecond
	rc.ElectionTimeout = 200 * time.Millisecond
	rc.LeaderLeaseTimeout = 100 * time.Millisecond
	rc.MaxAppendEntries = 1024
	rc.BatchApplyCh = true
	rc.NoSnapshotRestoreOnStart = false

	s := &Shard{cfg: cfg, fsm: meta.New(cfg.FSM), log: logStore, logMeta: metaStore, snaps: snaps, transport: transport, stop: make(chan struct{})}
	existing, err := raft.HasExistingState(logStore, logStore, snaps)
	if err != nil {
		closeLog(logStore, metaStore)
		return nil, fmt.Errorf("shard: inspect state: %w", err)
	}
	if !existing {
		boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: addr, Suffrage: raft.Voter}}}
		if err := raft.BootstrapCluster(rc, logStore, logStore, snaps, transport, boot); err != nil {
			closeLog(logStore, metaStore)
			return nil, fmt.Errorf("shard: bootstrap: %w", err)
		}
	}
	r, err := raft.NewRaft(rc, &raftFSM{fsm: s.fsm}, logStore, logStore, snaps, transport)
	if err != nil {
		closeLog(logStore, metaStore)
		return nil, fmt.Errorf("shard: start raft: %w", err)
	}
	s.raft = r
	s.verify.r = r
	s.wg.Add(2)
	go s.watchLeadership()
	go s.tickLoop()
	return s, nil
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
			s.ready.Store(false)
			if !leader {
				continue
			}
			// Everything committed in earlier terms must be applied before this leader
			// answers reads: the barrier commits an entry of the new term and waits for it.
			if err := s.raft.Barrier(s.cfg.ApplyTimeout).Error(); err != nil {
				s.cfg.Logger.Warn("shard: barrier after election failed", "err", err)
				continue
			}
			if s.raft.State() == raft.Leader {
				s.ready.Store(true)
			}
		}
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
	if err := f.Error(); err != nil {
		return meta.Result{}, mapRaftError(err)
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

// Stats describes the replica for metrics and status pages.
type Stats struct {
	State          string
	Ready          bool
	AppliedVersion uint64
	CommitIndex    uint64
	LastIndex      uint64
}

// Stats returns the replica's current Raft figures.
func (s *Shard) Stats() Stats {
	return Stats{State: s.raft.State().String(), Ready: s.ready.Load(), AppliedVersion: s.fsm.AppliedVersion(),
		CommitIndex: s.raft.CommitIndex(), LastIndex: s.raft.LastIndex()}
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
		s.wg.Wait()
		if cerr := s.log.Close(); err == nil {
			err = cerr
		}
		if cerr := s.logMeta.Close(); err == nil {
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
type raftFSM struct{ fsm *meta.FSM }

func (f *raftFSM) Apply(l *raft.Log) any {
	return f.fsm.Apply(l.Index, l.Data)
}

func (f *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{snap: f.fsm.Snapshot()}, nil
}

func (f *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	zr, err := zstd.NewReader(rc, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return fmt.Errorf("shard: snapshot decoder: %w", err)
	}
	defer zr.Close()
	return f.fsm.Restore(zr)
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

func closeLog(l *wal.WAL, m *metadb.BoltMetaDB) {
	l.Close()
	m.Close()
}
