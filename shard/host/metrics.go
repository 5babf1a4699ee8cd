package host

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descApplied = prometheus.NewDesc("cairn_shard_applied_version", "Last shard version applied by the FSM.", []string{"shard"}, nil)
	descCommit  = prometheus.NewDesc("cairn_shard_commit_index", "Raft commit index.", []string{"shard"}, nil)
	descReady   = prometheus.NewDesc("cairn_shard_ready", "1 when the replica serves writes and linearizable reads.", []string{"shard"}, nil)
	descLeader  = prometheus.NewDesc("cairn_shard_leader", "1 when the replica is its shard's Raft leader (ready or not yet).", []string{"shard"}, nil)
	descTerm    = prometheus.NewDesc("cairn_shard_term", "The replica's current Raft term.", []string{"shard"}, nil)
	descElect   = prometheus.NewDesc("cairn_shard_elections_total",
		"Elections this replica stood in (it became a candidate) since it opened.", []string{"shard"}, nil)
	descLeaderChanges = prometheus.NewDesc("cairn_shard_leader_changes_total",
		"Leaders this replica learned of since it opened (a new leader, or the same one after a time without any).", []string{"shard"}, nil)
	descLogEntries = prometheus.NewDesc("cairn_shard_log_entries", "Entries in the replica's Raft log (snapshots compact it).", []string{"shard"}, nil)
	descLogBytes   = prometheus.NewDesc("cairn_shard_log_bytes", "Size of the replica's Raft log file (raft.db) in bytes.", []string{"shard"}, nil)
	descInstall    = prometheus.NewDesc("cairn_shard_snapshot_installs_total",
		"Raft snapshots this replica received from a leader and restored since the process started (a follower too far behind for the leader's log).", []string{"shard"}, nil)
	descVoters = prometheus.NewDesc("cairn_shard_voters", "Voters in the shard's Raft configuration, as its leader (this node) sees it.", []string{"shard"}, nil)
	descPeer   = prometheus.NewDesc("cairn_peer_bytes_total",
		"Payload bytes on this node's peer port by stream (raft: replication of every shard; fwd: forwarded requests and commands, the node-to-node API) and direction (sent, received).", []string{"stream", "direction"}, nil)
	descCommands = prometheus.NewDesc("cairn_shard_commands_total",
		"Commands this replica proposed as its shard's leader that applied (the shard's write load; by root in the leader's status).", []string{"shard"}, nil)
	descRoots       = prometheus.NewDesc("cairn_shard_roots", "Agent roots the shard holds, as its leader (this node) counts them.", []string{"shard"}, nil)
	descStoredBytes = prometheus.NewDesc("cairn_shard_stored_bytes", "Logical bytes of the live files of the shard's roots (their quota usage), as its leader (this node) counts them.", []string{"shard"}, nil)
	descController  = prometheus.NewDesc("cairn_controller_leading", "1 on the node whose controller holds the election (it assigns replicas and drives root moves), 0 on the others.", nil, nil)
	descFollow      = prometheus.NewDesc("cairn_follower_reads_total",
		"Reads at a snapshot id that this node's replica of the shard answered from its applied state while it did not lead.", []string{"shard"}, nil)
)

// Collector returns the collector of every local replica's Raft figures (cairn_shard_*:
// the gauges and counts of shard.Stats, and the latency histograms of shard.Metrics) and of
// the follower reads (cairn_follower_reads_total). Every series carries shard, the shard
// id; none is per peer or per root.
func (h *Host) Collector() prometheus.Collector { return hostCollector{h} }

type hostCollector struct{ h *Host }

func (c hostCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descApplied, descCommit, descReady, descLeader, descTerm, descElect, descLeaderChanges,
		descLogEntries, descLogBytes, descInstall, descVoters, descFollow, descPeer, descCommands, descRoots, descStoredBytes,
		descController} {
		ch <- d
	}
	c.h.raftTimings.Describe(ch)
}

func (c hostCollector) Collect(ch chan<- prometheus.Metric) {
	for id, r := range c.h.Replicas() {
		st := r.Stats()
		ready := 0.0
		if st.Ready {
			ready = 1
		}
		leader := 0.0
		if st.State == "Leader" {
			leader = 1
		}
		label := strconv.Itoa(id)
		for _, m := range []struct {
			d *prometheus.Desc
			t prometheus.ValueType
			v float64
		}{
			{descApplied, prometheus.GaugeValue, float64(st.AppliedVersion)},
			{descCommit, prometheus.GaugeValue, float64(st.CommitIndex)},
			{descReady, prometheus.GaugeValue, ready},
			{descLeader, prometheus.GaugeValue, leader},
			{descTerm, prometheus.GaugeValue, float64(st.Term)},
			{descElect, prometheus.CounterValue, float64(st.Elections)},
			{descLeaderChanges, prometheus.CounterValue, float64(st.LeaderChanges)},
			{descLogEntries, prometheus.GaugeValue, float64(st.LogEntries)},
			{descLogBytes, prometheus.GaugeValue, float64(st.LogFileBytes)},
			{descInstall, prometheus.CounterValue, float64(st.SnapshotInstalls)},
			{descCommands, prometheus.CounterValue, float64(r.WriteLoad(0).Commands)},
		} {
			ch <- prometheus.MustNewConstMetric(m.d, m.t, m.v, label)
		}
		if st.State != "Leader" {
			continue
		}
		stored := c.h.stored.get(r, time.Now())
		ch <- prometheus.MustNewConstMetric(descRoots, prometheus.GaugeValue, float64(stored.roots), label)
		ch <- prometheus.MustNewConstMetric(descStoredBytes, prometheus.GaugeValue, float64(stored.bytes), label)
		if members, err := r.Configuration(); err == nil {
			voters := 0
			for _, m := range members {
				if m.Voter {
					voters++
				}
			}
			ch <- prometheus.MustNewConstMetric(descVoters, prometheus.GaugeValue, float64(voters), label)
		}
	}
	if c.h.cluster != nil {
		if ctrl := c.h.cluster.ctrl; ctrl != nil {
			leading := 0.0
			if ctrl.Leading() {
				leading = 1
			}
			ch <- prometheus.MustNewConstMetric(descController, prometheus.GaugeValue, leading)
		}
		for stream, t := range c.h.cluster.cfg.Peer.Traffic() {
			ch <- prometheus.MustNewConstMetric(descPeer, prometheus.CounterValue, float64(t.Sent), stream, "sent")
			ch <- prometheus.MustNewConstMetric(descPeer, prometheus.CounterValue, float64(t.Received), stream, "received")
		}
	}
	for id, n := range c.h.followerReads.snapshot() {
		ch <- prometheus.MustNewConstMetric(descFollow, prometheus.CounterValue, float64(n), strconv.Itoa(id))
	}
	c.h.raftTimings.Collect(ch)
}

// followerReadCounter counts follower reads per shard.
type followerReadCounter struct {
	mu sync.Mutex
	n  map[int]uint64
}

func newFollowerReadCounter() *followerReadCounter { return &followerReadCounter{n: map[int]uint64{}} }

func (c *followerReadCounter) inc(id int) {
	c.mu.Lock()
	c.n[id]++
	c.mu.Unlock()
}

func (c *followerReadCounter) snapshot() map[int]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int]uint64, len(c.n))
	for id, n := range c.n {
		out[id] = n
	}
	return out
}
