package host

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/cairnstore/cairn/shard"
)

// replicaSet is the node's open replicas, by shard id: the replica of a shard is opened at
// most once (ensure), from DataDir/shards/<id>, and it is never opened
//
//   - once the host is closing (closing: TransferLeadership or Close ran),
//   - when its storage failed its check at an earlier open (damaged, shard.ErrDamaged):
//     opening it again would only read the damaged log once more per call,
//   - while its shard is being recovered on this node (recovering, recover.go).
//
// Every replica it opens wakes the leadership loop (kick) when its readiness changes; one
// it closes is reported to OnLeadership as no longer leading before it closes.
type replicaSet struct {
	// cfg is the host's configuration, the source of each replica's: its directory, node
	// id, metadata and Raft options, the peer port of a cluster node, OnLeadership.
	cfg     Config
	log     *slog.Logger
	timings *shard.Metrics // the replicas' latency histograms
	stored  *storedLoads   // a closed replica's count is forgotten (load.go)
	// kick wakes the leadership loop (Host.watchLeadership) when a replica's readiness
	// changed.
	kick    chan struct{}
	closing atomic.Bool

	mu         sync.RWMutex
	open       map[int]*shard.Shard
	damaged    map[int]error
	recovering map[int]bool
}

func newReplicaSet(cfg Config, timings *shard.Metrics, stored *storedLoads) *replicaSet {
	return &replicaSet{cfg: cfg, log: cfg.Logger, timings: timings, stored: stored, kick: make(chan struct{}, 1),
		open: map[int]*shard.Shard{}, damaged: map[int]error{}, recovering: map[int]bool{}}
}

// get returns the open replica of shard id, or nil.
func (rs *replicaSet) get(id int) *shard.Shard {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	return rs.open[id]
}

// all returns the open replicas by shard id.
func (rs *replicaSet) all() map[int]*shard.Shard {
	rs.mu.RLock()
	defer rs.mu.RUnlock()
	out := make(map[int]*shard.Shard, len(rs.open))
	for id, r := range rs.open {
		out[id] = r
	}
	return out
}

// ids returns the open replicas' shard ids in order.
func (rs *replicaSet) ids() []int {
	list := rs.all()
	ids := make([]int, 0, len(list))
	for id := range list {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// ensure opens the replica of shard id if it is not open.
func (rs *replicaSet) ensure(id int) (*shard.Shard, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.open[id]; ok {
		return r, nil
	}
	if rs.closing.Load() {
		return nil, shard.ErrClosed
	}
	if err, ok := rs.damaged[id]; ok {
		return nil, err
	}
	if rs.recovering[id] {
		return nil, fmt.Errorf("%w: shard %d is being recovered on this node", shard.ErrClosed, id)
	}
	r, err := shard.Open(rs.config(id))
	if err != nil {
		err = fmt.Errorf("open replica of shard %d: %w", id, err)
		if errors.Is(err, shard.ErrDamaged) {
			rs.damaged[id] = err
		}
		return nil, err
	}
	rs.open[id] = r
	if rs.cfg.Cluster != nil {
		rs.log.Info("replica opened", "shard", id)
	}
	return r, nil
}

// dir is the directory of the replica of shard id.
func (rs *replicaSet) dir(id int) string {
	return filepath.Join(rs.cfg.DataDir, "shards", strconv.Itoa(id))
}

// config is the configuration of the replica of shard id.
func (rs *replicaSet) config(id int) shard.Config {
	scfg := shard.Config{
		Dir:               rs.dir(id),
		NodeID:            rs.cfg.NodeID,
		FSM:               rs.cfg.FSM,
		SnapshotInterval:  rs.cfg.SnapshotInterval,
		SnapshotThreshold: rs.cfg.SnapshotThreshold,
		Logger:            rs.log,
		Metrics:           rs.timings.Replica(strconv.Itoa(id)),
		OnReady:           func(bool) { rs.wake() },
	}
	if c := rs.cfg.Cluster; c != nil {
		scfg.FSM.RequireRootAssignment = true
		scfg.FSM.RootUIDPrefix = fmt.Sprintf("s%dr", id)
		scfg.Logger = rs.log.With("shard", id)
		scfg.Peer = c.Peer
		scfg.ShardID = strconv.Itoa(id)
	}
	return scfg
}

// close closes and forgets the replica of shard id (its data stays on disk).
func (rs *replicaSet) close(id int) {
	rs.mu.Lock()
	r, ok := rs.open[id]
	delete(rs.open, id)
	rs.mu.Unlock()
	if ok {
		// The workers stop before the replica closes under them; the loop's own report
		// of the change follows (stopping twice is harmless).
		rs.tell(id, r, false)
		_ = r.Close()
		rs.stored.forget(r)
		rs.wake()
	}
}

// closeAll closes every replica, at the host's Close.
func (rs *replicaSet) closeAll() error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var errs []error
	for id, r := range rs.open {
		if err := r.Close(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", id, err))
		}
		delete(rs.open, id)
	}
	return errors.Join(errs...)
}

// closeForRecovery closes the replica of shard id and keeps it from opening until
// reopenAfterRecovery; false (nothing done) when it is not open or already being recovered.
func (rs *replicaSet) closeForRecovery(id int) bool {
	rs.mu.Lock()
	r := rs.open[id]
	if r == nil || rs.recovering[id] {
		rs.mu.Unlock()
		return false
	}
	delete(rs.open, id)
	rs.recovering[id] = true
	rs.mu.Unlock()
	rs.tell(id, r, false)
	_ = r.Close()
	return true
}

// reopenAfterRecovery ends the recovery of shard id begun by closeForRecovery and opens
// its replica again.
func (rs *replicaSet) reopenAfterRecovery(id int) error {
	rs.mu.Lock()
	delete(rs.recovering, id)
	rs.mu.Unlock()
	_, err := rs.ensure(id)
	rs.wake()
	return err
}

// wake wakes the leadership loop.
func (rs *replicaSet) wake() {
	select {
	case rs.kick <- struct{}{}:
	default:
	}
}

// tell reports to OnLeadership that the replica r of shard id leads or no longer does.
func (rs *replicaSet) tell(id int, r *shard.Shard, leads bool) {
	if rs.cfg.OnLeadership != nil {
		rs.cfg.OnLeadership(id, r, leads)
	}
}
