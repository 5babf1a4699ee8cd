// Package server assembles one Cairn node from its configuration: the locked data
// directory, the blob store (Config.Blob: a local directory or an S3 bucket), the shard
// host and its replicas, the Workbench service, and the HTTP handler (REST, MCP, the
// OpenWOP host.workspace facade, metrics, health).
// cmd/cairn only parses flags and calls it.
//
// Open builds one kind of node for both modes (docs/architecture.md#packages): a shard host (shard/host)
// with the blob store, the Workbench service, REST and MCP, the metrics and the
// background workers on top. The embedded default's host has one fixed shard, a single
// voter and a static placement; a cluster node's host (Config.Cluster) keeps membership
// and placement in etcd, hosts the replicas the control plane assigns, and routes and
// forwards over the peer port (docs/architecture.md#replication-and-placement). This package only assembles: routing and
// forwarding decisions are the host's (route.go wraps them for HTTP).
//
// Secret redaction (redact.go): Open builds the node's workbench/redact Redactor from
// Config.RedactSecretsFile and Config.RedactAllSurfacesTenants before the blob store and
// the shard host open (a bad file fails the start, naming the entry and never its value);
// the Workbench service redacts the writes of the opted-in agents with it, and
// Node.Redactor hands it to the OpenWOP facade. The secret values stay in memory.
//
// Backups (backup.go): a backup streams every part (each shard's state through a spool
// file, the etcd records a page at a time, the API keys and blobs from their files) and
// holds one constant working set of the node's memory budget while it runs.
//
// Data directory layout (all under Config.DataDir):
//
//	LOCK              flock'd while a process uses the directory
//	node-id           the node's UUID (Raft server id), written once
//	cursor.key        32 random bytes signing cursors, written once (mode 0600)
//	keys.json         the API keys (workbench/auth.FileStore: digests only, mode 0600); a
//	                  cluster's keys live in etcd under <prefix>/keys/ instead
//	shards/0/         the shard's Raft log (raft.db) and snapshots (snapshots/)
//	blobs/            the local-directory blob store (Config.Blob "dir", the default)
//	s3-uploads/       the S3 multipart uploads in flight (Config.Blob "s3://…"), aborted
//	                  at the next start if a crash left them
//	restore-incomplete  a restore that did not finish (ops/backup/marker.go): Open
//	                  refuses the directory until the restore, run again, finishes
//
// A cluster node adds cluster-node-id (its id in every shard, recorded once and checked at
// every start) and one shards/<id>/ per shard it hosts; its cursor key is the cluster's,
// kept in etcd, not cursor.key.
//
// Listeners: the client listener (Config.Listen) serves tenant routes, the admin listener
// (Config.AdminAddress) the admin routes; both sit behind the guard (guard.go: Host must
// name this node, no cross-origin state changes), connection caps and read-header/idle
// timeouts (listen.go), and with Config.TLS() both serve TLS (tls.go): the certificate
// and key files are looked at again at most every certCheckInterval and re-read when
// they changed, a pair that fails to load is logged and the previous one kept, and with
// Config.TLSClientCA a client without a certificate that bundle signs is refused at the
// handshake. /readyz also reflects the readiness probe (health.go). A cluster node binds
// its client listener at Open, before it joins the cluster; until Serve takes the
// listener over, the starting server answers on it at once (starting.go).
// Behind the guard, the authentication middleware (authn.go) runs before any routing:
// with ops.Config.AuthRequired every request needs a live API key (401 Unauthenticated
// otherwise) and admin routes need the admin scope; keys are managed through the admin
// routes of keys.go, or offline on a stopped node's data directory (OpenDataDirKeys) or a
// cluster's etcd (OpenEtcdKeys). The OpenWOP facade's routes (api/openwop) are the
// exception to the envelope: their 401 is OpenWOP's {error, message}, and discovery
// needs no key (openwop.go).
//
// Invariants callers rely on:
//
//   - One process per data directory: Open takes its LOCK (flock) before
//     they read or write anything in it, and fail with ErrDataDirLocked while another
//     process holds it, after waiting up to dataDirLockWait for a killed holder's
//     teardown to let it go (datadirlock.go). When they fail they have closed what they opened and released the
//     lock.
//   - node-id and cursor.key are created once (written to a temporary file, then renamed;
//     mode 0600) and read back at every later start, so a node keeps its Raft server id
//     and the cursors it signed stay valid across restarts.
//   - Admin routes (/v1/admin/...) are served on the admin listener only, except the
//     requests of one root's settings and purge (rest.AdminRootRequest) that a node
//     without a replica of the root's shard forwards to its leader (newAdminRouter):
//     the peer port serves those, and no other admin route, to a principal with the
//     admin scope (peerAdmin).
//   - A listener beyond loopback serves TLS, or plain HTTP only with
//     Config.InsecurePlaintext, which Serve logs as a warning (ops.Config.Validate refuses
//     anything else). A node whose TLS files do not load at Open does not start.
//   - A request is routed only after it was authenticated; a forwarded request carries
//     its principal's id (PrincipalHeader, never accepted from a client) and no secret,
//     and the serving node resolves the id in its own key store.
//   - The S3 gateway serves on every cluster node (route_s3.go): a request signed by a
//     valid S3 credential is routed by its key's one agent root (s3.Handler.Root) and, when
//     this node cannot serve that root, forwarded exactly as it came (target, Host,
//     headers, the SigV4 signature, the body streamed, never buffered) with
//     surfaceHeader; the peer port serves such a request with the S3 gateway, which
//     verifies the signature and the body's chunk signatures and digests again against
//     its own key store. The mark selects a surface and grants nothing; it is deleted from
//     every client request. Chosen over verifying here and passing the principal (REST's
//     way) because only the node that reads an aws-chunked body can check its chunk and
//     trailer signatures and answer a failed check with S3's error. A request nobody can
//     serve right now is answered with S3's 503 ServiceUnavailable (XML, Retry-After),
//     naming no node's address; an unauthenticated one is refused where it arrived.
//   - The background workers (restore resumption, compaction, garbage collection) are the
//     same in both modes and act only while a local replica is a ready leader. Close stops every background goroutine and
//     waits for it before it closes the replicas and the blob store and releases the lock.
//   - Serve shuts down gracefully within Config.ShutdownTimeout; a cluster node first hands
//     the leadership of the shards it leads to another voter, within half of it.
package server
