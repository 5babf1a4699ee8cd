package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// adminCall is one controller call (control.ShardAdmin) sent to another node.
type adminCall struct {
	Op    string `json:"op"` // status, bootstrap, add, promote, remove
	Fence int64  `json:"fence"`
	Shard int    `json:"shard"`
	Node  string `json:"node"`
	Addr  string `json:"addr"`
}

type adminReply struct {
	Status    control.ShardStatus `json:"status"`
	Error     string              `json:"error,omitempty"`
	NotLeader bool                `json:"not_leader,omitempty"`
}

// errStaleFence: an admin call carries a fence below the highest seen: it comes from a
// deposed controller.
var errStaleFence = errors.New("host: admin call from a deposed controller (stale fence)")

func checkFence(fence int64, seen *atomic.Int64) error {
	for {
		cur := seen.Load()
		if fence < cur {
			return errStaleFence
		}
		if fence == cur || seen.CompareAndSwap(cur, fence) {
			return nil
		}
	}
}

// adminLocal executes call on this node: bootstrap on the node it names, the others on
// the shard's leader (ErrNotLeader elsewhere).
func (h *Host) adminLocal(ctx context.Context, call adminCall) (control.ShardStatus, error) {
	if h.cluster == nil {
		return control.ShardStatus{}, ErrNotCluster
	}
	if call.Op != "status" {
		if err := checkFence(call.Fence, &h.cluster.fence); err != nil {
			return control.ShardStatus{}, err
		}
	}
	if call.Op == "bootstrap" {
		r, err := h.replicas.ensure(call.Shard)
		if err != nil {
			return control.ShardStatus{}, err
		}
		return control.ShardStatus{}, r.Bootstrap(ctx, []shard.Member{{ID: h.cfg.NodeID, Address: call.Addr, Voter: true}})
	}
	r := h.Replica(call.Shard)
	if r == nil || r.Stats().State != "Leader" {
		return control.ShardStatus{}, shard.ErrNotLeader
	}
	switch call.Op {
	case "status":
		return h.localStatus(ctx, call.Shard, r)
	case "add":
		return control.ShardStatus{}, r.AddNonvoter(ctx, call.Node, call.Addr)
	case "promote":
		return control.ShardStatus{}, r.PromoteToVoter(ctx, call.Node)
	case "remove":
		return control.ShardStatus{}, r.RemoveServer(ctx, call.Node)
	}
	return control.ShardStatus{}, fmt.Errorf("host: unknown admin op %q", call.Op)
}

// localStatus is the status of shard id as its leader, this node, sees it.
func (h *Host) localStatus(ctx context.Context, id int, r *shard.Shard) (control.ShardStatus, error) {
	members, err := r.Configuration()
	if err != nil {
		return control.ShardStatus{}, err
	}
	lst := r.Stats()
	load := h.shardLoad(id, r)
	st := control.ShardStatus{Leader: h.cfg.NodeID, Load: &load}
	for _, m := range members {
		sv := control.Server{ID: m.ID, Voter: m.Voter, Lag: -1}
		applied, ok := lst.AppliedIndex, m.ID == h.cfg.NodeID
		if !ok {
			if ms, err := h.peers.stats(ctx, m.Address, id); err == nil {
				applied, ok = ms.AppliedIndex, true
			}
		}
		if ok {
			sv.Lag = 0
			if lst.CommitIndex > applied {
				sv.Lag = int64(lst.CommitIndex - applied)
			}
		}
		st.Servers = append(st.Servers, sv)
	}
	return st, nil
}

// clusterAdmin is the controller's ShardAdmin: each call runs on the shard's leader
// (bootstrap: on the node it names), sent over the fwd stream when that is another node.
type clusterAdmin struct{ h *Host }

func (a clusterAdmin) onLeader(ctx context.Context, call adminCall) (control.ShardStatus, error) {
	h := a.h
	node, addr := h.leaders.leaderOf(call.Shard)
	switch {
	case node == "":
		return control.ShardStatus{}, fmt.Errorf("%w: shard %d has no known leader", shard.ErrNotLeader, call.Shard)
	case node == h.cfg.NodeID:
		return h.adminLocal(ctx, call)
	}
	return h.peers.admin(ctx, addr, call)
}

func (a clusterAdmin) Status(ctx context.Context, id int) (control.ShardStatus, error) {
	return a.onLeader(ctx, adminCall{Op: "status", Shard: id})
}

func (a clusterAdmin) Bootstrap(ctx context.Context, fence int64, id int, node, addr string) error {
	call := adminCall{Op: "bootstrap", Fence: fence, Shard: id, Node: node, Addr: addr}
	if node == a.h.cfg.NodeID {
		_, err := a.h.adminLocal(ctx, call)
		return err
	}
	target := a.h.cluster.peerAddr(node)
	if target == "" {
		target = addr
	}
	_, err := a.h.peers.admin(ctx, target, call)
	return err
}

func (a clusterAdmin) AddNonvoter(ctx context.Context, fence int64, id int, node, addr string) error {
	_, err := a.onLeader(ctx, adminCall{Op: "add", Fence: fence, Shard: id, Node: node, Addr: addr})
	return err
}

func (a clusterAdmin) Promote(ctx context.Context, fence int64, id int, node string) error {
	_, err := a.onLeader(ctx, adminCall{Op: "promote", Fence: fence, Shard: id, Node: node})
	return err
}

func (a clusterAdmin) Remove(ctx context.Context, fence int64, id int, node string) error {
	_, err := a.onLeader(ctx, adminCall{Op: "remove", Fence: fence, Shard: id, Node: node})
	return err
}

// ReachesAny reports whether any of peers answers on its peer port before ctx ends
// (control.PeerProber): all are asked at once, and the first answer ends the wait.
func (a clusterAdmin) ReachesAny(ctx context.Context, peers map[string]control.NodeInfo) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answered := make(chan bool, len(peers))
	for _, n := range peers {
		go func() { answered <- n.PeerAddr != "" && a.h.peers.ping(ctx, n.PeerAddr) == nil }()
	}
	for range peers {
		if <-answered {
			return true
		}
	}
	return false
}

// ClusterStatus is the cluster as one node sees it (cairn admin cluster status).
type ClusterStatus struct {
	ClusterID   string `json:"cluster_id"`
	Shards      int    `json:"shards"`
	Replication int    `json:"replication"`
	Node        string `json:"node"` // the node that answered
	// Controller is the node whose controller leads ("" when none does or etcd did not
	// answer).
	Controller  string               `json:"controller,omitempty"`
	Nodes       []ClusterNodeStatus  `json:"nodes"`
	ShardStatus []ClusterShardStatus `json:"shard_status"`
	// Leaving are the nodes marked leaving (cairn admin node remove), registered or not,
	// by id.
	Leaving []string `json:"leaving,omitempty"`
}

// ClusterNodeStatus is one registered node.
type ClusterNodeStatus struct {
	ID        string    `json:"id"`
	ClientURL string    `json:"client_url"`
	PeerAddr  string    `json:"peer_addr"`
	StartedAt time.Time `json:"started_at"`
}

// ClusterShardStatus is one shard as its leader sees it. When no leader answered, Error
// says so and Members are the shard's replica-set record in etcd (FromRecord; lags
// unknown, -1), so that an operator sees which members are down (docs/runbook.md, "Recover
// a shard that lost a majority").
type ClusterShardStatus struct {
	Shard   int              `json:"shard"`
	Leader  string           `json:"leader,omitempty"`
	Members []control.Server `json:"members,omitempty"`
	Error   string           `json:"error,omitempty"`
	// FromRecord: Members are the record's, not a leader's (no leader answered).
	FromRecord bool `json:"from_record,omitempty"`
	// Closed: a shard a grow added that takes no root yet (its group is being built,
	// shard/control/grow.go).
	Closed bool `json:"closed,omitempty"`
	// Roots is the number of agent roots placed on the shard (its load counter in etcd).
	Roots int64 `json:"roots"`
	// StoredBytes and WriteRate are the leader's measures (control.ShardLoad, load.go):
	// the logical bytes of its roots' live files, and the commands per second it applied
	// over the last complete minute; absent when no leader answered.
	StoredBytes *int64   `json:"stored_bytes,omitempty"`
	WriteRate   *float64 `json:"write_rate,omitempty"`
}

// statusTimeout bounds asking one shard's leader for its status.
const statusTimeout = 3 * time.Second

// Status gathers the cluster status: the registry, and every shard's members and lag as
// its leader reports them. The embedded default has none (ok false).
func (h *Host) Status(ctx context.Context) (st ClusterStatus, ok bool) {
	cs := h.cluster
	if cs == nil {
		return ClusterStatus{}, false
	}
	c := cs.current()
	st = ClusterStatus{ClusterID: c.ID, Shards: c.Shards, Replication: c.Replication, Node: h.cfg.NodeID}
	for id, info := range *cs.nodes.Load() {
		st.Nodes = append(st.Nodes, ClusterNodeStatus{ID: id, ClientURL: info.ClientURL, PeerAddr: info.PeerAddr, StartedAt: info.StartedAt})
	}
	slices.SortFunc(st.Nodes, func(a, b ClusterNodeStatus) int { return strings.Compare(a.ID, b.ID) })
	lctx, cancel := context.WithTimeout(ctx, statusTimeout)
	if leaving, err := cs.cfg.Plane.Leaving(lctx); err == nil {
		for id := range leaving {
			st.Leaving = append(st.Leaving, id)
		}
		slices.Sort(st.Leaving)
	}
	st.Controller, _ = cs.cfg.Plane.ControllerNode(lctx)
	closed, _ := cs.cfg.Plane.ClosedShards(lctx, c)
	records, _ := cs.cfg.Plane.ReplicaSets(lctx) // nil when etcd does not answer: no members shown
	var roots []int64
	if pl, ok := h.placement.(*control.Placement); ok {
		roots, _ = pl.Loads(lctx)
	}
	cancel()
	st.ShardStatus = make([]ClusterShardStatus, c.Shards)
	var wg sync.WaitGroup
	for id := range c.Shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			s, err := clusterAdmin{h}.Status(sctx, id)
			ss := ClusterShardStatus{Shard: id, Leader: s.Leader, Members: s.Servers, Closed: closed[id]}
			if id < len(roots) {
				ss.Roots = roots[id]
			}
			if l := s.Load; err == nil && l != nil {
				ss.StoredBytes, ss.WriteRate = &l.Bytes, &l.WriteRate
			}
			if err != nil {
				ss.Error = statusError(err)
				if rec, ok := records[id]; ok {
					ss.Members, ss.FromRecord = recordMembers(rec), true
				}
			}
			st.ShardStatus[id] = ss
		}()
	}
	wg.Wait()
	return st, true
}

// statusError says why a shard's leader did not answer the status, in words that name no
// package (the error's text does).
func statusError(err error) string {
	switch {
	case errors.Is(err, shard.ErrNotLeader):
		return "no known leader"
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("the leader did not answer within %s", statusTimeout)
	}
	return "the leader could not be asked"
}

// recordMembers are the members of a replica-set record as a status lists them: voters,
// then non-voters, lags unknown.
func recordMembers(rec control.ReplicaSet) []control.Server {
	out := make([]control.Server, 0, len(rec.Voters)+len(rec.Nonvoters))
	for _, id := range rec.Voters {
		out = append(out, control.Server{ID: id, Voter: true, Lag: -1})
	}
	for _, id := range rec.Nonvoters {
		out = append(out, control.Server{ID: id, Lag: -1})
	}
	return out
}

// ErrNotCluster: a cluster operation asked of the embedded default.
var ErrNotCluster = errors.New("host: not a cluster node")

// SetLeaving marks node as leaving (decommission: the controller moves its replicas to
// other nodes and removes it from every shard, control.Plan) or clears the mark, and
// returns what the control plane found of the node. node is an id the cluster knows
// (registered now or once, or in a replica set; clearing, also one only marked) or a
// prefix of exactly one such id (control.Plane.Decommission). Errors: ErrNotCluster;
// control.ErrNodeNotFound for an id the cluster does not know (nothing is written);
// control.ErrInvalidArgument for a bad id or an ambiguous prefix;
// control.ErrControlPlaneUnavailable (retryable).
func (h *Host) SetLeaving(ctx context.Context, node string, leaving bool) (control.NodeMark, error) {
	if h.cluster == nil {
		return control.NodeMark{}, ErrNotCluster
	}
	if leaving {
		return h.cfg.Cluster.Plane.Decommission(ctx, node, time.Now())
	}
	return h.cfg.Cluster.Plane.Recommission(ctx, node)
}
