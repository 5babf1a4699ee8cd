package shard

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the latency histograms of a process's replicas (Prometheus, namespace
// "cairn", subsystem "shard"), one series per shard label:
//
//   - cairn_shard_propose_duration_seconds{shard}: a proposal on the leader, from its
//     enqueue in Raft to its FSM result: commit on a majority (log append, replication,
//     fsync) plus the apply. Only proposals Raft answered without error are observed.
//   - cairn_shard_fsm_apply_duration_seconds{shard}: the FSM's Apply of one command, on
//     every replica.
//   - cairn_shard_snapshot_install_duration_seconds{shard}: the restore of a snapshot a
//     leader sent (a follower too far behind for its log), decode included.
//   - cairn_shard_snapshot_persist_duration_seconds{shard}: writing one of this replica's
//     own snapshots to disk.
//
// The counts and gauges that Stats carries (elections, leader changes, term, log size) are
// exported by the host's collector. hashicorp/raft's own go-metrics are not bridged: they
// go to one process-global sink under names that carry no shard id (and some carry peer
// ids), so a node's shards could not be told apart.
//
// A Metrics is a prometheus.Collector; register it once and hand Replica(label) to each
// replica's Config.Metrics. Its zero value is not usable: call NewMetrics.
type Metrics struct {
	vecs [timings]*prometheus.HistogramVec
}

// The timings of a replica, indexes of Metrics.vecs and ReplicaMetrics.obs.
const (
	timingPropose = iota
	timingApply
	timingInstall
	timingPersist
	timings
)

// NewMetrics returns unregistered replica histograms.
func NewMetrics() *Metrics {
	// 100µs .. ~13s for proposals and applies; 1ms .. ~9min for snapshots.
	fast, slow := prometheus.ExponentialBuckets(0.0001, 2, 18), prometheus.ExponentialBuckets(0.001, 2, 20)
	var m Metrics
	for i, d := range [timings]struct {
		name, help string
		buckets    []float64
	}{
		timingPropose: {"propose_duration_seconds", "Proposals on the leader from enqueue in Raft to the FSM result (commit on a majority plus apply).", fast},
		timingApply:   {"fsm_apply_duration_seconds", "FSM Apply of one command.", fast},
		timingInstall: {"snapshot_install_duration_seconds", "Restore of a snapshot received from a leader.", slow},
		timingPersist: {"snapshot_persist_duration_seconds", "Writing one of the replica's own snapshots to disk.", slow},
	} {
		m.vecs[i] = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "cairn", Subsystem: "shard", Name: d.name,
			Help: d.help, Buckets: d.buckets}, []string{"shard"})
	}
	return &m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range m.vecs {
		v.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, v := range m.vecs {
		v.Collect(ch)
	}
}

// Replica returns the observers of the replica whose series carry shard=label (the shard
// id; a bounded set).
func (m *Metrics) Replica(label string) *ReplicaMetrics {
	var r ReplicaMetrics
	for i, v := range m.vecs {
		r.obs[i] = v.WithLabelValues(label)
	}
	return &r
}

// ReplicaMetrics are one replica's observers (Metrics.Replica). A nil *ReplicaMetrics
// observes nothing.
type ReplicaMetrics struct {
	obs [timings]prometheus.Observer
}

// since observes the time since start as timing t.
func (r *ReplicaMetrics) since(t int, start time.Time) {
	if r != nil {
		r.obs[t].Observe(time.Since(start).Seconds())
	}
}

// observeRaft counts this replica's elections (transitions to candidate) and the leaders
// it learns of, from raft's observations, until the replica stops. The observer never
// blocks raft: an observation that finds the channel full is dropped (raft counts it).
func (s *Shard) observeRaft(ch <-chan raft.Observation) {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case o := <-ch:
			switch d := o.Data.(type) {
			case raft.RaftState:
				if d == raft.Candidate {
					s.elections.Add(1)
				}
			case raft.LeaderObservation:
				if d.LeaderID != "" {
					s.leaderChanges.Add(1)
				}
				s.leaderMoved.broadcast()
			}
		}
	}
}

// raftObserver registers the observer that observeRaft consumes.
func (s *Shard) raftObserver() (*raft.Observer, <-chan raft.Observation) {
	ch := make(chan raft.Observation, observationBuffer)
	o := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.RaftState, raft.LeaderObservation:
			return true
		}
		return false
	})
	s.raft.RegisterObserver(o)
	return o, ch
}

// observationBuffer is how many raft observations wait for observeRaft before raft drops
// further ones: state and leader changes come a few per election.
const observationBuffer = 64
