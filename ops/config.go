package ops

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/cairnstore/cairn/internal/gcfloor"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
)

// Defaults of every Config field; DefaultConfig returns them. A default of a setting a
// package owns is that package's constant, declared there once (issue 26).
const (
	DefaultDataDir               = "./cairn-data"
	DefaultListen                = "127.0.0.1:7070"
	DefaultInlineMaxBytes        = 4096
	DefaultSnapshotGrace         = time.Hour
	DefaultGCGrace               = worker.DefaultGCGrace
	DefaultGCInterval            = worker.DefaultGCInterval
	DefaultGCMaxBatch            = worker.DefaultGCMaxBatch
	DefaultRestoreBatch          = workbench.DefaultRestoreBatch
	MaxRestoreBatch              = meta.MaxRestoreBatch
	DefaultMCPMaxPayloadBytes    = workbench.DefaultMCPMaxPayloadBytes
	DefaultRetentionWindow       = 24 * time.Hour
	DefaultDedupeMaxPerRoot      = 100_000
	DefaultFeedRetention         = 24 * time.Hour
	DefaultFeedMaxPerRoot        = 100_000
	DefaultPresentationRoot      = workbench.DefaultPresentationRoot
	DefaultRaftSnapshotInterval  = 2 * time.Minute
	DefaultRaftSnapshotThreshold = 8192
	DefaultLogLevel              = "info"
	DefaultLogFormat             = "text"
	DefaultShutdownTimeout       = 10 * time.Second
	DefaultBlob                  = "dir"
	DefaultS3Region              = "us-east-1"
	DefaultS3CreateBucket        = true
	DefaultShards                = 8
	DefaultReplication           = control.DefaultReplication
	DefaultQueryBudgetBytes      = workbench.DefaultQueryBudgetBytes
	DefaultHeapFloorBytes        = gcfloor.DefaultFloorBytes
	DefaultQueryQueueTimeout     = workbench.DefaultQueryQueueTimeout
	DefaultMaxSnapshots          = workbench.DefaultMaxSnapshotsPerWorkbench
)

// Bounds enforced by Validate.
const (
	// MaxInlineMaxBytes is the largest accepted InlineMaxBytes: inline bodies live in Raft
	// log entries and snapshots, which must stay small (docs/architecture.md#the-write-path).
	MaxInlineMaxBytes = 64 << 10
	// MaxMCPMaxPayloadBytes is the largest accepted MCPMaxPayloadBytes: MCP payloads are
	// held in memory (base64 in JSON), so the cap must stay far below RAM.
	MaxMCPMaxPayloadBytes = 1 << 30
	// PresentationRootAgentPlaceholder must appear in PresentationRoot; it is replaced by
	// the agent id (docs/workbench.md#common-rules).
	PresentationRootAgentPlaceholder = "{agent}"
	// MaxS3PrefixBytes is the longest accepted prefix of an s3:// Blob URL: with the
	// longest object name Cairn appends ("/roots/<64>/blobs/<aa>/<64 hex>", 145 bytes) a
	// key stays far below S3's 1024-byte limit.
	MaxS3PrefixBytes = 512
	// MaxS3RegionBytes is the longest accepted S3Region.
	MaxS3RegionBytes = 64
	// MaxShards is the largest accepted Shards: a node hosts tens of shards, each its own
	// Raft group heartbeating on its own (docs/architecture.md#replication-and-placement).
	MaxShards = 256
	// MaxReplication is the largest accepted Replication.
	MaxReplication = 9
	// MaxNodeIDBytes is the longest accepted NodeID.
	MaxNodeIDBytes = 64
	// MinQueryBudgetBytes is the smallest accepted QueryBudgetBytes: a grep call alone
	// reserves 1 MiB of it.
	MinQueryBudgetBytes = 16 << 20
)

// ConfigFlag is the flag (and CAIRN_CONFIG the environment variable) naming the YAML
// configuration file. Neither is a Config field: the file is an input, not a setting.
const (
	ConfigFlag = "config"
	ConfigEnv  = "CAIRN_CONFIG"
)

// Config is the configuration of a Cairn server process. Each field is settable as a
// YAML key (shown), a flag (the key with dashes: data_dir → --data-dir) and an
// environment variable (CAIRN_ + upper-case key: CAIRN_DATA_DIR).
type Config struct {
	// DataDir is the node's data directory (Raft logs, snapshots, the local blob store of
	// the embedded default, the node UUID). YAML data_dir. Default "./cairn-data".
	DataDir string
	// Listen is the client listen address as host:port (port 0 picks a free port). A
	// host beyond loopback (an interface's address, or 0.0.0.0 / "" for every interface)
	// needs TLS (TLSCert, TLSKey) or InsecurePlaintext (listen.go). YAML listen. Default
	// "127.0.0.1:7070".
	Listen string
	// InlineMaxBytes is the largest body or segment, in bytes, stored inline in the
	// metadata record instead of the object store; 0 puts every body in the object store.
	// Range 0..65536. YAML inline_max_bytes. Default 4096 (docs/architecture.md#the-write-path).
	InlineMaxBytes int64
	// MCPMaxPayloadBytes caps a decoded MCP write payload, in bytes; larger payloads fail
	// with PayloadTooLarge. REST streams and is not capped. Range 1..1 GiB. YAML
	// mcp_max_payload_bytes. Default 16 MiB (docs/workbench.md#common-rules).
	MCPMaxPayloadBytes int64
	// RetentionWindow is how long, in command time, dedupe records, tombstones and finished
	// operations are kept (docs/architecture.md#the-metadata-core). Must be positive. YAML
	// retention_window (a Go duration such as "24h"). Default 24h.
	RetentionWindow time.Duration
	// HistoryVersions, HistoryAge and HistoryMaxVersions are the node-default history
	// retention of every agent root without a policy of its own (meta.Retention; a root's
	// own is set with `cairn admin retention set`): each path keeps its newest
	// HistoryVersions versions and every version superseded less than HistoryAge ago
	// (command time), whichever keeps more, at most HistoryMaxVersions; snapshots, commits
	// and backups hold what they need beyond that. Part of the replicated behaviour: every
	// node of a cluster must run with equal values. HistoryVersions range 1..10000 (1:
	// superseded versions go at once), HistoryMaxVersions HistoryVersions..10000,
	// HistoryAge 0..87600h. YAML history_versions, history_age, history_max_versions.
	// Defaults 100, 720h (30 days), 1000.
	HistoryVersions    int
	HistoryAge         time.Duration
	HistoryMaxVersions int
	// DedupeMaxPerRoot bounds the number of remembered request ids per agent root; the
	// oldest are forgotten first. Must be at least 1. YAML dedupe_max_per_root. Default
	// 100000.
	DedupeMaxPerRoot int
	// FeedRetention is how long, in command time, the change feed keeps an event
	// (GET /v1/agents/{agent}/events; older positions answer 410). Must be positive. YAML
	// feed_retention. Default 24h.
	FeedRetention time.Duration
	// FeedMaxPerRoot bounds the change-feed events kept per agent root; the oldest go
	// first. At least 1, or -1: keep no feed (a rolling upgrade from a release without it
	// sets -1 until every node runs this one: a feed makes Raft snapshots the previous
	// release cannot install). YAML feed_max_per_root. Default 100000.
	FeedMaxPerRoot int
	// SnapshotGrace is how long, in command time, an expired workbench snapshot can still
	// be renewed before it is reaped (docs/workbench.md, workbench_snapshot). Must be positive. YAML
	// snapshot_grace. Default 1h.
	SnapshotGrace time.Duration
	// RestoreBatch is how many files one bounded restore command stages (docs/architecture.md#the-metadata-core).
	// Range 1..4096. YAML restore_batch. Default 1024.
	RestoreBatch int
	// GCGrace is how long a blob must have had no reference (command time), or an
	// uploaded but never published blob must have been stored (object modification
	// time), before the garbage collector deletes it (docs/architecture.md#blob-storage-and-garbage-collection). It must exceed the
	// longest read or upload stream. Must be positive. YAML gc_grace. Default 1h.
	GCGrace time.Duration
	// GCInterval is how often the shard leader runs a garbage-collection sweep. Must be
	// positive. YAML gc_interval. Default 10m.
	GCInterval time.Duration
	// GCMaxBatch bounds the blobs one garbage-collection sweep collects per agent root; a
	// sweep that leaves more behind is followed at once by another (up to ten per
	// interval). 1..meta.MaxGCBatch. YAML gc_max_batch. Default 1000.
	GCMaxBatch int
	// MaxSnapshotsPerWorkbench caps the snapshots of one workbench that hold history
	// (alive, or expired and still renewable); minting one more is ResourceExhausted
	// naming the cap, and snapshot_list answers are bounded by it. At least 1. YAML
	// max_snapshots_per_workbench. Default 256.
	MaxSnapshotsPerWorkbench int
	// MaxUploadDuration bounds how long one body may take to upload, from its first
	// byte to its publish; a slower one fails with ResourceExhausted saying so. It must be
	// shorter than GCGrace, so that the collector never deletes the blobs of an upload
	// still in progress (docs/architecture.md#the-read-path: the grace outlasts every upload). 0 means half of
	// GCGrace; otherwise it must be positive and less than GCGrace. YAML
	// max_upload_duration. Default 0 (30m with the default GCGrace).
	MaxUploadDuration time.Duration
	// CacheMaxBytes bounds the node's local segment cache (blob/cache, docs/architecture.md#the-read-path), in
	// bytes of cached segments: verified segments kept on local disk and served from
	// there (sendfile) instead of the object store. 0 turns the cache off, the default:
	// over the dir blob store (the embedded default) the blobs are on the same disk
	// already and a cache would only store them twice, and how much disk an s3 node can
	// spare is the operator's call. Must not be negative. YAML cache_max_bytes.
	CacheMaxBytes int64
	// CacheDir is the segment cache's directory; it survives restarts (the cache reopens
	// with its entries) and is not durable state (deleting it loses nothing). Empty means
	// DataDir/segment-cache. Set only with CacheMaxBytes. YAML cache_dir. Default "".
	CacheDir string
	// QueryBudgetBytes is the node's memory budget, in bytes: what the requests whose
	// answer or working set grows with their input (search, aggregate, catalog, grep, file
	// diffs, file listings, histories, state-diff pages, proposal and judgment listings,
	// OpenWOP proposal pages and file listings, MCP messages above 1 MiB, backups) running
	// at once on this node may hold together, by estimates computed before each builds its
	// answer (workbench admission.go); a request larger than all of it is refused with
	// ResourceExhausted. At least 16 MiB. YAML query_budget_bytes. Default 512 MiB.
	QueryBudgetBytes int64
	// HeapFloorBytes is the Go heap below which `cairn serve` does not collect garbage
	// (internal/gcfloor): while the live heap is under half of it, the collector's goal is
	// raised to about this size, so a node serving small calls collects less often than
	// GOGC=100 would make it; a larger live heap leaves GOGC as it is. It costs at most
	// this much heap. 0 turns it off; GOGC=off in the environment does too. Must not be
	// negative. YAML heap_floor_bytes. Default 64 MiB.
	HeapFloorBytes int64
	// QueryQueueTimeout is how long a query waits for its share of QueryBudgetBytes
	// before it is answered ResourceExhausted (retryable; REST 429). Must be positive.
	// YAML query_queue_timeout. Default 5s.
	QueryQueueTimeout time.Duration
	// PrincipalRequestsPerSecond is the sustained rate of requests one principal may make
	// to this node (a token bucket); a request over it is answered ResourceExhausted (REST
	// 429 with Retry-After). At least 0, finite; 0: no limit. YAML
	// principal_requests_per_second. Default 0.
	PrincipalRequestsPerSecond float64
	// PrincipalRequestBurst is the token bucket's size: the requests one principal may make
	// at once after a quiet period. At least 0; 0 means ceil(PrincipalRequestsPerSecond).
	// YAML principal_request_burst. Default 0.
	PrincipalRequestBurst int
	// PrincipalMaxUploads is how many file body writes (PUT, append) one principal may
	// have in flight on this node; one more is answered ResourceExhausted at once. At
	// least -1; 0: no limit; -1 (the default, AutoPrincipalLimit): no limit when the
	// client listener binds loopback, DefaultPrincipalMaxUploads beyond it
	// (EffectivePrincipalMaxUploads). YAML principal_max_uploads.
	PrincipalMaxUploads int
	// PrincipalMaxAdmissions is how many requests under the memory budget (queries,
	// greps, diffs, listings, histories, large MCP messages, backups) one principal may have in
	// flight on this node; one more is answered ResourceExhausted (retryable) at once, so
	// one key cannot hold the whole QueryBudgetBytes. At least -1; 0: no limit; -1 (the
	// default, AutoPrincipalLimit): no limit when the client listener binds loopback,
	// DefaultPrincipalMaxAdmissions beyond it (EffectivePrincipalMaxAdmissions). YAML
	// principal_max_admissions.
	PrincipalMaxAdmissions int
	// PresentationRoot is the path prefix shown to agents, with "{agent}" replaced by the
	// agent id. Presentation only, never a storage key. Must be an absolute, clean path
	// containing "{agent}" and must not be "/". YAML presentation_root. Default
	// "/agents/{agent}/wb".
	PresentationRoot string
	// RaftSnapshotInterval is how often each shard checks whether to take a Raft snapshot.
	// Must be positive. YAML raft_snapshot_interval. Default 2m.
	RaftSnapshotInterval time.Duration
	// RaftSnapshotThreshold is the number of Raft log entries since the last snapshot that
	// triggers a new one. Must be at least 1. YAML raft_snapshot_threshold. Default 8192.
	RaftSnapshotThreshold uint64
	// LogLevel is the minimum level logged: debug, info, warn or error. YAML log_level.
	// Default info.
	LogLevel string
	// LogFormat is the log line format: text (logfmt-style key=value) or json. YAML
	// log_format. Default text.
	LogFormat string
	// AccessLog logs one line per HTTP request, on both listeners, at info: method, route
	// (the pattern, never the raw path or query), status, response bytes, duration, remote
	// address and request id (X-Request-Id, echoed or generated). Never bodies, query
	// values or credentials. YAML access_log. Default false.
	AccessLog bool
	// ShutdownTimeout bounds a graceful shutdown (draining requests, stopping Raft) before
	// the process gives up and exits. Must be positive. YAML shutdown_timeout. Default 10s.
	ShutdownTimeout time.Duration
	// Blob selects the blob store (docs/architecture.md#blob-storage-and-garbage-collection), one of:
	//   - "dir": a local directory, DataDir/blobs (the embedded default);
	//   - "dir://PATH": a local directory at PATH, taken literally ("dir:///srv/blobs" is
	//     absolute, "dir://blobs" relative to the working directory); one process per
	//     directory, like DataDir;
	//   - "s3://BUCKET[/PREFIX]": an S3-compatible object store (MinIO, AWS S3, Ceph RGW,
	//     SeaweedFS) at S3Endpoint. BUCKET follows the S3 naming rules; PREFIX is "/"-
	//     separated non-empty segments (a trailing "/" is ignored), at most 512 bytes.
	//     Objects are named PREFIX/roots/<root uid>/blobs/<aa>/<sha256 hex>. The URL never
	//     carries credentials: they come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
	//     (see Credentials).
	// YAML blob. Default "dir".
	Blob string
	// S3Endpoint is the object store's URL: "http://host[:port]" (plain HTTP, no TLS) or
	// "https://host[:port]" (TLS); the scheme alone selects TLS. No path, query or
	// credentials. Required when Blob is an s3:// URL and must be empty otherwise. YAML
	// s3_endpoint. Default "" (none).
	S3Endpoint string
	// S3Region is the region S3 requests are signed for: AWS needs the bucket's region;
	// MinIO, Ceph RGW and SeaweedFS accept the default. 1 to 64 characters of
	// [A-Za-z0-9_-]. YAML s3_region. Default "us-east-1".
	S3Region string
	// S3CreateBucket makes the server create the bucket of an s3:// Blob at start when it
	// does not exist; when false, a missing bucket fails the start. YAML s3_create_bucket.
	// Default true.
	S3CreateBucket bool
	// S3DirectReads lets clients read a one-segment, uncompressed file straight from the
	// object store: REST `GET …/files/P?redirect` answers 307 to a presigned URL of its
	// object (valid 5 minutes) instead of relaying the bytes. Only for an s3:// Blob that
	// clients can reach at S3Endpoint; the URL names the bucket and object key. YAML
	// s3_direct_reads. Default false.
	S3DirectReads bool

	// Cluster runs the node as a member of a replicated cluster (docs/architecture.md#replication-and-placement): shards are
	// Raft groups spread over the nodes, membership and placement live in etcd. It needs
	// an s3:// Blob (every replica reads every blob), Etcd and PeerListen. YAML cluster.
	// Default false (the embedded single node).
	Cluster bool
	// NodeID is this node's id in the cluster (its Raft server id): 1 to 64 characters of
	// [A-Za-z0-9._-]. Empty means the UUID kept in DataDir, so a node that lost its disk
	// cannot rejoin as its old self. YAML node_id. Default "" (the data directory's UUID).
	NodeID string
	// PeerListen is the peer listen address, host:port, of Raft and request forwarding
	// (one port for all shards). It may be non-loopback only with peer TLS
	// (PeerTLSCert, PeerTLSKey, PeerTLSCA). Required with Cluster. YAML peer_listen.
	// Default "" (none).
	PeerListen string
	// AdvertiseClient is the client URL other nodes and tools are told for this node
	// ("http://host:port"). Empty means http://<the bound Listen address> (https:// with
	// TLS). YAML advertise_client. Default "".
	AdvertiseClient string
	// AdvertisePeer is the peer address, host:port, other nodes dial. Empty means the
	// bound PeerListen address; required when PeerListen binds every interface (0.0.0.0,
	// ::). YAML advertise_peer. Default "".
	AdvertisePeer string
	// PeerSource is the IP address this node's outbound peer connections originate from
	// (the local address of every Raft and forwarding dial). Empty lets the system choose
	// by route, which is right almost always; set it when peers or firewalls identify nodes
	// by source address (the partition tests do: their fault-injecting proxy tells the
	// dialling node by it). YAML peer_source. Default "".
	PeerSource string
	// Etcd is the comma-separated list of etcd endpoints of the control plane
	// ("127.0.0.1:2379,127.0.0.1:22379" or http:// / https:// URLs). Required with
	// Cluster. YAML etcd. Default "" (none).
	Etcd string
	// Shards is the number of shards, used only when the cluster is first created (a
	// node joining an existing cluster with another count fails). Range 1..256. YAML
	// shards. Default 8.
	Shards int
	// Replication is the number of replicas wanted per shard. Range 1..9. YAML
	// replication. Default 3.
	Replication int
	// PeerTLSCert, PeerTLSKey and PeerTLSCA are the PEM files of this node's peer
	// certificate, its key, and the CA bundle that signs every node's certificate; set
	// all three for mutual TLS between nodes, or none. YAML peer_tls_cert, peer_tls_key,
	// peer_tls_ca. Default "" (plain TCP, loopback only).
	PeerTLSCert string
	PeerTLSKey  string
	PeerTLSCA   string

	// Serving limits (serving.go has their rules and flags).
	//
	// ReadHeaderTimeout bounds reading a request's headers. Positive. YAML
	// read_header_timeout. Default 10s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that waits this long for its next
	// request. Positive. YAML idle_timeout. Default 2m.
	IdleTimeout time.Duration
	// WriteTimeout bounds each write of a response: a client that stops reading for this
	// long is cut off, a download that keeps moving is not. Positive. YAML
	// write_timeout. Default 1m.
	WriteTimeout time.Duration
	// BodyMinBytesPerSecond is the slowest average rate, in bytes per second, a request
	// body may arrive at (REST uploads and MCP requests alike); a slower one, or one that
	// stalls a whole BodyRateWindow, ends with InvalidArguments (field "body", rule
	// "min_rate") and frees its slots. At least 1. YAML body_min_bytes_per_second.
	// Default 65536.
	BodyMinBytesPerSecond int64
	// BodyRateWindow is the waiting time the minimum body rate is averaged over.
	// Positive. YAML body_rate_window. Default 30s.
	BodyRateWindow time.Duration
	// MaxConnections caps the client connections a node holds open; further ones wait
	// to be accepted. At least 1. YAML max_connections. Default 4096.
	MaxConnections int
	// MaxConnectionsPerClient caps the client connections from one IP address; further
	// ones are closed at once. 1..MaxConnections. YAML max_connections_per_client.
	// Default 1024.
	MaxConnectionsPerClient int
	// BlobTimeout bounds every object-store call that moves no body (stat, exists,
	// delete, list page, small put) and the wait for each part of a streamed one; a
	// call past it answers ObjectUnavailable (503, retryable). Positive. YAML
	// blob_timeout. Default 30s.
	BlobTimeout time.Duration
	// AdminListen is the listen address, host:port, of the admin routes (/v1/admin/...),
	// which are never served on Listen; /metrics, /healthz and /readyz answer on both
	// listeners. Port 0 picks a free port; it must differ from Listen, and a host beyond
	// loopback needs TLS or InsecurePlaintext as Listen does (the admin listener serves
	// the same TLS). YAML admin_listen. Default "": the host of Listen and the next port
	// ("127.0.0.1:7071"), a free port when Listen's is 0 (AdminAddress).
	AdminListen string
	// AllowedHosts is a comma-separated list of extra host names (or host:port) the
	// client listener answers in a request's Host header, besides the loopback names
	// and the listen address; other Host values get 403 (a DNS-rebound page). YAML
	// allowed_hosts. Default "" (none).
	AllowedHosts string

	// Client TLS and the listener policy (listen.go has their rules and flags).
	//
	// TLSCert and TLSKey are the PEM files of the certificate (chain) and private key the
	// client and admin listeners serve TLS with; set both or neither. The node re-reads
	// them when either changes on disk (checked at most every few seconds), so a renewed
	// certificate needs no restart; a pair that fails to load is logged and the previous
	// one kept. YAML tls_cert, tls_key. Default "" (plain HTTP).
	TLSCert string
	TLSKey  string
	// TLSClientCA is a PEM CA bundle; when set, both listeners accept only clients
	// presenting a certificate it signs (mutual TLS). Needs TLSCert and TLSKey. Read at
	// start. YAML tls_client_ca. Default "" (no client certificate asked for).
	TLSClientCA string
	// InsecurePlaintext lets Listen and AdminListen bind beyond loopback without TLS:
	// API keys and data then cross the network in clear text, and the node logs a
	// warning at start. It must not be set together with TLSCert. YAML
	// insecure_plaintext. Default false.
	InsecurePlaintext bool

	// Auth is when requests need an API key (workbench/auth/doc.go, auth.go): "auto" when the
	// client listener is not on loopback, "required" always, "off" never (only on a
	// loopback listener). /healthz and /readyz never need one. YAML auth. Default "auto"
	// (the embedded default on loopback needs no key).
	Auth string
	// MetricsRequireKey makes /metrics need an API key on loopback connections too; by
	// default a loopback connection to a listener bound to loopback reads it without one
	// while authentication is required. A listener bound beyond loopback always needs a
	// key for /metrics, and a key that reads /metrics needs the admin scope (it shows
	// every principal's id and request counts). YAML metrics_require_key. Default false.
	MetricsRequireKey bool
	// RequireDistinctReviewer refuses a decision on a proposal (accept or reject, on
	// REST, MCP, the CLI and OpenWOP apply/reject) by the principal that proposed it:
	// 403 PermissionDenied, details.reason "self_review". It needs API keys (Auth not
	// off, and required on loopback): without them every request is the local operator.
	// Node-wide: set it on every node of a cluster. YAML require_distinct_reviewer.
	// Default false.
	RequireDistinctReviewer bool

	// RedactSecretsFile is the WSR-1 secrets file (workbench/redact: JSON or YAML
	// {tenants: {<agent>: [{id, value}]}, allSurfaces: [<agent>]}), read once at start;
	// its values live in memory only. Empty: no registered values (secret-shaped tokens
	// are still redacted where redaction applies). YAML redact_secrets_file. Default "".
	RedactSecretsFile string
	// RedactAllSurfacesTenants lists, comma-separated, the agents whose writes through
	// every surface (REST, MCP, CLI) are redacted, besides the secrets file's allSurfaces;
	// other agents' writes are redacted on the OpenWOP surface only. YAML
	// redact_all_surfaces_tenants. Default "".
	RedactAllSurfacesTenants string
	// OpenWOP configures the OpenWOP host.workspace facade (openwop.go).
	OpenWOP OpenWOPConfig
	// S3Gateway configures the S3 gateway (s3gateway.go).
	S3Gateway S3GatewayConfig
	// Documents configures the working-documents surface (documents.go).
	Documents DocumentsConfig
}

// EtcdEndpoints returns the Etcd endpoints, split at commas, trimmed, empty ones dropped.
func (c Config) EtcdEndpoints() []string { return splitList(c.Etcd) }

// splitList splits a comma-separated setting into its items, trimmed, empty ones dropped
// (nil when there are none).
func splitList(list string) []string {
	var out []string
	for _, item := range strings.Split(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// SegmentCacheDir is the segment cache's directory: CacheDir, or DataDir/segment-cache.
func (c Config) SegmentCacheDir() string {
	if c.CacheDir != "" {
		return c.CacheDir
	}
	return filepath.Join(c.DataDir, "segment-cache")
}

// History is the node-default history retention the settings HistoryVersions, HistoryAge
// and HistoryMaxVersions describe.
func (c Config) History() meta.Retention {
	return meta.Retention{Versions: c.HistoryVersions, Age: c.HistoryAge, MaxVersions: c.HistoryMaxVersions}
}

// PeerTLS reports whether peer mutual TLS is configured (all three files set).
func (c Config) PeerTLS() bool {
	return c.PeerTLSCert != "" && c.PeerTLSKey != "" && c.PeerTLSCA != ""
}

// DefaultConfig returns the embedded default: one node on loopback, data in
// ./cairn-data, every field at its documented default.
func DefaultConfig() Config {
	return Config{
		DataDir:               DefaultDataDir,
		Listen:                DefaultListen,
		InlineMaxBytes:        DefaultInlineMaxBytes,
		MCPMaxPayloadBytes:    DefaultMCPMaxPayloadBytes,
		RetentionWindow:       DefaultRetentionWindow,
		HistoryVersions:       meta.DefaultHistoryVersions,
		HistoryAge:            meta.DefaultHistoryAge,
		HistoryMaxVersions:    meta.DefaultHistoryMaxVersions,
		DedupeMaxPerRoot:      DefaultDedupeMaxPerRoot,
		FeedRetention:         DefaultFeedRetention,
		FeedMaxPerRoot:        DefaultFeedMaxPerRoot,
		SnapshotGrace:         DefaultSnapshotGrace,
		RestoreBatch:          DefaultRestoreBatch,
		GCGrace:               DefaultGCGrace,
		GCInterval:            DefaultGCInterval,
		GCMaxBatch:            DefaultGCMaxBatch,
		PresentationRoot:      DefaultPresentationRoot,
		RaftSnapshotInterval:  DefaultRaftSnapshotInterval,
		RaftSnapshotThreshold: DefaultRaftSnapshotThreshold,
		LogLevel:              DefaultLogLevel,
		LogFormat:             DefaultLogFormat,
		ShutdownTimeout:       DefaultShutdownTimeout,
		Blob:                  DefaultBlob,
		S3Region:              DefaultS3Region,
		S3CreateBucket:        DefaultS3CreateBucket,
		Shards:                DefaultShards,
		Replication:           DefaultReplication,

		QueryBudgetBytes:         DefaultQueryBudgetBytes,
		HeapFloorBytes:           DefaultHeapFloorBytes,
		QueryQueueTimeout:        DefaultQueryQueueTimeout,
		PrincipalMaxUploads:      AutoPrincipalLimit,
		PrincipalMaxAdmissions:   AutoPrincipalLimit,
		MaxSnapshotsPerWorkbench: DefaultMaxSnapshots,

		ReadHeaderTimeout:       DefaultReadHeaderTimeout,
		IdleTimeout:             DefaultIdleTimeout,
		WriteTimeout:            DefaultWriteTimeout,
		BodyMinBytesPerSecond:   DefaultBodyMinBytesPerSecond,
		BodyRateWindow:          DefaultBodyRateWindow,
		MaxConnections:          DefaultMaxConnections,
		MaxConnectionsPerClient: DefaultMaxConnectionsPerClient,
		BlobTimeout:             DefaultBlobTimeout,
		AdminListen:             DefaultAdminListen,
		Auth:                    DefaultAuth,
		OpenWOP:                 DefaultOpenWOPConfig(),
		S3Gateway:               DefaultS3GatewayConfig(),
		Documents:               DefaultDocumentsConfig(),
	}
}
