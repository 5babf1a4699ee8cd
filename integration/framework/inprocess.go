package framework

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/ops"
)

// InProcess starts a cluster of in-process nodes (server.Open) over a real etcd
// and a real MinIO. The nodes log to one file under t.TempDir, whose tail is printed when
// the test fails.
func InProcess(t *testing.T, o Options) Cluster {
	t.Helper()
	st := StartStores(t)
	logPath := filepath.Join(t.TempDir(), "nodes.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("framework: node log: %v", err)
	}
	c := &inProcess{
		t:      t,
		stores: st,
		shards: o.Shards,
		log:    slog.New(slog.NewTextHandler(logf, nil)),
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.shutdown(n)
		}
		logf.Close()
		if b, err := os.ReadFile(logPath); err == nil && t.Failed() {
			t.Logf("log of the in-process nodes (%s):\n%s", logPath, b[max(0, len(b)-64<<10):])
		}
	})
	for range o.Nodes {
		c.Add()
	}
	return c
}

// inProcess is a Cluster of server.Nodes (cluster mode) in the test process.
type inProcess struct {
	t      *testing.T
	stores Stores
	shards int
	log    *slog.Logger // every node's, with a node attribute
	nodes  []*inProcessNode
}

// inProcessNode is one node; node is nil while it is stopped.
type inProcessNode struct {
	cfg      ops.Config
	node     *server.Node
	url      string
	adminURL string
	stop     context.CancelFunc
	done     chan error // Serve's result
}

func (c *inProcess) Len() int               { return len(c.nodes) }
func (c *inProcess) ClientURL(i int) string { return c.nodes[i].url }
func (c *inProcess) AdminURL(i int) string  { return c.nodes[i].adminURL }
func (c *inProcess) Running(i int) bool     { return c.nodes[i].node != nil }

func (c *inProcess) Add() int {
	c.t.Helper()
	n := &inProcessNode{cfg: c.stores.ClusterConfig(c.t.TempDir(), c.shards)}
	c.nodes = append(c.nodes, n)
	c.start(n, len(c.nodes)-1)
	return len(c.nodes) - 1
}

func (c *inProcess) Stop(i int) {
	c.t.Helper()
	if c.nodes[i].node == nil {
		c.t.Fatalf("framework: Stop of stopped node %d", i)
	}
	c.shutdown(c.nodes[i])
}

func (c *inProcess) Restart(i int) {
	c.t.Helper()
	if c.nodes[i].node != nil {
		c.t.Fatalf("framework: Restart of running node %d", i)
	}
	c.start(c.nodes[i], i)
}

// start opens and serves n, and returns once it listens.
func (c *inProcess) start(n *inProcessNode, i int) {
	c.t.Helper()
	node, err := server.Open(c.t.Context(), n.cfg, c.stores.Credentials(), c.log.With("node", i))
	if err != nil {
		c.t.Fatalf("framework: open node %d: %v", i, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.node, n.stop, n.done = node, cancel, make(chan error, 1)
	addr := make(chan net.Addr, 1)
	go func() { n.done <- node.Serve(ctx, func(a net.Addr) { addr <- a }) }()
	select {
	case a := <-addr:
		n.url = "http://" + a.String()
	case err := <-n.done:
		n.node = nil
		node.Close()
		c.t.Fatalf("framework: node %d stopped before it listened: %v", i, err)
	}
	n.adminURL = "http://" + node.AdminAddr().String()
}

// shutdown stops a running node: Serve drains and returns, then the node closes.
func (c *inProcess) shutdown(n *inProcessNode) {
	if n.node == nil {
		return
	}
	n.stop()
	if err := <-n.done; err != nil {
		c.t.Errorf("framework: node at %s: Serve: %v", n.url, err)
	}
	if err := n.node.Close(); err != nil {
		c.t.Errorf("framework: node at %s: Close: %v", n.url, err)
	}
	n.node = nil
}
