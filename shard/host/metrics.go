package host

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descApplied = prometheus.NewDesc("cairn_shard_applied_version", "Last shard version applied by the FSM.", []string{"shard"}, nil)
	descCommit  = prometheus.NewDesc("cairn_shard_commit_index", "Raft commit index.", []string{"shard"}, nil)
	descReady   = prometheus.NewDesc("cairn_shard_ready", "1 when the replica serves writes and linearizable reads.", []string{"shard"}, nil)
	descInstall = prometheus.NewDesc("cairn_shard_snapshot_installs_total",
		"Raft snapshots this replica received from a leader and restored since the process started (a follower too far behind for the leader's log).", []string{"shard"}, nil)
	descVoters = prometheus.NewDesc("cairn_shard_voters", "Voters in the shard's Raft configuration, as its leader (this node) sees it.", []string{"shard"}, nil)
	descPeer   = prometheus.NewDesc("cairn_peer_bytes_total",
		"Payload bytes on this node's peer port by stream (raft: replication of every shard; fwd: forwarded requests and commands, the node-to-node API) and direction (sent, received).", []string{"stream", "direction"}, nil)
	descFollow = prometheus.NewDesc("cairn_follower_reads_total",
		"Reads at a snapshot id that this node's replica of the shard answered from its applied state while it did not lead.", []string{"shard"}, nil)
)

// Collector returns the collector of every local replica's Raft figures (cairn_shard_*)
// and of the follower reads (cairn_follower_reads_total).
func (h *Host) Collector() prometheus.Collector { return hostCollector{h} }

type hostCollector struct{ h *Host }

func (c hostCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descApplied, descCommit, descReady, descInstall, descVoters, descFollow, descPeer} {
		ch <- d
	}
}

func (c hostCollector) Collect(ch chan<- prometheus.Metric) {
	for id, r := range c.h.Replicas() {
		st := r.Stats()
		ready := 0.0
		if st.Ready {
			ready = 1
		}
		label := strconv.Itoa(id)
		ch <- prometheus.MustNewConstMetric(descApplied, prometheus.GaugeValue, float64(st.AppliedVersion), label)
		ch <- prometheus.MustNewConstMetric(descCommit, prometheus.GaugeValue, float64(st.CommitIndex), label)
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, ready, label)
		ch <- prometheus.MustNewConstMetric(descInstall, prometheus.CounterValue, float64(st.SnapshotInstalls), label)
		if st.State != "Leader" {
			continue
		}
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
		for stream, t := range c.h.cluster.cfg.Peer.Traffic() {
			ch <- prometheus.MustNewConstMetric(descPeer, prometheus.CounterValue, float64(t.Sent), stream, "sent")
			ch <- prometheus.MustNewConstMetric(descPeer, prometheus.CounterValue, float64(t.Received), stream, "received")
		}
	}
	for id, n := range c.h.followerReads.snapshot() {
		ch <- prometheus.MustNewConstMetric(descFollow, prometheus.CounterValue, float64(n), strconv.Itoa(id))
	}
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
