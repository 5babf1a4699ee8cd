package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/mux"
)

// Request routing. The client port serves route(false): a request for an agent root
// whose shard another node leads is reverse-proxied to that node over the peer port's
// "fwd" stream. The fwd stream serves route(true) (a forwarded request is never forwarded
// again: not led here, it answers a retryable RoutingUnavailable) and, under peerAPIPrefix, the
// node-to-node API of the controller's shard administration.

// peerAPIPrefix is the path prefix of the node-to-node API; it exists only on the fwd
// stream, never on the client port.
const peerAPIPrefix = "/_cairn/peer/"

// leaderWait bounds how long a request waits for its shard to have a known leader
// (an election in progress) before it answers a retryable RoutingUnavailable.
const leaderWait = 3 * time.Second

// agentOf returns the agent root a client request addresses: the {agent} of
// /v1/agents/{agent}/..., "default" for /mcp; false for node-level paths.
func agentOf(r *http.Request) (string, bool) {
	raw := r.URL.EscapedPath()
	if raw == "/mcp" || strings.HasPrefix(raw, "/mcp/") {
		return "default", true
	}
	rest, ok := strings.CutPrefix(raw, "/v1/agents/")
	if !ok {
		return "", false
	}
	seg, _, _ := strings.Cut(rest, "/")
	agent, err := url.PathUnescape(seg)
	if err != nil || agent == "" {
		return "", false
	}
	return agent, true
}

// readOnlyTools are the REST tool endpoints (POST .../<tool>) that only read.
var readOnlyTools = map[string]bool{"grep": true, "search": true, "aggregate": true, "catalog": true, "find": true}

// readOnly reports whether r is a REST request that cannot change a root: a GET or HEAD,
// or a POST to a read-only tool.
func readOnly(r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/v1/agents/") {
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		return readOnlyTools[r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]]
	}
	return false
}

// writeNotOwner answers a retryable RoutingUnavailable; leader, when known, is the opaque node id
// of the shard's leader (never an address).
func writeNotOwner(w http.ResponseWriter, msg, leader string) {
	e := workbench.RoutingUnavailable(msg)
	if leader != "" {
		e.Details["leader"] = leader
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_ = json.NewEncoder(w).Encode(e.Envelope())
}

// route returns the handler that serves a request here when this node leads its root's
// shard and forwards it to the leader otherwise (forwarded: never forward again). On the
// client port (forwarded false) a read at a snapshot id may instead be served by this
// node's follower replica (cluster_follower.go); route(false) builds that path and
// registers its counter (idempotently). Every response for an agent root carries
// ServedByHeader.
func (c *ClusterNode) route(forwarded bool) http.Handler {
	var follower *followerReads
	if !forwarded {
		var err error
		if follower, err = c.newFollowerReads(); err != nil {
			c.log.Error("follower reads disabled: every read goes to the leader", "err", err)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent, ok := agentOf(r)
		if !ok {
			c.local.ServeHTTP(w, r)
			return
		}
		here := func() { w.Header().Set(ServedByHeader, c.nodeID) }
		ctx, cancel := context.WithTimeout(r.Context(), assignTimeout)
		defer cancel()
		if follower != nil && readOnly(r) {
			// A read of a root never written: answered here from an empty state, without
			// placing the root (a read must not create etcd records).
			if _, err := c.placement.Resolve(ctx, agent); errors.Is(err, control.ErrRootNotPlaced) {
				here()
				follower.serveEmpty(w, r)
				return
			}
		}
		id, err := c.shardOf(ctx, agent)
		switch {
		case control.IsRetryable(err):
			here()
			writeNotOwner(w, "the control plane cannot place this root right now; retry", "")
			return
		case err != nil:
			// An invalid root name: the local handler answers with the contract's error.
			here()
			c.local.ServeHTTP(w, r)
			return
		}
		if follower != nil && follower.serve(w, r, agent, id) {
			return
		}
		node, addr := c.leaderOf(id)
		deadline := time.Now().Add(leaderWait)
		for node == "" && time.Now().Before(deadline) && r.Context().Err() == nil {
			select { // an election is under way: wait for its leader hint
			case <-time.After(50 * time.Millisecond):
			case <-r.Context().Done():
			}
			node, addr = c.leaderOf(id)
		}
		switch {
		case node == c.nodeID:
			here()
			c.local.ServeHTTP(w, r)
		case node == "":
			here()
			writeNotOwner(w, fmt.Sprintf("shard %d has no leader right now; retry", id), "")
		case forwarded:
			here()
			writeNotOwner(w, fmt.Sprintf("this node does not lead shard %d; retry", id), node)
		default:
			// The executing node names itself; this node only when it answers itself.
			c.proxy.forward(&servedByFallback{ResponseWriter: w, node: c.nodeID}, r, node, addr)
		}
	})
}

// forwardDialTimeout bounds opening a forwarding connection to another node (TCP
// connect and the peer's stream acknowledgement); forwardResponseTimeout bounds waiting
// for its response headers once the request is sent (longer than any command's commit
// timeout).
const (
	forwardDialTimeout     = time.Second
	forwardResponseTimeout = time.Minute
)

// forwarder reverse-proxies client requests to other nodes over the fwd stream.
type forwarder struct {
	c      *ClusterNode
	client *http.Client
	proxy  *httputil.ReverseProxy
}

type fwdTarget struct{ node, addr string }

type fwdTargetKey struct{}

func newForwarder(c *ClusterNode) *forwarder {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			// A healthy peer accepts the stream at once; one cut off by a partition never
			// answers. Give up soon, so the client's retry meets a fresher leader hint.
			ctx, cancel := context.WithTimeout(ctx, forwardDialTimeout)
			defer cancel()
			return c.peer.Dial(ctx, addr, mux.StreamForward)
		},
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		// Counted from the end of the request body: a leader that stopped answering (a
		// frozen process still accepts TCP) must not hold the client forever.
		ResponseHeaderTimeout: forwardResponseTimeout,
	}
	f := &forwarder{c: c, client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := pr.In.Context().Value(fwdTargetKey{}).(fwdTarget)
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = t.addr
			pr.Out.Host = pr.In.Host
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			t, _ := r.Context().Value(fwdTargetKey{}).(fwdTarget)
			c.log.Debug("forwarding failed", "node", t.node, "err", err)
			writeNotOwner(w, "the shard's leader cannot be reached right now; retry", t.node)
		},
	}
	return f
}

func (f *forwarder) forward(w http.ResponseWriter, r *http.Request, node, addr string) {
	ctx := context.WithValue(r.Context(), fwdTargetKey{}, fwdTarget{node: node, addr: addr})
	f.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// peerHandler serves the fwd stream: the node-to-node API and forwarded requests.
func (c *ClusterNode) peerHandler() http.Handler {
	routed := c.route(true)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, peerAPIPrefix) {
			c.servePeerAPI(w, r)
			return
		}
		routed.ServeHTTP(w, r)
	})
}

// adminCall is one ShardAdmin call sent to another node.
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

func (c *ClusterNode) servePeerAPI(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, peerAPIPrefix)
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(rest, "stats/"):
		id, err := strconv.Atoi(strings.TrimPrefix(rest, "stats/"))
		rep := c.replica(id)
		if err != nil || rep == nil {
			http.Error(w, "no replica", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep.Stats())
	case r.Method == http.MethodPost && rest == "admin":
		var call adminCall
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&call); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		st, err := c.adminLocal(r.Context(), call)
		rep := adminReply{Status: st}
		if err != nil {
			rep.Error = err.Error()
			rep.NotLeader = errors.Is(err, shard.ErrNotLeader)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	default:
		http.NotFound(w, r)
	}
}

// peerCall sends call to the node at addr.
func (c *ClusterNode) peerCall(ctx context.Context, addr string, call adminCall) (control.ShardStatus, error) {
	body, _ := json.Marshal(call)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+peerAPIPrefix+"admin", bytes.NewReader(body))
	if err != nil {
		return control.ShardStatus{}, err
	}
	resp, err := c.proxy.client.Do(req)
	if err != nil {
		return control.ShardStatus{}, err
	}
	defer resp.Body.Close()
	var rep adminReply
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return control.ShardStatus{}, fmt.Errorf("peer %s: %s: %w", addr, resp.Status, err)
	}
	if rep.Error != "" {
		if rep.NotLeader {
			return rep.Status, fmt.Errorf("%w: peer %s: %s", shard.ErrNotLeader, addr, rep.Error)
		}
		return rep.Status, fmt.Errorf("peer %s: %s", addr, rep.Error)
	}
	return rep.Status, nil
}

// peerStats reads the Raft figures of node's replica of shard id.
func (c *ClusterNode) peerStats(ctx context.Context, addr string, id int) (shard.Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+peerAPIPrefix+"stats/"+strconv.Itoa(id), nil)
	if err != nil {
		return shard.Stats{}, err
	}
	resp, err := c.proxy.client.Do(req)
	if err != nil {
		return shard.Stats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return shard.Stats{}, fmt.Errorf("peer %s: %s", addr, resp.Status)
	}
	var st shard.Stats
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// errStaleFence: an admin call carries a fence below the highest seen (ClusterNode.fence):
// it comes from a deposed controller.
var errStaleFence = errors.New("server: admin call from a deposed controller (stale fence)")

func (c *ClusterNode) checkFence(fence int64, seen *atomic.Int64) error {
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
func (c *ClusterNode) adminLocal(ctx context.Context, call adminCall) (control.ShardStatus, error) {
	if call.Op != "status" {
		if err := c.checkFence(call.Fence, &c.fence); err != nil {
			return control.ShardStatus{}, err
		}
	}
	if call.Op == "bootstrap" {
		r, err := c.ensureReplica(call.Shard)
		if err != nil {
			return control.ShardStatus{}, err
		}
		return control.ShardStatus{}, r.Bootstrap(ctx, []shard.Member{{ID: c.nodeID, Address: call.Addr, Voter: true}})
	}
	r := c.replica(call.Shard)
	if r == nil || r.Stats().State != "Leader" {
		return control.ShardStatus{}, shard.ErrNotLeader
	}
	switch call.Op {
	case "status":
		return c.localStatus(ctx, call.Shard, r)
	case "add":
		return control.ShardStatus{}, r.AddNonvoter(ctx, call.Node, call.Addr)
	case "promote":
		return control.ShardStatus{}, r.PromoteToVoter(ctx, call.Node)
	case "remove":
		return control.ShardStatus{}, r.RemoveServer(ctx, call.Node)
	}
	return control.ShardStatus{}, fmt.Errorf("server: unknown admin op %q", call.Op)
}

// localStatus is the status of shard id as its leader, this node, sees it.
func (c *ClusterNode) localStatus(ctx context.Context, id int, r *shard.Shard) (control.ShardStatus, error) {
	members, err := r.Configuration()
	if err != nil {
		return control.ShardStatus{}, err
	}
	lst := r.Stats()
	st := control.ShardStatus{Leader: c.nodeID}
	for _, m := range members {
		sv := control.Server{ID: m.ID, Voter: m.Voter, Lag: -1}
		applied, ok := lst.AppliedIndex, m.ID == c.nodeID
		if !ok {
			if ms, err := c.peerStats(ctx, m.Address, id); err == nil {
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
// (bootstrap: on the node it names), forwarded over the fwd stream when that is another
// node.
type clusterAdmin struct{ c *ClusterNode }

func (a clusterAdmin) onLeader(ctx context.Context, call adminCall) (control.ShardStatus, error) {
	c := a.c
	node, addr := c.leaderOf(call.Shard)
	switch {
	case node == "":
		return control.ShardStatus{}, fmt.Errorf("%w: shard %d has no known leader", shard.ErrNotLeader, call.Shard)
	case node == c.nodeID:
		return c.adminLocal(ctx, call)
	}
	return c.peerCall(ctx, addr, call)
}

func (a clusterAdmin) Status(ctx context.Context, id int) (control.ShardStatus, error) {
	return a.onLeader(ctx, adminCall{Op: "status", Shard: id})
}

func (a clusterAdmin) Bootstrap(ctx context.Context, fence int64, id int, node, addr string) error {
	call := adminCall{Op: "bootstrap", Fence: fence, Shard: id, Node: node, Addr: addr}
	if node == a.c.nodeID {
		_, err := a.c.adminLocal(ctx, call)
		return err
	}
	target := a.c.peerAddr(node)
	if target == "" {
		target = addr
	}
	_, err := a.c.peerCall(ctx, target, call)
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

// ClusterStatusPath is the admin-listener path of the cluster status (cairn admin cluster
// status): nodes, shards, leaders and each member's applied-index lag.
const ClusterStatusPath = "/v1/admin/cluster"

// ClusterStatus is the answer of GET ClusterStatusPath.
type ClusterStatus struct {
	ClusterID   string               `json:"cluster_id"`
	Shards      int                  `json:"shards"`
	Replication int                  `json:"replication"`
	Node        string               `json:"node"` // the node that answered
	Nodes       []ClusterNodeStatus  `json:"nodes"`
	ShardStatus []ClusterShardStatus `json:"shard_status"`
}

// ClusterNodeStatus is one registered node.
type ClusterNodeStatus struct {
	ID        string    `json:"id"`
	ClientURL string    `json:"client_url"`
	PeerAddr  string    `json:"peer_addr"`
	StartedAt time.Time `json:"started_at"`
}

// ClusterShardStatus is one shard as its leader sees it (Error when no leader answered).
type ClusterShardStatus struct {
	Shard   int              `json:"shard"`
	Leader  string           `json:"leader,omitempty"`
	Members []control.Server `json:"members,omitempty"`
	Error   string           `json:"error,omitempty"`
}

// Status gathers the cluster status (see ClusterStatus).
func (c *ClusterNode) Status(ctx context.Context) ClusterStatus {
	st := ClusterStatus{ClusterID: c.cluster.ID, Shards: c.cluster.Shards, Replication: c.cluster.Replication, Node: c.nodeID}
	for id, info := range *c.nodes.Load() {
		st.Nodes = append(st.Nodes, ClusterNodeStatus{ID: id, ClientURL: info.ClientURL, PeerAddr: info.PeerAddr, StartedAt: info.StartedAt})
	}
	slices.SortFunc(st.Nodes, func(a, b ClusterNodeStatus) int { return strings.Compare(a.ID, b.ID) })
	st.ShardStatus = make([]ClusterShardStatus, c.cluster.Shards)
	var wg sync.WaitGroup
	for id := range c.cluster.Shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			s, err := clusterAdmin{c}.Status(sctx, id)
			ss := ClusterShardStatus{Shard: id, Leader: s.Leader, Members: s.Servers}
			if err != nil {
				ss.Error = err.Error()
			}
			st.ShardStatus[id] = ss
		}()
	}
	wg.Wait()
	return st
}

func (c *ClusterNode) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c.Status(r.Context()))
}
