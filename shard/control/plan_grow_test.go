package control

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// raftModel is the Raft side of a cluster for the property test: each shard's
// configuration, changed by the controller's actions as a leader would (a new non-voter
// has caught up by the next status report).
type raftModel struct {
	groups  map[int][]Server
	records map[int]ReplicaSet
	open    map[int]bool
}

func (m *raftModel) state(shards, replication int, nodes NodeSet) State {
	st := State{Shards: shards, Replication: replication, Nodes: nodes, MaxPromoteLag: 0,
		Records: map[int]ReplicaSet{}, Status: map[int]ShardStatus{}, Closed: map[int]bool{}}
	for s, r := range m.records {
		st.Records[s] = ReplicaSet{Voters: slices.Clone(r.Voters), Nonvoters: slices.Clone(r.Nonvoters)}
	}
	for s, g := range m.groups {
		st.Status[s] = ShardStatus{Leader: g[0].ID, Servers: slices.Clone(g)}
	}
	for s := range shards {
		if !m.open[s] {
			st.Closed[s] = true
		}
	}
	return st
}

func (m *raftModel) apply(a Action) {
	g := m.groups[a.Shard]
	switch a.Kind {
	case ActionRecord:
		m.records[a.Shard] = a.Set
	case ActionBootstrap:
		if g == nil {
			m.groups[a.Shard] = []Server{{ID: a.Node, Voter: true}}
		}
	case ActionAddNonvoter:
		if !slices.ContainsFunc(g, func(s Server) bool { return s.ID == a.Node }) {
			m.groups[a.Shard] = append(g, Server{ID: a.Node})
		}
	case ActionPromote:
		for i := range g {
			if g[i].ID == a.Node {
				g[i].Voter = true
			}
		}
	case ActionRemove:
		m.groups[a.Shard] = slices.DeleteFunc(g, func(s Server) bool { return s.ID == a.Node })
	case ActionOpen:
		m.open[a.Shard] = true
	}
}

// TestPlanGrowsAClusterToConvergence: a cluster of some nodes and shards, converged, grows
// by some shards; the controller's rounds (Plan, its actions applied to a Raft model)
// converge again: every shard has min(replication, nodes) voters; the shards of the
// creation are open, and a grown one is open exactly when it has replication voters (a
// cluster with fewer nodes than that keeps it closed). Plan is deterministic, and opens a
// shard only when its group has replication voters.
func TestPlanGrowsAClusterToConvergence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "nodes")
		replication := rapid.IntRange(1, 3).Draw(t, "replication")
		initial := rapid.IntRange(1, 4).Draw(t, "initial shards")
		add := rapid.IntRange(1, 6).Draw(t, "added shards")
		nodes := NodeSet{}
		for i := range n {
			nodes[fmt.Sprintf("n%d", i)] = NodeInfo{PeerAddr: fmt.Sprintf("n%d:7000", i)}
		}
		m := &raftModel{groups: map[int][]Server{}, records: map[int]ReplicaSet{}, open: map[int]bool{}}
		for s := range initial {
			m.open[s] = true
		}
		want := min(replication, n)
		round := func(shards int) int {
			st := m.state(shards, replication, nodes)
			acts := Plan(st)
			if again := Plan(m.state(shards, replication, nodes)); !reflect.DeepEqual(acts, again) {
				t.Fatalf("Plan is not deterministic:\n%v\n%v", acts, again)
			}
			for _, a := range acts {
				if a.Kind == ActionOpen {
					voters := 0
					for _, s := range m.groups[a.Shard] {
						if s.Voter {
							voters++
						}
					}
					if !st.Closed[a.Shard] || voters < replication {
						t.Fatalf("shard %d opened with %d voters (want %d), closed %v", a.Shard, voters, replication, st.Closed[a.Shard])
					}
				}
				m.apply(a)
			}
			return len(acts)
		}
		converge := func(shards int) {
			for r := 0; ; r++ {
				if round(shards) == 0 {
					break
				}
				if r > 20 {
					t.Fatalf("no convergence after %d rounds: %v", r, m.groups)
				}
			}
			for s := range shards {
				voters := 0
				for _, sv := range m.groups[s] {
					if !sv.Voter {
						t.Fatalf("shard %d: non-voter %s left", s, sv.ID)
					}
					voters++
				}
				if wantOpen := s < initial || n >= replication; voters != want || m.open[s] != wantOpen {
					t.Fatalf("shard %d: %d voters (want %d), open %v (want %v)", s, voters, want, m.open[s], wantOpen)
				}
			}
		}
		converge(initial)
		converge(initial + add)
	})
}

func TestLeastLoadedHashesLikeFNV1a(t *testing.T) {
	loads, open := make([]int64, 7), make([]bool, 7)
	for s := range open {
		open[s] = true
	}
	for _, root := range []string{"a", "agent-7", "root-123456"} {
		h := fnv.New32a()
		h.Write([]byte(root))
		if got, want := leastLoaded(loads, open, root), int(h.Sum32()%7); got != want {
			t.Fatalf("%s: shard %d, want %d (FNV-1a of the root among 7 ties)", root, got, want)
		}
	}
	open[2], loads[4] = false, 0
	loads[0], loads[1], loads[3], loads[5], loads[6] = 1, 1, 1, 1, 1
	if got := leastLoaded(loads, open, "x"); got != 4 {
		t.Fatalf("the only least-loaded open shard is 4, got %d", got)
	}
}
