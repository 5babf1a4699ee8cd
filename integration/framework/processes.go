package framework

import (
	"fmt"
	"path/filepath"
	"testing"
)

// Processes is a Cluster of `cairn serve --cluster` processes (Process) on loopback over
// one Stores (replication ClusterReplication). Nodes are numbered in the order they were
// started; each has its own data directory under t.TempDir.
type Processes struct {
	// Stores are the etcd and the object store every node shares.
	Stores Stores
	// Nodes are the started nodes, stopped and killed ones included.
	Nodes []*Process
	// Bin is the cairn binary new nodes run.
	Bin string
	// Args are every node's `cairn serve` arguments: Stores.ClusterArgs, a peer port
	// picked at start, and StartProcesses' extra.
	Args []string

	t *testing.T
}

// StartProcesses starts etcd, MinIO (a bucket of its own) and o.Nodes nodes of a cluster
// of o.Shards shards running bin; extra is added to every node's arguments. The S3
// credentials are exported for the rest of t (ObjectStore.ExportCredentials), where every
// `cairn` child reads them. Every node is stopped when t ends.
func StartProcesses(t *testing.T, bin string, o Options, extra ...string) *Processes {
	t.Helper()
	st := StartStores(t)
	st.ExportCredentials(t)
	c := &Processes{t: t, Stores: st, Bin: bin}
	c.Args = append(append(st.ClusterArgs(o.Shards), "--peer-listen", "127.0.0.1:0"), extra...)
	for range o.Nodes {
		c.AddNode()
	}
	return c
}

// AddNode starts one more node on a new data directory, with extra after Args (a later
// flag wins: "--peer-listen", a fixed port).
func (c *Processes) AddNode(extra ...string) *Process {
	c.t.Helper()
	dir := filepath.Join(c.t.TempDir(), fmt.Sprintf("n%d", len(c.Nodes)))
	p := StartProcess(c.t, c.Bin, dir, append(append([]string(nil), c.Args...), extra...)...)
	c.Nodes = append(c.Nodes, p)
	return p
}

// LiveURLs returns the client URLs of the nodes that run (not killed or stopped).
func (c *Processes) LiveURLs() []string {
	var out []string
	for _, p := range c.Nodes {
		if p.Running() {
			out = append(out, p.URL)
		}
	}
	return out
}

func (c *Processes) Len() int               { return len(c.Nodes) }
func (c *Processes) ClientURL(i int) string { return c.Nodes[i].URL }
func (c *Processes) AdminURL(i int) string  { return c.Nodes[i].AdminURL }
func (c *Processes) Running(i int) bool     { return c.Nodes[i].Running() }
func (c *Processes) Add() int               { c.t.Helper(); c.AddNode(); return len(c.Nodes) - 1 }
func (c *Processes) Stop(i int)             { c.t.Helper(); c.Nodes[i].Stop() }
func (c *Processes) Restart(i int)          { c.t.Helper(); c.Nodes[i].Restart() }

// OnProcesses is the Implementation that builds a scenario's cluster with
// StartProcesses on the binary *bin names when the scenario starts (a TestMain fills it).
func OnProcesses(bin *string) Implementation {
	return Implementation{Name: "processes", Start: func(t *testing.T, o Options) Cluster {
		t.Helper()
		return StartProcesses(t, *bin, o)
	}}
}
