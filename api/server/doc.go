// Package server assembles one Cairn node from its configuration: the locked data
// directory, the blob store (Config.Blob: a local directory or an S3 bucket), the shard
// replica, the Workbench service, and the HTTP handler (REST, MCP, metrics, health).
// cmd/cairn only parses flags and calls it.
//
// Open builds the embedded default (Node, server.go: one shard, a single voter);
// OpenCluster builds a node of a replicated cluster (ClusterNode, cluster*.go: membership
// and placement in etcd, the replicas the control plane assigns, leader hints, routing and
// forwarding over the peer port; DESIGN.md §9). DESIGN.md §3 makes them one kind of node
// over shard/host; until then each is wired on its own.
//
// Data directory layout (all under Config.DataDir):
//
//	LOCK              flock'd while a process uses the directory
//	node-id           the node's UUID (Raft server id), written once
//	cursor.key        32 random bytes signing cursors, written once (mode 0600)
//	shards/0/         the shard's Raft log (raft.db) and snapshots (snapshots/)
//	blobs/            the local-directory blob store (Config.Blob "dir", the default)
//	s3-uploads/       the S3 multipart uploads in flight (Config.Blob "s3://…"), aborted
//	                  at the next start if a crash left them
//
// A cluster node adds cluster-node-id (its id in every shard, recorded once and checked at
// every start) and one shards/<id>/ per shard it hosts; its cursor key is the cluster's,
// kept in etcd, not cursor.key.
//
// Listeners: the client listener (Config.Listen) serves tenant routes, the admin listener
// (Config.AdminAddress) the admin routes; both sit behind the guard (guard.go: Host must
// name this node, no cross-origin state changes), connection caps and read-header/idle
// timeouts (listen.go). /readyz also reflects the readiness probe (health.go).
//
// Invariants callers rely on:
//
//   - One process per data directory: Open and OpenCluster take its LOCK (flock) before
//     they read or write anything in it, and fail with ErrDataDirLocked while another
//     process holds it. When they fail they have closed what they opened and released the
//     lock.
//   - node-id and cursor.key are created once (written to a temporary file, then renamed;
//     mode 0600) and read back at every later start, so a node keeps its Raft server id
//     and the cursors it signed stay valid across restarts.
//   - Admin routes (/v1/admin/...) are served on the admin listener only.
//   - The background workers (restore resumption, compaction, garbage collection) are one
//     shard/worker Set per node, the same in both modes: each replica's OnReady leads and
//     unleads its shard's workers, so they act only while the replica is a ready leader.
//     Close stops every background goroutine and waits for it before it closes the
//     replicas and the blob store and releases the lock.
//   - Serve shuts down gracefully within Config.ShutdownTimeout; a cluster node first hands
//     the leadership of the shards it leads to another voter, within half of it.
package server
