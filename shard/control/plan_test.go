package control

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func live(ids ...string) NodeSet {
	ns := NodeSet{}
	for _, id := range ids {
		ns[id] = NodeInfo{PeerAddr: id + ":7000"}
	}
	return ns
}

func rs(voters, nonvoters string) ReplicaSet {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	return ReplicaSet{Voters: split(voters), Nonvoters: split(nonvoters)}
}

// cfg builds a Raft configuration: "a,b" voters, "c" non-voters with the given lags.
func cfg(leader, voters string, nonvoterLags map[string]int64) ShardStatus {
	st := ShardStatus{Leader: leader}
	for _, v := range strings.Split(voters, ",") {
		if v != "" {
			st.Servers = append(st.Servers, Server{ID: v, Voter: true})
		}
	}
	ids := make([]string, 0, len(nonvoterLags))
	for id := range nonvoterLags {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		st.Servers = append(st.Servers, Server{ID: id, Lag: nonvoterLags[id]})
	}
	return st
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		st   State
		want []string // Action.String() of every action, in order
	}{
		{
			name: "a shard without a record is bootstrapped on the least-loaded live node",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b", "c"),
				Records: map[int]ReplicaSet{0: rs("a", "b")}},
			want: []string{
				"shard 1: record voters=[c] nonvoters=[]",
				"shard 1: bootstrap c",
			},
		},
		{
			name: "two empty shards go to different nodes",
			st:   State{Shards: 2, Replication: 1, Nodes: live("a", "b")},
			want: []string{
				"shard 0: record voters=[a] nonvoters=[]",
				"shard 0: bootstrap a",
				"shard 1: record voters=[b] nonvoters=[]",
				"shard 1: bootstrap b",
			},
		},
		{
			name: "a one-voter shard whose leader does not answer is bootstrapped again",
			st:   State{Shards: 1, Replication: 3, Nodes: live("a", "b"), Records: map[int]ReplicaSet{0: rs("a", "")}},
			want: []string{"shard 0: bootstrap a"},
		},
		{
			name: "a shard of several members whose leader does not answer is left alone",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c", "d"),
				Records: map[int]ReplicaSet{0: rs("a,b", "")}, Gone: map[string]bool{"a": true}},
			want: nil,
		},
		{
			name: "no live node means no bootstrap",
			st:   State{Shards: 1, Replication: 3, Nodes: live()},
			want: nil,
		},
		{
			name: "a shard short of replicas gets least-loaded nodes as non-voters, added in the same round",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b", "c", "d"), MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a", ""), 1: rs("b,c", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a", nil), 1: cfg("b", "b,c", nil)}},
			want: []string{
				"shard 0: record voters=[a] nonvoters=[d b]",
				"shard 0: add-nonvoter d",
				"shard 0: add-nonvoter b",
				"shard 1: record voters=[b c] nonvoters=[a]",
				"shard 1: add-nonvoter a",
			},
		},
		{
			name: "fewer live nodes than the replication factor: every live node, no more",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b"), MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a", "")}, Status: map[int]ShardStatus{0: cfg("a", "a", nil)}},
			want: []string{"shard 0: record voters=[a] nonvoters=[b]", "shard 0: add-nonvoter b"},
		},
		{
			name: "a caught-up non-voter is promoted, a lagging one is not",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c"), MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a", "b,c")},
				Status:  map[int]ShardStatus{0: cfg("a", "a", map[string]int64{"b": 10, "c": 11})}},
			want: []string{"shard 0: promote b"},
		},
		{
			name: "a non-voter whose lag is unknown is not promoted",
			st: State{Shards: 1, Replication: 2, Nodes: live("a", "b"), MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a", "b")},
				Status:  map[int]ShardStatus{0: cfg("a", "a", map[string]int64{"b": -1})}},
			want: nil,
		},
		{
			name: "the record follows roles and members Raft has",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c"), MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a", "b")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b,c", nil)}},
			want: []string{"shard 0: record voters=[a b c] nonvoters=[]"},
		},
		{
			name: "a node away within the grace period is neither replaced nor removed",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "d"), MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a,b,c", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b,c", nil)}},
			want: nil,
		},
		{
			name: "a gone voter is replaced by a non-voter and removed from Raft",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "d"), Gone: map[string]bool{"c": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,c", nil)}},
			want: []string{
				"shard 0: record voters=[a b c] nonvoters=[d]",
				"shard 0: add-nonvoter d",
				"shard 0: remove c",
			},
		},
		{
			name: "a gone node that Raft no longer has leaves the record",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "d"), Gone: map[string]bool{"c": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c", "d")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b", map[string]int64{"d": 50})}},
			want: []string{"shard 0: record voters=[a b] nonvoters=[d]"},
		},
		{
			name: "a voter Raft removed while it was gone and that came back joins again as a non-voter",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c"),
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b", nil)}},
			want: []string{
				"shard 0: record voters=[a b] nonvoters=[c]",
				"shard 0: add-nonvoter c",
			},
		},
		{
			name: "a voter Raft removed while it was gone and that came back after its replacement leaves the record",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c", "d"),
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,d", nil)}},
			want: []string{"shard 0: record voters=[a b d] nonvoters=[]"},
		},
		{
			name: "a surplus non-voter is removed, not promoted, once the shard has its voters",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c", "d"),
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c", "d")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,c", map[string]int64{"d": 0})}},
			want: []string{"shard 0: record voters=[a b c] nonvoters=[]", "shard 0: remove d"},
		},
		{
			name: "a gone leader is never removed",
			st: State{Shards: 1, Replication: 3, Nodes: live("b", "c"), Gone: map[string]bool{"a": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,c", nil)}},
			want: nil,
		},
		{
			name: "the last voter is never removed",
			st: State{Shards: 1, Replication: 1, Nodes: live("a", "b"), Gone: map[string]bool{"c": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("c", "b")},
				Status: map[int]ShardStatus{0: cfg("b", "c", map[string]int64{"b": 99})}},
			want: nil,
		},
		{
			name: "a gone non-voter is removed",
			st: State{Shards: 1, Replication: 2, Nodes: live("a", "b"), Gone: map[string]bool{"c": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a", "c")},
				Status: map[int]ShardStatus{0: cfg("a", "a", map[string]int64{"c": 0})}},
			want: []string{
				"shard 0: record voters=[a] nonvoters=[c b]",
				"shard 0: add-nonvoter b",
				"shard 0: remove c",
			},
		},
		{
			name: "a leaving voter gets a replacement and stays while the shard is short",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c", "d"), Leaving: map[string]bool{"c": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,c", nil)}},
			want: []string{
				"shard 0: record voters=[a b c] nonvoters=[d]",
				"shard 0: add-nonvoter d",
			},
		},
		{
			name: "a caught-up replacement of a leaving voter is promoted, not trimmed as surplus",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c", "d"), Leaving: map[string]bool{"c": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c", "d")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,c", map[string]int64{"d": 0})}},
			want: []string{"shard 0: promote d"},
		},
		{
			name: "a leaving voter goes once the shard has its voters without it",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c", "d"), Leaving: map[string]bool{"c": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c,d", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,c,d", nil)}},
			want: []string{"shard 0: remove c"},
		},
		{
			name: "a leaving leader goes too once the others suffice",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c", "d"), Leaving: map[string]bool{"a": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c,d", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,c,d", nil)}},
			want: []string{"shard 0: remove a"},
		},
		{
			name: "a removed leaving node leaves the record and does not join again",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c", "d"), Leaving: map[string]bool{"c": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c,d", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,d", nil)}},
			want: []string{"shard 0: record voters=[a b d] nonvoters=[]"},
		},
		{
			name: "a leaving node is never picked for a shard",
			st: State{Shards: 1, Replication: 2, Nodes: live("a", "b"), Leaving: map[string]bool{"b": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a", nil)}},
			want: nil,
		},
		{
			name: "the only voter of a one-replica shard leaves after its replacement is a voter",
			st: State{Shards: 1, Replication: 1, Nodes: live("a", "b"), Leaving: map[string]bool{"a": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b", "")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b", nil)}},
			want: []string{"shard 0: remove a"},
		},
		{
			name: "a leaving non-voter is removed at once",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c", "d"), Leaving: map[string]bool{"d": true},
				MaxPromoteLag: 10, Records: map[int]ReplicaSet{0: rs("a,b,c", "d")},
				Status: map[int]ShardStatus{0: cfg("a", "a,b,c", map[string]int64{"d": 0})}},
			// The record follows Raft: it drops d in the round after Raft did.
			want: []string{"shard 0: remove d"},
		},
		{
			name: "a converged shard needs nothing",
			st: State{Shards: 1, Replication: 3, Nodes: live("a", "b", "c"), MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a,b,c", "")}, Status: map[int]ShardStatus{0: cfg("b", "a,b,c", nil)}},
			want: nil,
		},
		// A shard a grow added (grow.go) opens only once its group has its voters.
		{
			name: "grown: a grown shard without a group is bootstrapped, not opened",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b", "c"), Closed: map[int]bool{1: true},
				Records: map[int]ReplicaSet{0: rs("a,b,c", "")}, Status: map[int]ShardStatus{0: cfg("a", "a,b,c", nil)}},
			want: []string{"shard 1: record voters=[a] nonvoters=[]", "shard 1: bootstrap a"},
		},
		{
			name: "grown: a grown shard with one voter of three gets replicas and stays closed",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b", "c"), Closed: map[int]bool{1: true}, MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a,b,c", ""), 1: rs("a", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b,c", nil), 1: cfg("a", "a", nil)}},
			want: []string{"shard 1: record voters=[a] nonvoters=[b c]", "shard 1: add-nonvoter b", "shard 1: add-nonvoter c"},
		},
		{
			name: "grown: a grown shard whose non-voters are promoted this round opens in a later one",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b", "c"), Closed: map[int]bool{1: true}, MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a,b,c", ""), 1: rs("a", "b,c")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b,c", nil), 1: cfg("a", "a", map[string]int64{"b": 0, "c": 0})}},
			want: []string{"shard 1: promote b", "shard 1: promote c"},
		},
		{
			name: "grown: a grown shard with its voters opens",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b", "c"), Closed: map[int]bool{1: true},
				Records: map[int]ReplicaSet{0: rs("a,b,c", ""), 1: rs("a,b,c", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b,c", nil), 1: cfg("a", "a,b,c", nil)}},
			want: []string{"shard 1: open"},
		},
		{
			name: "grown: an open shard is not opened again",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b", "c"),
				Records: map[int]ReplicaSet{0: rs("a,b,c", ""), 1: rs("a,b,c", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b,c", nil), 1: cfg("a", "a,b,c", nil)}},
			want: nil,
		},
		{
			name: "grown: fewer live nodes than the replication factor: stays closed with every one of them",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b"), Closed: map[int]bool{1: true},
				Records: map[int]ReplicaSet{0: rs("a,b", ""), 1: rs("a,b", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b", nil), 1: cfg("b", "a,b", nil)}},
			want: nil,
		},
		{
			name: "grown: a node down: a grown shard with two voters of three stays closed",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b"), Closed: map[int]bool{1: true}, MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a,b,c", ""), 1: rs("a,b", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b,c", nil), 1: cfg("a", "a,b", nil)}},
			want: nil,
		},
		{
			name: "grown: the node back: the grown shard gets its third voter, then opens",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b", "c"), Closed: map[int]bool{1: true},
				Records: map[int]ReplicaSet{0: rs("a,b,c", ""), 1: rs("a,b,c", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b,c", nil), 1: cfg("a", "a,b,c", nil)}},
			want: []string{"shard 1: open"},
		},
		{
			name: "grown: a leaving voter does not count toward opening",
			st: State{Shards: 2, Replication: 3, Nodes: live("a", "b", "c", "d"), Closed: map[int]bool{1: true},
				Leaving: map[string]bool{"c": true}, MaxPromoteLag: 10,
				Records: map[int]ReplicaSet{0: rs("a,b,d", ""), 1: rs("a,b,c", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a,b,d", nil), 1: cfg("a", "a,b,c", nil)}},
			want: []string{"shard 1: record voters=[a b c] nonvoters=[d]", "shard 1: add-nonvoter d"},
		},
		{
			name: "grown: a grown shard whose leader does not answer stays closed",
			st: State{Shards: 2, Replication: 1, Nodes: live("a", "b"), Closed: map[int]bool{1: true},
				Records: map[int]ReplicaSet{0: rs("a", ""), 1: rs("a,b", "")},
				Status:  map[int]ShardStatus{0: cfg("a", "a", nil)}},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, a := range Plan(tt.st) {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Plan:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

func TestPlanSpreadsReplicasEvenly(t *testing.T) {
	// Four one-voter shards on four nodes, replication 3: twelve replicas, three per node.
	st := State{Shards: 4, Replication: 3, Nodes: live("n1", "n2", "n3", "n4"), MaxPromoteLag: 10,
		Records: map[int]ReplicaSet{}, Status: map[int]ShardStatus{}}
	for s, n := range []string{"n1", "n2", "n3", "n4"} {
		st.Records[s] = rs(n, "")
		st.Status[s] = cfg(n, n, nil)
	}
	perNode := map[string]int{}
	for _, a := range Plan(st) {
		if a.Kind == ActionRecord {
			for _, m := range a.Set.Members() {
				perNode[m]++
			}
		}
	}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		if perNode[n] != 3 {
			t.Fatalf("replicas per node %v, want 3 each", perNode)
		}
	}
}

func TestPlanKeepsRecordRevisionAndAddresses(t *testing.T) {
	st := State{Shards: 1, Replication: 2, Nodes: live("a", "b"), MaxPromoteLag: 1,
		Records: map[int]ReplicaSet{0: {Voters: []string{"a"}, Revision: 42}},
		Status:  map[int]ShardStatus{0: cfg("a", "a", nil)}}
	acts := Plan(st)
	if len(acts) != 2 || acts[0].Set.Revision != 42 || acts[1].Addr != "b:7000" {
		t.Fatalf("Plan = %+v; want a record conditional on revision 42, then add b at b:7000", acts)
	}
	if st.Records[0].Nonvoters != nil {
		t.Fatalf("Plan changed its input: %+v", st.Records[0])
	}
}

func TestTrackAbsence(t *testing.T) {
	t0 := time.Unix(1000, 0)
	grace := time.Minute
	nodes := live("a")
	since, gone := TrackAbsence(nil, []string{"a", "b", "c"}, nodes, t0, grace)
	if len(gone) != 0 || !since["b"].Equal(t0) || !since["c"].Equal(t0) || len(since) != 2 {
		t.Fatalf("first sight: since %v gone %v; want b, c missing since t0, none gone", since, gone)
	}
	// c comes back; b stays away past the grace period.
	since, gone = TrackAbsence(since, []string{"a", "b", "c"}, live("a", "c"), t0.Add(grace), grace)
	if len(gone) != 0 {
		t.Fatalf("exactly at the grace period: gone %v, want none", gone)
	}
	since, gone = TrackAbsence(since, []string{"a", "b", "c"}, live("a", "c"), t0.Add(grace+time.Second), grace)
	if !gone["b"] || len(gone) != 1 || !since["b"].Equal(t0) {
		t.Fatalf("past the grace period: since %v gone %v; want b gone since t0", since, gone)
	}
	// c leaves again: its clock starts over.
	t1 := t0.Add(2 * grace)
	since, gone = TrackAbsence(since, []string{"a", "b", "c"}, live("a"), t1, grace)
	if !since["c"].Equal(t1) || gone["c"] {
		t.Fatalf("c left again: since %v gone %v; want c missing since t1, not gone", since, gone)
	}
	// A node no longer in any replica set is forgotten.
	since, _ = TrackAbsence(since, []string{"a"}, live("a"), t1, grace)
	if len(since) != 0 {
		t.Fatalf("since = %v, want empty", since)
	}
}
