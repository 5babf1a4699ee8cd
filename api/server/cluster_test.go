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
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/blob/s3/s3test"
	"github.com/cairnstore/cairn/internal/etcdtest"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/host"
)

// clusterBackends are the MinIO bucket and the etcd that the nodes of one test cluster
// share.
type clusterBackends struct {
	srv    *s3test.Server
	bucket string
	etcd   string // client endpoint
}

// startClusterBackends starts MinIO and etcd for a test of cluster nodes; in -short mode it
// skips the test instead.
func startClusterBackends(t *testing.T) clusterBackends {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd, MinIO and cluster nodes")
	}
	return clusterBackends{srv: s3test.Start(t), bucket: s3test.Bucket(), etcd: etcdtest.Start(t).Endpoint()}
}

// config is clusterConfig on cb.
func (cb clusterBackends) config(t *testing.T) ops.Config {
	return clusterConfig(t, cb.srv, cb.bucket, cb.etcd)
}

// clusterConfig is a loopback cluster node configuration.
func clusterConfig(t *testing.T, srv *s3test.Server, bucket, etcd string) ops.Config {
	cfg := s3Config(t, srv, bucket, "")
	cfg.Cluster = true
	cfg.PeerListen = "127.0.0.1:0"
	cfg.Etcd = etcd
	cfg.Shards = 2
	cfg.Replication = 3
	cfg.ShutdownTimeout = 5 * time.Second
	return cfg
}

type testClusterNode struct {
	*Node
	url      string
	adminURL string
	stop     context.CancelFunc
	done     chan error
}

func startClusterNode(t *testing.T, cfg ops.Config) *testClusterNode {
	t.Helper()
	n, err := Open(t.Context(), cfg, testCreds, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tn := &testClusterNode{Node: n, stop: cancel, done: make(chan error, 1)}
	addr := make(chan net.Addr, 1)
	go func() { tn.done <- n.Serve(ctx, func(a net.Addr) { addr <- a }) }()
	tn.url = "http://" + (<-addr).String()
	tn.adminURL = "http://" + n.AdminAddr().String()
	t.Cleanup(func() { tn.shutdown() })
	return tn
}

func (tn *testClusterNode) shutdown() {
	if tn.stop == nil {
		return
	}
	tn.stop()
	<-tn.done
	tn.Close()
	tn.stop = nil
}

// startCluster starts MinIO, etcd and n cluster nodes on them, each configured by
// clusterConfig and then tweak (nil: none), and returns the nodes.
func startCluster(t *testing.T, n int, tweak func(*ops.Config)) []*testClusterNode {
	t.Helper()
	cb := startClusterBackends(t)
	nodes := make([]*testClusterNode, 0, n)
	for range n {
		cfg := cb.config(t)
		if tweak != nil {
			tweak(&cfg)
		}
		nodes = append(nodes, startClusterNode(t, cfg))
	}
	return nodes
}

// startLedCluster starts a node configured by config, waits (30 s at most) until it leads
// shard 0, then starts n more configured alike, each of which must host no replica (config
// has one shard of one replica): so every request of a root those take reaches the first.
// It returns the nodes, the leader first.
func startLedCluster(t *testing.T, config func() ops.Config, n int) []*testClusterNode {
	t.Helper()
	a := startClusterNode(t, config())
	retry.Within(t, 30*time.Second, "node a leads the only shard", func() error {
		if r := a.replica(0); r == nil || !r.Ready() {
			return errors.New("not yet")
		}
		return nil
	})
	nodes := []*testClusterNode{a}
	for range n {
		nodes = append(nodes, startClusterNode(t, config()))
	}
	for _, b := range nodes[1:] {
		if b.replica(0) != nil {
			t.Fatalf("node %s hosts a replica; the test needs nodes without one", b.nodeID)
		}
	}
	return nodes
}

// leaderOfVoters waits (40 s at most) until one of nodes leads shard id with the given
// number of voters, and returns it.
func leaderOfVoters(t *testing.T, nodes []*testClusterNode, id, voters int) *testClusterNode {
	t.Helper()
	var leader *testClusterNode
	retry.Within(t, 40*time.Second, fmt.Sprintf("shard %d has %d voters and a leader", id, voters), func() error {
		for _, n := range nodes {
			r := n.replica(id)
			if r == nil || r.Stats().State != "Leader" {
				continue
			}
			members, err := r.Configuration()
			count := 0
			for _, m := range members {
				if m.Voter {
					count++
				}
			}
			if err == nil && count == voters {
				leader = n
				return nil
			}
		}
		return errors.New("not yet")
	})
	return leader
}

// oneShard makes every node host the one shard.
func oneShard(cfg *ops.Config) { cfg.Shards = 1 }

// request sends one request, retrying retryable answers (503) until 30 s have passed.
func request(t *testing.T, method, u string, body []byte) (int, []byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(t.Context(), method, u, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := http.DefaultClient.Do(req)
		var code int
		var b []byte
		if err == nil {
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
		}
		if (err == nil && code != http.StatusServiceUnavailable) || time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("%s %s: %v", method, u, err)
			}
			return code, b
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mustSend sends a request as request does and fails the test, naming what, unless it
// succeeds (2xx).
func mustSend(t *testing.T, what, method, u string, body []byte) {
	t.Helper()
	if code, b := request(t, method, u, body); code/100 != 2 {
		t.Fatalf("%s: %d %s", what, code, b)
	}
}

func TestClusterConfigRequiresS3(t *testing.T) {
	cfg := testConfig(t)
	cfg.Cluster = true
	cfg.PeerListen = "127.0.0.1:0"
	cfg.Etcd = "127.0.0.1:1"
	openRefused(t, cfg, ops.Credentials{}, "Blob")
}

func TestClusterForwardsAndSurvivesTheLossOfALeader(t *testing.T) {
	nodes := startCluster(t, 3, nil)

	// Reads of a root never written answer as for an empty root and place nothing.
	if code, b := request(t, http.MethodGet, nodes[1].url+"/v1/agents/ghost/workbenches/w/files/input/x", nil); code != http.StatusNotFound {
		t.Fatalf("read of a file of a root never written: %d %s", code, b)
	}
	if code, b := request(t, http.MethodGet, nodes[2].url+"/v1/agents/ghost/workbenches/w/list", nil); code != http.StatusNotFound {
		t.Fatalf("list of a workbench of a root never written: %d %s", code, b)
	}
	for _, tool := range []string{"grep", "search", "aggregate", "catalog", "find"} {
		code, b := request(t, http.MethodPost, nodes[1].url+"/v1/agents/ghost/workbenches/w/"+tool, []byte(`{}`))
		if code == http.StatusServiceUnavailable || code >= 500 {
			t.Fatalf("%s on a root never written: %d %s", tool, code, b)
		}
	}
	if _, err := nodes[0].host.Placement().Resolve(t.Context(), "ghost"); !errors.Is(err, control.ErrRootNotPlaced) {
		t.Fatalf("after reads only, the root ghost is placed (%v)", err)
	}

	// Write through node 0, read through every node (forwarded to the leader).
	ws := "/v1/agents/alice/workbenches/w1"
	mustSend(t, "create workbench", http.MethodPut, nodes[0].url+ws, nil)
	for i := range 5 {
		body := []byte(fmt.Sprintf("body %d", i))
		if code, b := request(t, http.MethodPut, nodes[i%3].url+ws+fmt.Sprintf("/files/input/f%d", i), body); code/100 != 2 {
			t.Fatalf("put f%d: %d %s", i, code, b)
		}
	}
	for _, n := range nodes {
		code, b := request(t, http.MethodGet, n.url+ws+"/files/input/f1", nil)
		if code != http.StatusOK || string(b) != "body 1" {
			t.Fatalf("read through %s: %d %q", n.url, code, b)
		}
	}

	// Wait until the shard of alice has three voters, then stop its leader.
	id, ok := nodes[0].host.Placement().Cached("alice")
	if !ok {
		t.Fatal("alice is not placed")
	}
	leader := leaderOfVoters(t, nodes, id, 3)
	// The cluster status, asked of any node, names the nodes, the leader and the lags.
	for _, n := range nodes {
		if code, b := request(t, http.MethodGet, n.url+ClusterStatusPath, nil); code != http.StatusNotFound {
			t.Fatalf("cluster status on the client port of %s: %d %s, want 404 (admin listener only)", n.url, code, b)
		}
		code, b := request(t, http.MethodGet, n.adminURL+ClusterStatusPath, nil)
		var st ClusterStatus
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil {
			t.Fatalf("cluster status through %s: %d %s", n.url, code, b)
		}
		ss := st.ShardStatus[id]
		if len(st.Nodes) != 3 || st.Shards != 2 || ss.Leader != leader.nodeID || len(ss.Members) != 3 {
			t.Fatalf("cluster status through %s: %s", n.url, b)
		}
		if !slices.ContainsFunc(st.Nodes, func(m host.ClusterNodeStatus) bool { return m.ID == st.Controller }) {
			t.Fatalf("cluster status through %s names controller %q, not a registered node: %s", n.url, st.Controller, b)
		}
		for _, m := range ss.Members {
			if !m.Voter || m.Lag < 0 {
				t.Fatalf("cluster status through %s: member %+v (want a voter with a known lag): %s", n.url, m, b)
			}
		}
	}

	// An MCP session (the official go-sdk client over streamable HTTP) on a node that
	// does not lead: its tool calls are forwarded, and the same session goes on working
	// after the leader is gone.
	var via *testClusterNode
	for _, n := range nodes {
		if n != leader {
			via = n
			break
		}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "cluster-test", Version: "1"}, nil).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: via.url + "/v1/agents/alice/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	mcpPut := func(path, text string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "workbench_put_file",
				Arguments: map[string]any{"id": "w1", "section": "input", "path": path, "text": text}})
			if err == nil && !res.IsError {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("MCP workbench_put_file %s through %s: %v %+v", path, via.url, err, res)
			}
			time.Sleep(200 * time.Millisecond) // a retryable RoutingUnavailable while the shard elects
		}
	}
	mcpPut("m0", "before")

	leader.shutdown()
	var survivors []*testClusterNode
	for _, n := range nodes {
		if n != leader {
			survivors = append(survivors, n)
		}
	}
	mcpPut("m1", "after")
	for p, want := range map[string]string{"m0": "before", "m1": "after"} {
		if code, b := request(t, http.MethodGet, survivors[0].url+ws+"/files/input/"+p, nil); code != http.StatusOK || string(b) != want {
			t.Fatalf("read of the MCP write %s: %d %q", p, code, b)
		}
	}
	for i := 5; i < 8; i++ {
		body := []byte(fmt.Sprintf("body %d", i))
		if code, b := request(t, http.MethodPut, survivors[i%2].url+ws+fmt.Sprintf("/files/input/f%d", i), body); code/100 != 2 {
			t.Fatalf("put f%d after the leader left: %d %s", i, code, b)
		}
	}
	for i := range 8 {
		code, b := request(t, http.MethodGet, survivors[(i+1)%2].url+ws+fmt.Sprintf("/files/input/f%d", i), nil)
		if code != http.StatusOK || string(b) != fmt.Sprintf("body %d", i) {
			t.Fatalf("read f%d after failover: %d %q", i, code, b)
		}
	}
}

func TestClusterKeepsServingPlacedRootsWhileEtcdIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, MinIO and a node")
	}
	srv := s3test.Start(t)
	etcd := etcdtest.Start(t)
	cfg := clusterConfig(t, srv, s3test.Bucket(), etcd.Endpoint())
	cfg.Replication = 1
	n := startClusterNode(t, cfg)
	ws := n.url + "/v1/agents/alice/workbenches/w1"
	mustSend(t, "create workbench", http.MethodPut, ws, nil)
	mustSend(t, "put", http.MethodPut, ws+"/files/input/a", []byte("before"))

	etcd.Stop(0)
	mustSend(t, "put to a placed root while etcd is down", http.MethodPut, ws+"/files/input/b", []byte("during"))
	if code, b := request(t, http.MethodGet, ws+"/files/input/a", nil); code != http.StatusOK || string(b) != "before" {
		t.Fatalf("read of a placed root while etcd is down: %d %q", code, b)
	}
	// A new root cannot be placed: a retryable RoutingUnavailable, not a failure.
	resp, err := http.Post(n.url+"/v1/agents/bob/workbenches/w1/files/input/a", "application/octet-stream", bytes.NewReader([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(b, []byte(`"retryable":true`)) || !bytes.Contains(b, []byte("RoutingUnavailable")) {
		t.Fatalf("new root while etcd is down: %d %s, want a retryable RoutingUnavailable 503", resp.StatusCode, b)
	}
}

// voterSets returns, per shard, the voters its leader reports (from any node's status).
func voterSets(t *testing.T, n *testClusterNode) map[int][]string {
	t.Helper()
	st := n.Status(t.Context())
	out := map[int][]string{}
	for _, s := range st.ShardStatus {
		if s.Error != "" {
			continue
		}
		for _, m := range s.Members {
			if m.Voter {
				out[s.Shard] = append(out[s.Shard], m.ID)
			} else {
				out[s.Shard] = append(out[s.Shard], "nonvoter:"+m.ID)
			}
		}
	}
	return out
}

// waitShards waits up to a minute until n's cluster status shows both shards and want
// holds for the members of each (voter ids, non-voters as "nonvoter:<id>").
func waitShards(t *testing.T, n *testClusterNode, what string, want func(members []string) bool) {
	t.Helper()
	retry.Within(t, 60*time.Second, what, func() error {
		sets := voterSets(t, n)
		if len(sets) != 2 {
			return fmt.Errorf("status of %d shards: %v", len(sets), sets)
		}
		for id, vs := range sets {
			if !want(vs) {
				return fmt.Errorf("shard %d: %v", id, vs)
			}
		}
		return nil
	})
}

func TestClusterNodeWithoutAReplicaForwardsThroughTheLeaderHint(t *testing.T) {
	cb := startClusterBackends(t)
	nodes := startLedCluster(t, func() ops.Config {
		cfg := cb.config(t)
		cfg.Shards, cfg.Replication = 1, 1
		return cfg
	}, 1)
	a, b := nodes[0], nodes[1]
	ws := b.url + "/v1/agents/hinted/workbenches/w1"
	mustSend(t, "create workbench through b", http.MethodPut, ws, nil)
	mustSend(t, "put through b", http.MethodPut, ws+"/files/input/f", []byte("via b"))
	if code, body := request(t, http.MethodGet, a.url+"/v1/agents/hinted/workbenches/w1/files/input/f", nil); code != http.StatusOK || string(body) != "via b" {
		t.Fatalf("read through a: %d %q", code, body)
	}
	if b.replica(0) != nil {
		t.Fatal("node b hosts a replica; the test needs a node without one")
	}
}

// A node away past the grace period is removed from every shard; when it comes back (same
// data directory, a new peer port) it joins every shard again, as a non-voter first, and
// is promoted once it caught up.
func TestClusterNodeRemovedWhileAwayJoinsAgainWhenBack(t *testing.T) {
	cb := startClusterBackends(t)
	interval, grace := controllerInterval, controllerGrace
	controllerInterval, controllerGrace = 500*time.Millisecond, 2*time.Second
	t.Cleanup(func() { controllerInterval, controllerGrace = interval, grace })

	var cfgs []ops.Config
	var nodes []*testClusterNode
	for range 3 {
		cfg := cb.config(t)
		cfgs = append(cfgs, cfg)
		nodes = append(nodes, startClusterNode(t, cfg))
	}
	ws := "/v1/agents/back/workbenches/w1"
	mustSend(t, "create workbench", http.MethodPut, nodes[0].url+ws, nil)
	waitShards(t, nodes[0], "three voters per shard", func(vs []string) bool {
		return len(vs) == 3 && !strings.Contains(fmt.Sprint(vs), "nonvoter")
	})
	away := nodes[2].nodeID
	nodes[2].shutdown()
	waitShards(t, nodes[0], "the away node is removed from every shard", func(vs []string) bool {
		return len(vs) == 2 && !strings.Contains(fmt.Sprint(vs), away)
	})
	for i := range 20 { // writes it misses
		if code, b := request(t, http.MethodPut, nodes[i%2].url+ws+fmt.Sprintf("/files/input/f%d", i), []byte("x")); code/100 != 2 {
			t.Fatalf("put %d while the node is away: %d %s", i, code, b)
		}
	}
	nodes[2] = startClusterNode(t, cfgs[2])
	if nodes[2].nodeID != away {
		t.Fatalf("the node came back as %s, not %s", nodes[2].nodeID, away)
	}
	waitShards(t, nodes[0], "the node that came back is a voter of every shard again", func(vs []string) bool {
		s := fmt.Sprint(vs)
		return len(vs) == 3 && !strings.Contains(s, "nonvoter") && strings.Contains(s, away)
	})
	if code, b := request(t, http.MethodGet, nodes[2].url+ws+"/files/input/f19", nil); code != http.StatusOK || string(b) != "x" {
		t.Fatalf("read through the node that came back: %d %q", code, b)
	}
}

// A node whose settings contradict the cluster or its own data directory refuses to
// start with a configuration error that names the setting, and changes nothing.
func TestClusterNodeRefusesSettingsThatContradictTheCluster(t *testing.T) {
	cb := startClusterBackends(t)
	first := cb.config(t)
	n := startClusterNode(t, first)
	firstID := n.nodeID
	n.shutdown()

	for _, tc := range []struct {
		name  string
		edit  func(c *ops.Config)
		field string
	}{
		{"another shard count", func(c *ops.Config) { c.Shards = 5 }, "Shards"},
		{"another replication factor", func(c *ops.Config) { c.Replication = 5 }, "Replication"},
		{"another object store", func(c *ops.Config) { c.Blob = "s3://" + cb.bucket + "/elsewhere" }, "Blob"},
		{"a peer source address this host does not have", func(c *ops.Config) { c.PeerSource = "192.0.2.77" }, "PeerSource"},
		{"another node id on a data directory that joined as " + firstID, func(c *ops.Config) {
			c.DataDir = first.DataDir
			c.NodeID = "impostor"
		}, "NodeID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cb.config(t)
			tc.edit(&cfg)
			openRefused(t, cfg, testCreds, tc.field)
		})
	}
	// The data directory still starts under its own id.
	n = startClusterNode(t, first)
	if n.nodeID != firstID {
		t.Fatalf("restarted as %s, want %s", n.nodeID, firstID)
	}
	// While it runs, a node on another data directory cannot take its id.
	impostor := cb.config(t)
	impostor.NodeID = firstID
	if node, err := Open(t.Context(), impostor, testCreds, nil); err == nil {
		node.Close()
		t.Fatal("a second node started with the id of a running node")
	} else if ce := (*ops.ConfigError)(nil); !errors.As(err, &ce) || ce.Field != "NodeID" {
		t.Fatalf("a second node with a running node's id: %v; want a configuration error on NodeID", err)
	}
	mustSend(t, "the running node after the refused impostor", http.MethodPut, n.url+"/v1/agents/still/workbenches/w", nil)
	if nodes, _, err := n.plane().Nodes(t.Context()); err != nil || nodes[firstID].ClientURL != n.clientURL {
		t.Fatalf("registry entry of %s after the refused impostor: %+v, %v", firstID, nodes[firstID], err)
	}
	// Nor once it is stopped: a node that lost its data directory must not come back as
	// the voter it was (it would count for entries it no longer has).
	n.shutdown()
	if node, err := Open(t.Context(), impostor, testCreds, nil); err == nil {
		node.Close()
		t.Fatal("an empty data directory started under the id of a stopped node")
	} else if ce := (*ops.ConfigError)(nil); !errors.As(err, &ce) || ce.Field != "NodeID" {
		t.Fatalf("an empty data directory under a stopped node's id: %v; want a configuration error on NodeID", err)
	}
}
