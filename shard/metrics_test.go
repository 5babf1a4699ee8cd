package shard

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/internal/retry"
)

// nodeMetrics hands each test node its own Metrics (one per process in production), so
// that the replicas of one shard on different nodes do not share series.
type nodeMetrics struct {
	mu sync.Mutex
	m  map[string]*Metrics // by NodeID
}

func (nm *nodeMetrics) tweak(cfg *Config) {
	loopbackTimeouts(cfg)
	nm.mu.Lock()
	defer nm.mu.Unlock()
	if nm.m == nil {
		nm.m = map[string]*Metrics{}
	}
	if nm.m[cfg.NodeID] == nil {
		nm.m[cfg.NodeID] = NewMetrics()
	}
	cfg.Metrics = nm.m[cfg.NodeID].Replica(cfg.ShardID)
}

// count returns the sample count of histogram name for shard on node.
func (nm *nodeMetrics) count(t *testing.T, node *testNode, name, shard string) uint64 {
	t.Helper()
	nm.mu.Lock()
	m := nm.m[node.id]
	nm.mu.Unlock()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	return uint64(metricstest.Value(t, reg, name, "shard="+shard))
}

func TestStatsAndMetricsFollowElectionsProposalsAndTheLog(t *testing.T) {
	nm := &nodeMetrics{}
	c := newCluster(t, 3, []string{"0"}, nm.tweak)
	const writes = 20
	for i := 0; i < writes; i++ {
		c.mustPropose("0", put(fmt.Sprintf("f%d", i), "x"))
	}
	c.converged("0")
	old, ls := c.leader("0")
	before := map[*testNode]Stats{}
	var elections uint64
	for n, s := range c.replicas("0") {
		st := s.Stats()
		before[n] = st
		elections += st.Elections
		if st.LeaderChanges < 1 || st.Term < 1 || st.LogEntries < writes || st.LogFileBytes <= 0 {
			t.Fatalf("%s after an election and %d writes: %+v", n.name, writes, st)
		}
		if got := nm.count(t, n, "cairn_shard_fsm_apply_duration_seconds", "0"); got < writes {
			t.Fatalf("%s observed %d FSM applies, want at least %d", n.name, got, writes)
		}
	}
	if elections < 1 {
		t.Fatal("a leader was elected, and no replica counted an election")
	}
	if got := nm.count(t, old, "cairn_shard_propose_duration_seconds", "0"); got < 1 {
		t.Fatalf("the leader observed %d proposals", got)
	}

	// A leadership transfer: the target stands for election, and every replica learns of
	// the new leader in a later term.
	if err := ls.TransferLeadership(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.mustPropose("0", put("after", "x"))
	ln, _ := c.leader("0")
	retry.SucceedsSoon(t, "every replica learns of the new leader", func() error {
		for n, s := range c.replicas("0") {
			st := s.Stats()
			if st.LeaderChanges <= before[n].LeaderChanges || st.Term <= before[n].Term {
				return fmt.Errorf("%s: leader changes %d → %d, term %d → %d", n.name, before[n].LeaderChanges, st.LeaderChanges, before[n].Term, st.Term)
			}
		}
		return nil
	})
	if got := c.replicas("0")[ln].Stats().Elections; got <= before[ln].Elections {
		t.Fatalf("the new leader's elections went from %d to %d", before[ln].Elections, got)
	}
}
