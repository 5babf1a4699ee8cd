package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/mux"
)

// clusterState is what a cluster host keeps beyond the replicas: the control plane's
// records and the node's registration, the leader hints it publishes, the controller, the
// fwd stream's server.
type clusterState struct {
	cfg  *ClusterConfig
	self string // this node's id
	log  *slog.Logger
	// record is the cluster record as last read: its shard count grows (grow.go).
	record atomic.Pointer[control.Cluster]
	reg    *control.Registration
	ctrl   *control.Controller
	fwdSrv *http.Server

	nodes atomic.Pointer[control.NodeSet]
	hints atomic.Pointer[map[int]control.LeaderHint]
	// published are the leader hints this node wrote (shard → term); only the leadership
	// loop touches it.
	published        map[int]uint64
	lastAddressCheck time.Time
	fence            atomic.Int64 // highest controller fence seen by adminLocal
	// versions is the cluster version each node last registered with (node id → int),
	// kept after the node's registration lapses (versions.go).
	versions sync.Map
}

// openCluster creates or joins the cluster in etcd, starts hosting the replicas the
// control plane assigns this node, registers it and starts the controller candidate.
// Background work runs under wctx.
func (h *Host) openCluster(ctx, wctx context.Context) error {
	cc, cs := h.cfg.Cluster, h.cluster
	if cc.StartTimeout <= 0 {
		cc.StartTimeout = 30 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, cc.StartTimeout)
	defer cancel()
	plane := cc.Plane
	c, err := retryControl(sctx, func() (control.Cluster, error) { return plane.CreateCluster(sctx, cc.Spec) })
	if err != nil {
		return fmt.Errorf("create or join the cluster: %w", err)
	}
	cs.record.Store(&c)
	nodes, err := retryControl(sctx, func() (control.NodeSet, error) {
		ns, _, err := plane.Nodes(sctx)
		return ns, err
	})
	if err != nil {
		return err
	}
	cs.storeNodes(nodes)
	placement := plane.NewPlacement(c)
	h.placement = placement

	// Replicas first (WatchReplicaSets), then the registration that lets the controller
	// assign this node work.
	h.goRun(func() { h.hostReplicas(wctx) })
	h.goRun(func() {
		for ns := range plane.WatchNodes(wctx) {
			cs.storeNodes(ns)
		}
	})
	h.goRun(func() {
		for c := range plane.WatchCluster(wctx) {
			cs.follow(c, placement)
		}
	})
	h.goRun(func() {
		for hs := range plane.WatchLeaderHints(wctx) {
			cs.hints.Store(&hs)
		}
	})
	if cs.reg, err = plane.Register(sctx, h.cfg.NodeID, control.NodeInfo{ClientURL: cc.ClientURL,
		PeerAddr: cc.Peer.Addr().String(), StartedAt: time.Now().UTC(), Instance: cc.Instance,
		ClusterVersion: meta.ClusterVersion}); err != nil {
		return fmt.Errorf("register node %s: %w", h.cfg.NodeID, err)
	}
	h.goRun(func() { h.watchLeadership(wctx) })
	if cs.ctrl, err = plane.NewController(clusterAdmin{h}, control.ControllerConfig{ID: h.cfg.NodeID,
		Interval: cc.ControllerInterval, Grace: cc.ControllerGrace, RebalanceInterval: cc.RebalanceInterval, Mover: h.mover}); err != nil {
		return err
	}
	h.goRun(func() {
		if err := cs.ctrl.Run(wctx); err != nil && wctx.Err() == nil {
			h.log.Error("controller stopped", "err", err)
		}
	})
	h.log.Info("cluster node started", "node", h.cfg.NodeID, "cluster", c.ID, "shards", c.Shards,
		"replication", c.Replication, "peer", cc.Peer.Addr().String(), "client", cc.ClientURL)
	return nil
}

// newClusterState is the state of node self of a cluster on cc's peer port before the
// control plane reported anything: no node and no leader hint.
func newClusterState(cc *ClusterConfig, self string, log *slog.Logger) *clusterState {
	cs := &clusterState{cfg: cc, self: self, log: log, published: map[int]uint64{}, lastAddressCheck: time.Now()}
	cs.storeNodes(control.NodeSet{})
	cs.hints.Store(&map[int]control.LeaderHint{})
	return cs
}

// Cluster returns the cluster this node belongs to (zero for the embedded default).
func (h *Host) Cluster() control.Cluster {
	if h.cluster == nil {
		return control.Cluster{}
	}
	return h.cluster.current()
}

// ControlPlane returns the etcd control plane of a cluster node (nil on the embedded
// default).
func (h *Host) ControlPlane() *control.Plane {
	if h.cluster == nil {
		return nil
	}
	return h.cfg.Cluster.Plane
}

// ServePeer serves the fwd stream of the peer port: the node-to-node API, and requests
// forwarded by nodes without a replica of their root's shard, which local serves (and
// never forwards again). It returns at once; Close stops it.
func (h *Host) ServePeer(local http.Handler) error {
	cs := h.cluster
	if cs == nil {
		return errors.New("host: the embedded default has no peer port")
	}
	ln, err := cs.cfg.Peer.Listener(mux.StreamForward)
	if err != nil {
		return err
	}
	cs.fwdSrv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, peerAPIPrefix) {
				h.servePeerAPI(w, r)
				return
			}
			local.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
	go func() { _ = cs.fwdSrv.Serve(ln) }()
	return nil
}

// stopServing stops the fwd stream's server (within a second).
func (cs *clusterState) stopServing() error {
	if cs.fwdSrv == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = cs.fwdSrv.Shutdown(sctx)
	return nil
}

// close withdraws the registration.
func (cs *clusterState) close() error {
	if cs.reg != nil {
		return cs.reg.Close()
	}
	return nil
}

// hintedLeader returns the node and peer address the leader hint of shard id names.
func (cs *clusterState) hintedLeader(id int) (node, addr string) {
	h, ok := (*cs.hints.Load())[id]
	if !ok {
		return "", ""
	}
	info, ok := (*cs.nodes.Load())[h.Node]
	if !ok {
		return "", ""
	}
	return h.Node, info.PeerAddr
}

// peerAddr returns the peer address of node, or "".
func (cs *clusterState) peerAddr(node string) string {
	if node == cs.self {
		return cs.cfg.Peer.Addr().String()
	}
	return (*cs.nodes.Load())[node].PeerAddr
}

// Nodes returns the registered nodes as this node last saw them.
func (h *Host) Nodes() control.NodeSet {
	if h.cluster == nil {
		return nil
	}
	return *h.cluster.nodes.Load()
}

// hostReplicas opens a replica of every shard whose replica set lists this node (a
// directory older than the record's recovery epoch moved aside first, recover.go) and
// closes the replicas of shards that no longer list it (their data stays on disk).
func (h *Host) hostReplicas(ctx context.Context) {
	for sets := range h.cluster.cfg.Plane.WatchReplicaSets(ctx) {
		for id, set := range sets {
			if set.Has(h.cfg.NodeID) {
				if h.Replica(id) == nil {
					if err := h.recovery.alignEpoch(id, set.Epoch); err != nil {
						h.log.Error("hosting replica: recovery epoch", "shard", id, "err", err)
						continue
					}
				}
				if _, err := h.replicas.ensure(id); err != nil && ctx.Err() == nil {
					h.log.Error("hosting replica", "shard", id, "err", err)
				}
			}
		}
		for id := range h.Replicas() {
			if set, ok := sets[id]; ok && !set.Has(h.cfg.NodeID) {
				h.replicas.close(id)
				h.log.Info("replica closed: no longer in the shard's replica set", "shard", id)
			}
		}
	}
}

// addressCheckInterval is how often a leader compares its group's peer addresses with
// the registry.
const addressCheckInterval = 2 * time.Second

// publishHints publishes a leader hint for every local replica that leads, withdraws the
// hints of those deposed, and now and then fixes members' peer addresses. Called from the
// leadership loop.
func (cs *clusterState) publishHints(ctx context.Context, list map[int]*shard.Shard) {
	if cs.reg == nil {
		return
	}
	checkAddresses := time.Since(cs.lastAddressCheck) >= addressCheckInterval
	if checkAddresses {
		cs.lastAddressCheck = time.Now()
	}
	hints := *cs.hints.Load()
	for id, r := range list {
		st := r.Stats()
		if st.State == "Leader" && checkAddresses {
			cs.fixAddresses(ctx, id, r)
		}
		if st.State != "Leader" {
			if _, ok := cs.published[id]; ok { // deposed: withdraw the claim
				delete(cs.published, id)
				if err := cs.reg.ClearLeaderHint(ctx, id); err != nil && ctx.Err() == nil {
					cs.log.Debug("clear leader hint", "shard", id, "err", err)
				}
			}
			continue
		}
		// Published, and etcd still shows it: nothing to do. A hint missing, naming
		// another node or an older term (a stalled node wrote it back) is written again.
		if hint, ok := hints[id]; cs.published[id] == st.Term && ok && hint.Node == cs.self && hint.Term == st.Term {
			continue
		}
		if err := cs.reg.SetLeaderHint(ctx, id, st.Term); err != nil {
			if ctx.Err() == nil {
				cs.log.Debug("leader hint", "shard", id, "err", err)
			}
			continue
		}
		cs.published[id] = st.Term
	}
}

// fixAddresses updates, in shard id's Raft configuration, the address of every member
// that registered a different peer address (a node restarted on another port, or this
// node's own entry in a shard restored from a backup): without it a leader would keep
// dialling the old one.
func (cs *clusterState) fixAddresses(ctx context.Context, id int, r *shard.Shard) {
	members, err := r.Configuration()
	if err != nil {
		return
	}
	nodes := *cs.nodes.Load()
	for _, m := range members {
		info, ok := nodes[m.ID]
		if !ok || info.PeerAddr == "" || info.PeerAddr == m.Address {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		// AddNonvoter on an existing member only updates its address (a voter stays one).
		err := r.AddNonvoter(actx, m.ID, info.PeerAddr)
		cancel()
		if err != nil {
			cs.log.Warn("updating a member's peer address", "shard", id, "node", m.ID, "addr", info.PeerAddr, "err", err)
		} else {
			cs.log.Info("member peer address updated", "shard", id, "node", m.ID, "from", m.Address, "to", info.PeerAddr)
		}
	}
}

// ClusterCursorKey returns the cluster's cursor-signing key, creating it (32 random
// bytes, hex in etcd under <prefix>/cursor-key) if absent with a transaction that
// succeeds only if the key is absent, so every node signs and verifies with the same key
// (a cursor minted by one leader must verify on the next after a failover).
func (h *Host) ClusterCursorKey(ctx context.Context) ([]byte, error) {
	if h.cluster == nil {
		return nil, errors.New("host: the embedded default has no cluster cursor key")
	}
	p := h.cluster.cfg.Plane
	return retryControl(ctx, func() ([]byte, error) { return cursorKey(ctx, p) })
}

func cursorKey(ctx context.Context, p *control.Plane) ([]byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	key := p.Config().Prefix + "/cursor-key"
	ctx, cancel := context.WithTimeout(ctx, p.Config().RequestTimeout)
	defer cancel()
	resp, err := p.Client().Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, hex.EncodeToString(raw))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", control.ErrControlPlaneUnavailable, err)
	}
	if resp.Succeeded {
		return raw, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 {
		return nil, errors.New("host: cursor key vanished from etcd")
	}
	k, err := hex.DecodeString(string(kvs[0].Value))
	if err != nil || len(k) < 16 {
		return nil, fmt.Errorf("host: malformed cursor key in etcd (%d bytes)", len(k))
	}
	return k, nil
}

// retryControl retries f while the control plane is unavailable, until ctx ends.
func retryControl[T any](ctx context.Context, f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if err == nil || !control.IsRetryable(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}
