package shard

import (
	"errors"
	"fmt"
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

	"github.com/cairnstore/cairn/internal/durable"
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

// Shard is one replica of one shard.
type Shard struct {
	cfg       Config
	fsm       *meta.FSM
	raft      *raft.Raft
	log       *logStore
	lock      *flock.Flock
	snaps     *raft.FileSnapshotStore
	transport raft.Transport
	confirm   confirmer
	applied   applyWaiters

	disk diskGauge // free space under Dir; proposals stop while it is short
	// caughtUp: this replica led term leaderTerm and applied its post-election barrier
	// there. confirmedAt is when (monotonic, since opened0) the newest passed leadership
	// round began; Ready needs both (leader.go). published is the readiness last reported
	// to Config.OnReady, under publishMu.
	caughtUp    atomic.Bool
	soloVoter   atomic.Bool    // the latest configuration has this replica as its only voter
	alone       atomic.Bool    // the latest configuration has this replica as its only server
	probing     sync.WaitGroup // confirmation heartbeats in flight (confirm.go)
	leaderTerm  atomic.Uint64
	confirmedAt atomic.Int64
	opened0     time.Time
	publishMu   sync.Mutex
	published   bool

	replay    replayState  // what the log held past the newest snapshot at open (replay.go)
	lastApply atomic.Int64 // unix ms of the last proposal, for idle ticks
	load      loadMeter    // the commands this replica proposed that applied (load.go)
	opened    atomic.Bool  // NewRaft returned: later FSM restores are snapshot installs
	installs  atomic.Uint64
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	closeMu   sync.RWMutex
	closed    bool

	// elections and leaderChanges count raft observations (observeRaft).
	elections, leaderChanges atomic.Uint64
	leaderMoved              notifier // broadcast on every leader observation (LeaderChanged)
	observer                 *raft.Observer
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
	s := &Shard{cfg: cfg, fsm: meta.New(cfg.FSM), stop: make(chan struct{}), disk: diskGauge{dir: cfg.Dir, min: cfg.MinFreeBytes}, opened0: time.Now()}
	s.confirm.s = s
	s.applied.waiting = map[chan struct{}]uint64{}
	if err := s.start(); err != nil {
		return nil, err
	}
	s.opened.Store(true)
	var observations <-chan raft.Observation
	s.observer, observations = s.raftObserver()
	s.wg.Add(5)
	go s.watchLeadership()
	go s.keepLeadership()
	go s.tickLoop()
	go s.observeRaft(observations)
	go s.compactAfterReplay(s.replay, s.opened0)
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
	switch {
	case cfg.inmem != nil:
		s.transport, boot = cfg.inmem.transport, cfg.inmem.voters
	case layer == nil:
		addr, inmem := raft.NewInmemTransport(raft.ServerAddress(cfg.NodeID))
		s.transport = inmem
		boot = []raft.Server{{ID: raft.ServerID(cfg.NodeID), Address: addr, Suffrage: raft.Voter}}
	default:
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

	if s.replay, err = s.replayAtOpen(); err != nil {
		return fmt.Errorf("shard: inspect the log: %w", err)
	}
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
		if err := durable.WriteFile(p, []byte(id+"\n"), 0o644); err != nil {
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
	// LogEntries is how many entries the log holds now (snapshots compact it down to
	// Config.TrailingLogs); LogFileBytes is the size of its file, Dir/raft.db (bbolt reuses
	// freed pages, so the file does not shrink when the log does).
	LogEntries   uint64
	LogFileBytes int64
	// Elections counts the times this replica stood for election (became a candidate)
	// since it opened; LeaderChanges the times it learned of a leader (a new one, or the
	// same after a time without one).
	Elections     uint64
	LeaderChanges uint64
}

// Stats returns the replica's current Raft figures.
func (s *Shard) Stats() Stats {
	applied, last := s.raft.AppliedIndex(), s.raft.LastIndex()
	_, leader := s.raft.LeaderWithID()
	st := Stats{State: s.raft.State().String(), Ready: s.Ready(), AppliedVersion: s.fsm.AppliedVersion(),
		AppliedIndex: applied, CommitIndex: s.raft.CommitIndex(), LastIndex: last, Term: s.raft.CurrentTerm(),
		LeaderID: string(leader), SnapshotInstalls: s.installs.Load(),
		LogAppends: s.log.appends.Load(), LogEntriesWritten: s.log.entries.Load(),
		Elections: s.elections.Load(), LeaderChanges: s.leaderChanges.Load()}
	if last > applied {
		st.Lag = last - applied
	}
	st.LogEntries, st.LogFileBytes = s.log.size()
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
		s.caughtUp.Store(false)
		s.drainProbes()
		err := s.raft.Shutdown().Error()
		s.raft.DeregisterObserver(s.observer)
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
