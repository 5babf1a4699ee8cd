package framework

import "testing"

// Cluster is a running Cairn cluster under test.
type Cluster interface {
	// Len returns how many nodes were started, stopped ones included.
	Len() int
	// ClientURL returns the base URL of node i's client listener
	// ("http://127.0.0.1:PORT").
	ClientURL(i int) string
	// AdminURL returns the base URL of node i's admin listener (/v1/admin/...).
	AdminURL(i int) string
	// Running reports whether node i is running.
	Running(i int) bool
	// Add starts one more node on a new data directory and returns its number.
	Add() int
	// Stop stops node i gracefully; Restart brings it back.
	Stop(i int)
	// Restart starts the stopped node i again on its data directory.
	Restart(i int)
}

// Options shape a cluster.
type Options struct {
	// Nodes is how many nodes start at once.
	Nodes int
	// Shards is the cluster's shard count.
	Shards int
}

// Implementation is one way to build a cluster.
type Implementation struct {
	// Name names the subtest the scenario runs in.
	Name string
	// Start starts a cluster for t, stopped when t ends.
	Start func(t *testing.T, o Options) Cluster
}

// Run runs scenario once per implementation, each in a subtest named for it, on a cluster
// started with o.
func Run(t *testing.T, o Options, impls []Implementation, scenario func(t *testing.T, c Cluster)) {
	t.Helper()
	for _, impl := range impls {
		t.Run(impl.Name, func(t *testing.T) { scenario(t, impl.Start(t, o)) })
	}
}
