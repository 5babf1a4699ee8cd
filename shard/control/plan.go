package control

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// ShardStatus is a shard's Raft configuration as its leader sees it.
type ShardStatus struct {
	// Leader is the node id of the leader that answered.
	Leader string
	// Servers is the Raft configuration: every voter and non-voter.
	Servers []Server
	// Load is the shard's load as the leader measured it (nil from a node that does not
	// report it): the rebalance decision's input (Rebalance).
	Load *ShardLoad `json:",omitempty"`
}

// Server is one member of a shard's Raft configuration.
type Server struct {
	ID    string `json:"id"` // node id (Raft server id)
	Voter bool   `json:"voter"`
	// Lag is how many log entries the member's applied index is behind the leader's
	// commit index; negative when unknown (the member did not report).
	Lag int64 `json:"lag"`
}

func (s ShardStatus) server(id string) (Server, bool) {
	for _, m := range s.Servers {
		if m.ID == id {
			return m, true
		}
	}
	return Server{}, false
}

func (s ShardStatus) voters() int {
	n := 0
	for _, m := range s.Servers {
		if m.Voter {
			n++
		}
	}
	return n
}

// ActionKind says what an Action does.
type ActionKind int

// The actions the controller takes. ActionRecord writes etcd; the others change a shard's
// Raft configuration through ShardAdmin.
const (
	// ActionRecord writes Set as the shard's replica-set record, conditional on the record's
	// revision when it was read (Set.Revision) and on the controller's election key.
	ActionRecord ActionKind = iota + 1
	// ActionBootstrap creates the shard's Raft group on Node as its single voter.
	ActionBootstrap
	// ActionAddNonvoter adds Node (at Addr) to the shard's configuration as a non-voter.
	ActionAddNonvoter
	// ActionPromote makes the caught-up non-voter Node a voter.
	ActionPromote
	// ActionRemove removes Node from the shard's configuration.
	ActionRemove
	// ActionOpen opens a shard added by a grow to placement (it creates the shard's load
	// counter, grow.go), once its group has its voters.
	ActionOpen
)

func (k ActionKind) String() string {
	switch k {
	case ActionRecord:
		return "record"
	case ActionBootstrap:
		return "bootstrap"
	case ActionAddNonvoter:
		return "add-nonvoter"
	case ActionPromote:
		return "promote"
	case ActionRemove:
		return "remove"
	case ActionOpen:
		return "open"
	}
	return fmt.Sprintf("action(%d)", int(k))
}

// Action is one step the controller decided on.
type Action struct {
	Kind  ActionKind
	Shard int
	Node  string     // the node a Raft action is about
	Addr  string     // the node's peer address (bootstrap, add)
	Set   ReplicaSet // ActionRecord: the record to write; Set.Revision is the one read
}

func (a Action) String() string {
	switch a.Kind {
	case ActionRecord:
		return fmt.Sprintf("shard %d: record voters=%v nonvoters=%v", a.Shard, a.Set.Voters, a.Set.Nonvoters)
	case ActionOpen:
		return fmt.Sprintf("shard %d: open", a.Shard)
	}
	return fmt.Sprintf("shard %d: %s %s", a.Shard, a.Kind, a.Node)
}

// State is everything the controller observed before a reconcile round.
type State struct {
	Shards      int // shard count of the cluster
	Replication int // replicas wanted per shard
	// Nodes are the registered (live) nodes.
	Nodes NodeSet
	// Gone are the nodes unregistered for longer than the grace period; a node neither
	// live nor gone is away but may come back, and nothing is done about it yet.
	Gone map[string]bool
	// Leaving are the nodes an admin decommissioned (leaving.go): live or not, they get
	// no new replica and count toward no shard's replication, and each of their replicas
	// goes once the shard has Replication voters without them.
	Leaving map[string]bool
	// Records are the replica-set records, keyed by shard (absent: no record).
	Records map[int]ReplicaSet
	// Status are the shards whose leader answered, keyed by shard (absent: unknown).
	Status map[int]ShardStatus
	// MaxPromoteLag is the largest lag (log entries) at which a non-voter is promoted.
	MaxPromoteLag int64
	// Closed are the shards a grow added that are not open to placement yet (grow.go);
	// absent: open.
	Closed map[int]bool
}

// Plan decides the actions of one reconcile round. It is pure: same State, same actions.
// Per shard, in shard order, a record write (if the record must change) comes before the
// Raft actions that rely on it.
//
// Rules (docs/architecture.md#replication-and-placement):
//   - A shard with no record gets one with the least-loaded live node as its only voter,
//     and that node bootstraps the group; a one-voter record of a shard whose leader does
//     not answer bootstraps again (bootstrapping an existing group is a no-op on the node).
//   - Nothing else happens to a shard whose leader does not answer.
//   - The record follows the Raft configuration: members' roles are copied from Raft,
//     members Raft has that the record lacks are added, gone nodes that Raft no longer
//     has are dropped, and members Raft no longer has that are not gone (removed while
//     away, back since) become non-voters, so that they are added to Raft again, unless
//     the shard has Replication members without them (then they leave the record).
//   - A shard with fewer than Replication members that are not gone gets live nodes that
//     do not host it yet, least-loaded first (count of records listing the node, ties by
//     id; one replica per shard per pass over the shards), as non-voters, added to Raft in
//     the same round.
//   - A non-voter of a shard that has Replication live voters is surplus and removed;
//     otherwise a non-voter whose lag is known and at most MaxPromoteLag is promoted.
//   - A gone node is removed from Raft unless it is the leader or the last voter.
//   - A leaving node is treated as gone for placement (never picked, not counted as a
//     live member, so the shard gets a replacement), but stays in Raft until the shard
//     has Replication live voters that are not leaving; then it is removed, even as the
//     leader (Raft then elects another: the shard's voters are all caught up).
//   - A closed shard (added by a grow) is opened, after its other actions, once its leader
//     answers with Replication voters that are live and not leaving (docs/runbook.md,
//     "Add shards": a new shard opens fully replicated); while a node is down, or the
//     cluster has fewer eligible nodes than Replication, it stays closed and takes no
//     root. Never before its group exists, so no root is placed on a shard nobody serves.
func Plan(st State) []Action {
	away := func(id string) bool { return st.Gone[id] || st.Leaving[id] }
	load := map[string]int{}
	for _, r := range st.Records {
		for _, m := range r.Members() {
			load[m]++
		}
	}
	live := make([]string, 0, len(st.Nodes))
	for id := range st.Nodes {
		live = append(live, id)
	}
	sort.Strings(live)
	pick := func(exclude ReplicaSet) (string, bool) {
		best, found := "", false
		for _, id := range live {
			if away(id) || exclude.Has(id) {
				continue
			}
			if !found || load[id] < load[best] {
				best, found = id, true
			}
		}
		return best, found
	}

	wants := make([]ReplicaSet, st.Shards)
	alive := make([]int, st.Shards)
	raft := make([][]Action, st.Shards)
	for s := range st.Shards {
		rec := st.Records[s]
		want := ReplicaSet{Voters: slices.Clone(rec.Voters), Nonvoters: slices.Clone(rec.Nonvoters), Epoch: rec.Epoch, Revision: rec.Revision}
		status, known := st.Status[s]
		switch {
		case !known && len(rec.Voters) == 0 && len(rec.Nonvoters) == 0:
			if n, ok := pick(want); ok {
				want.Voters = []string{n}
				load[n]++
				raft[s] = append(raft[s], Action{Kind: ActionBootstrap, Shard: s, Node: n, Addr: st.Nodes[n].PeerAddr})
			}
		case !known && len(rec.Voters) == 1 && len(rec.Nonvoters) == 0:
			if info, ok := st.Nodes[rec.Voters[0]]; ok {
				raft[s] = append(raft[s], Action{Kind: ActionBootstrap, Shard: s, Node: rec.Voters[0], Addr: info.PeerAddr})
			}
		case known:
			// The record follows Raft.
			for _, m := range status.Servers {
				want = withRole(want, m.ID, m.Voter)
			}
			inRaft := 0
			for _, m := range status.Servers {
				if !away(m.ID) {
					inRaft++
				}
			}
			for _, m := range want.Members() {
				_, has := status.server(m)
				switch {
				case has:
				case away(m) || inRaft >= st.Replication:
					want = without(want, m)
				default:
					// Raft dropped it (removed while gone) and it came back before the
					// record did, and the shard is short: it joins again as a
					// non-voter, added below.
					want = withRole(want, m, false)
				}
			}
			for _, m := range want.Members() {
				if !away(m) {
					alive[s]++
				}
			}
		}
		wants[s] = want
	}

	// Fill shards whose leader answered up to the replication factor, one replica per
	// shard per pass, so that the least-loaded choice sees every shard's earlier picks.
	for filled := true; filled; {
		filled = false
		for s := range st.Shards {
			if _, known := st.Status[s]; !known || alive[s] >= st.Replication {
				continue
			}
			if n, ok := pick(wants[s]); ok {
				wants[s].Nonvoters = append(wants[s].Nonvoters, n)
				load[n]++
				alive[s]++
				filled = true
			}
		}
	}

	var out []Action
	for s := range st.Shards {
		want := wants[s]
		if status, known := st.Status[s]; known {
			// Raft follows the record.
			for _, n := range want.Nonvoters {
				info, isLive := st.Nodes[n]
				if _, inRaft := status.server(n); !inRaft && isLive {
					raft[s] = append(raft[s], Action{Kind: ActionAddNonvoter, Shard: s, Node: n, Addr: info.PeerAddr})
				}
			}
			voters, liveVoters := status.voters(), 0
			for _, m := range status.Servers {
				if m.Voter && !away(m.ID) {
					liveVoters++
				}
			}
			for _, m := range status.Servers {
				_, isLive := st.Nodes[m.ID]
				switch {
				case st.Gone[m.ID] && m.ID != status.Leader && (!m.Voter || voters > 1):
					raft[s] = append(raft[s], Action{Kind: ActionRemove, Shard: s, Node: m.ID})
					if m.Voter {
						voters--
					}
				case st.Leaving[m.ID] && (!m.Voter || liveVoters >= st.Replication && voters > 1):
					raft[s] = append(raft[s], Action{Kind: ActionRemove, Shard: s, Node: m.ID})
					if m.Voter {
						voters--
					}
				case !m.Voter && liveVoters >= st.Replication:
					// A surplus replica (the shard has its voters): trimmed, not promoted.
					want = without(want, m.ID)
					raft[s] = append(raft[s], Action{Kind: ActionRemove, Shard: s, Node: m.ID})
				case !m.Voter && isLive && m.Lag >= 0 && m.Lag <= st.MaxPromoteLag:
					raft[s] = append(raft[s], Action{Kind: ActionPromote, Shard: s, Node: m.ID})
				}
			}
		}
		if !sameSet(st.Records[s], want) {
			out = append(out, Action{Kind: ActionRecord, Shard: s, Set: want})
		}
		out = append(out, raft[s]...)
		if st.Closed[s] && ready(st, s) {
			out = append(out, Action{Kind: ActionOpen, Shard: s})
		}
	}
	return out
}

// ready reports whether shard s's leader answered with at least Replication voters (and at
// least one) that are live and neither gone nor leaving.
func ready(st State, s int) bool {
	status, known := st.Status[s]
	if !known {
		return false
	}
	voters := 0
	for _, m := range status.Servers {
		if _, isLive := st.Nodes[m.ID]; m.Voter && isLive && !st.Gone[m.ID] && !st.Leaving[m.ID] {
			voters++
		}
	}
	return voters >= max(st.Replication, 1)
}

// withRole puts id in the voters or non-voters of r, and out of the other list.
func withRole(r ReplicaSet, id string, voter bool) ReplicaSet {
	r = without(r, id)
	if voter {
		r.Voters = append(r.Voters, id)
	} else {
		r.Nonvoters = append(r.Nonvoters, id)
	}
	return r
}

// without removes id from both lists of r.
func without(r ReplicaSet, id string) ReplicaSet {
	drop := func(s []string) []string {
		return slices.DeleteFunc(s, func(x string) bool { return x == id })
	}
	r.Voters, r.Nonvoters = drop(r.Voters), drop(r.Nonvoters)
	return r
}

// sameSet compares two records as sets of voters and non-voters.
func sameSet(a, b ReplicaSet) bool {
	eq := func(x, y []string) bool {
		if len(x) != len(y) {
			return false
		}
		x, y = slices.Clone(x), slices.Clone(y)
		slices.Sort(x)
		slices.Sort(y)
		return slices.Equal(x, y)
	}
	return eq(a.Voters, b.Voters) && eq(a.Nonvoters, b.Nonvoters)
}

// TrackAbsence updates since, the time each node was first seen missing from the registry,
// for the nodes in members: a registered node is dropped, an unregistered one keeps its
// first-seen time or gets now. Nodes no longer in members are forgotten. It returns the
// new map and the nodes missing for longer than grace. A new controller starts with an
// empty map, so it waits a full grace period before it calls any node gone.
func TrackAbsence(since map[string]time.Time, members []string, nodes NodeSet, now time.Time,
	grace time.Duration) (map[string]time.Time, map[string]bool) {
	next := map[string]time.Time{}
	gone := map[string]bool{}
	for _, m := range members {
		if _, ok := nodes[m]; ok {
			continue
		}
		t, seen := since[m]
		if !seen {
			t = now
		}
		next[m] = t
		if now.Sub(t) > grace {
			gone[m] = true
		}
	}
	return next, gone
}
