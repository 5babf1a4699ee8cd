package ops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

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

// ConfigError reports one bad configuration value: which field, which rule it broke, the
// offending value and, when known, where it came from.
type ConfigError struct {
	// Source names where the value came from: a flag ("--listen"), an environment
	// variable ("CAIRN_LISTEN"), a YAML file position ("cairn.yaml:3 (listen)"), or ""
	// when unknown (a Config built in Go, or a default).
	Source string
	// Field is the Config field name ("Listen"); "" for an error that is not about one
	// field (an unknown YAML key, a malformed file).
	Field string
	// Rule is the rule that was broken, phrased to follow the field name
	// ("must be host:port").
	Rule string
	// Value is the offending value as text; "" when there is none to show.
	Value string
}

// Flag returns the command-line flag that sets e's field ("--etcd" for Etcd), or ""
// when the field has none (or e is about no field).
func (e *ConfigError) Flag() string {
	for _, s := range settings {
		if s.field == e.Field && e.Field != "" {
			return "--" + s.flag()
		}
	}
	return ""
}

// Error formats as "<source>: <setting> <rule> (got "<value>")", naming the setting as
// the user writes it: its flag ("--etcd"), else the Field. The source is left out when
// it is the flag itself or unknown: "--shards must be between 1 and 256 (got "0")",
// "CAIRN_LISTEN: --listen must be host:port (got "x")".
func (e *ConfigError) Error() string {
	var b strings.Builder
	name := e.Flag()
	if name == "" {
		name = e.Field
	}
	switch {
	case e.Source != "" && e.Source != name:
		b.WriteString(e.Source)
		b.WriteString(": ")
	case e.Source == "" && name == "":
		b.WriteString("config: ")
	}
	if name != "" {
		b.WriteString(name)
		b.WriteString(" ")
	}
	b.WriteString(e.Rule)
	if e.Value != "" {
		fmt.Fprintf(&b, " (got %q)", e.Value)
	}
	return b.String()
}

// Validate checks every field against its rule (documented on the field). It returns nil
// or one *ConfigError per broken rule, joined with errors.Join, so errors.As finds the
// first; Source is empty because a Config does not know where its values came from
// (LoadConfig fills it in).
func (c Config) Validate() error {
	return joinConfigErrors(c.validate())
}

// configErrors collects the broken rules of one validation pass.
type configErrors []*ConfigError

// add records that field broke rule with value ("" when there is none to show).
func (errs *configErrors) add(field, rule, value string) {
	*errs = append(*errs, &ConfigError{Field: field, Rule: rule, Value: value})
}

func (c Config) validate() []*ConfigError {
	var errs configErrors
	bad := errs.add

	switch {
	case c.DataDir == "":
		bad("DataDir", "must not be empty", "")
	case strings.ContainsRune(c.DataDir, 0):
		bad("DataDir", "must not contain NUL", c.DataDir)
	}

	switch {
	case c.CacheMaxBytes < 0:
		bad("CacheMaxBytes", "must not be negative (0 turns the segment cache off)", strconv.FormatInt(c.CacheMaxBytes, 10))
	case c.CacheDir != "" && c.CacheMaxBytes == 0:
		bad("CacheDir", "is set but --cache-max-bytes is 0, which turns the segment cache off", c.CacheDir)
	case strings.ContainsRune(c.CacheDir, 0):
		bad("CacheDir", "must not contain NUL", c.CacheDir)
	}

	if c.InlineMaxBytes < 0 || c.InlineMaxBytes > MaxInlineMaxBytes {
		bad("InlineMaxBytes", fmt.Sprintf("must be between 0 and %d bytes", MaxInlineMaxBytes),
			strconv.FormatInt(c.InlineMaxBytes, 10))
	}
	if c.MCPMaxPayloadBytes < 1 || c.MCPMaxPayloadBytes > MaxMCPMaxPayloadBytes {
		bad("MCPMaxPayloadBytes", fmt.Sprintf("must be between 1 and %d bytes", MaxMCPMaxPayloadBytes),
			strconv.FormatInt(c.MCPMaxPayloadBytes, 10))
	}
	if c.RetentionWindow <= 0 {
		bad("RetentionWindow", "must be positive", c.RetentionWindow.String())
	}
	if err := c.History().Validate(); err != nil {
		field := map[string]string{"versions": "HistoryVersions", "age": "HistoryAge", "max_versions": "HistoryMaxVersions"}[err.Field]
		bad(field, err.Message, "")
	}
	if c.SnapshotGrace <= 0 {
		bad("SnapshotGrace", "must be positive", c.SnapshotGrace.String())
	}
	if c.GCGrace <= 0 {
		bad("GCGrace", "must be positive", c.GCGrace.String())
	}
	if c.GCInterval <= 0 {
		bad("GCInterval", "must be positive", c.GCInterval.String())
	}
	if c.GCMaxBatch < 1 || c.GCMaxBatch > meta.MaxGCBatch {
		bad("GCMaxBatch", fmt.Sprintf("must be between 1 and %d", meta.MaxGCBatch), strconv.Itoa(c.GCMaxBatch))
	}
	if c.MaxSnapshotsPerWorkbench < 1 {
		bad("MaxSnapshotsPerWorkbench", "must be at least 1", strconv.Itoa(c.MaxSnapshotsPerWorkbench))
	}
	switch {
	case c.MaxUploadDuration < 0:
		bad("MaxUploadDuration", "must not be negative (0 means half of --gc-grace)", c.MaxUploadDuration.String())
	case c.GCGrace > 0 && c.MaxUploadDuration >= c.GCGrace:
		bad("MaxUploadDuration", fmt.Sprintf("must be less than --gc-grace (%s): the collector may delete the blobs of an upload that outlasts the grace", c.GCGrace),
			c.MaxUploadDuration.String())
	}
	if c.QueryBudgetBytes < MinQueryBudgetBytes {
		bad("QueryBudgetBytes", fmt.Sprintf("must be at least %d bytes", MinQueryBudgetBytes), strconv.FormatInt(c.QueryBudgetBytes, 10))
	}
	if r := c.PrincipalRequestsPerSecond; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		bad("PrincipalRequestsPerSecond", "must be a finite number ≥ 0 (0: no limit)", strconv.FormatFloat(r, 'g', -1, 64))
	}
	if c.PrincipalRequestBurst < 0 {
		bad("PrincipalRequestBurst", "must be ≥ 0 (0: ceil of --principal-requests-per-second)", strconv.Itoa(c.PrincipalRequestBurst))
	}
	if c.PrincipalMaxUploads < AutoPrincipalLimit {
		bad("PrincipalMaxUploads", "must be ≥ -1 (0: no limit, -1: a limit beyond loopback only)", strconv.Itoa(c.PrincipalMaxUploads))
	}
	if c.PrincipalMaxAdmissions < AutoPrincipalLimit {
		bad("PrincipalMaxAdmissions", "must be ≥ -1 (0: no limit, -1: a limit beyond loopback only)", strconv.Itoa(c.PrincipalMaxAdmissions))
	}
	if c.QueryQueueTimeout <= 0 {
		bad("QueryQueueTimeout", "must be positive", c.QueryQueueTimeout.String())
	}
	if c.RestoreBatch < 1 || c.RestoreBatch > MaxRestoreBatch {
		bad("RestoreBatch", fmt.Sprintf("must be between 1 and %d files", MaxRestoreBatch), strconv.Itoa(c.RestoreBatch))
	}
	if c.DedupeMaxPerRoot < 1 {
		bad("DedupeMaxPerRoot", "must be at least 1", strconv.Itoa(c.DedupeMaxPerRoot))
	}
	if c.FeedRetention <= 0 {
		bad("FeedRetention", "must be positive", c.FeedRetention.String())
	}
	if c.FeedMaxPerRoot < 1 && c.FeedMaxPerRoot != -1 {
		bad("FeedMaxPerRoot", "must be at least 1, or -1 for no feed", strconv.Itoa(c.FeedMaxPerRoot))
	}
	if rule := checkPresentationRoot(c.PresentationRoot); rule != "" {
		bad("PresentationRoot", rule, c.PresentationRoot)
	}
	if c.RaftSnapshotInterval <= 0 {
		bad("RaftSnapshotInterval", "must be positive", c.RaftSnapshotInterval.String())
	}
	if c.RaftSnapshotThreshold < 1 {
		bad("RaftSnapshotThreshold", "must be at least 1", strconv.FormatUint(c.RaftSnapshotThreshold, 10))
	}
	if _, ok := logLevels[c.LogLevel]; !ok {
		bad("LogLevel", "must be one of debug, info, warn, error", c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("LogFormat", "must be text or json", c.LogFormat)
	}
	if c.ShutdownTimeout <= 0 {
		bad("ShutdownTimeout", "must be positive", c.ShutdownTimeout.String())
	}
	errs = append(errs, c.validateBlob()...)
	errs = append(errs, c.validateCluster()...)
	errs = append(errs, c.validateServing()...)
	errs = append(errs, c.validateListeners()...)
	errs = append(errs, c.validateAuth()...)
	errs = append(errs, c.validateRedact()...)
	errs = append(errs, c.validateOpenWOP()...)
	errs = append(errs, c.validateS3Gateway()...)
	errs = append(errs, c.validateDocuments()...)
	return errs
}

// validateCluster checks the cluster settings. They are checked whether or not Cluster
// is set (a bad value is a mistake either way); the requirements apply only with Cluster.
func (c Config) validateCluster() []*ConfigError {
	var errs configErrors
	bad := errs.add
	if c.NodeID != "" {
		if len(c.NodeID) > MaxNodeIDBytes || strings.Trim(c.NodeID, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != "" {
			bad("NodeID", fmt.Sprintf("must be 1 to %d characters of [A-Za-z0-9._-]", MaxNodeIDBytes), c.NodeID)
		}
	}
	tlsSet := 0
	for _, f := range []string{c.PeerTLSCert, c.PeerTLSKey, c.PeerTLSCA} {
		if f != "" {
			tlsSet++
		}
	}
	if tlsSet != 0 && tlsSet != 3 {
		switch {
		case c.PeerTLSCert == "":
			bad("PeerTLSCert", "must be set with --peer-tls-key and --peer-tls-ca (all three or none)", "")
		case c.PeerTLSKey == "":
			bad("PeerTLSKey", "must be set with --peer-tls-cert and --peer-tls-ca (all three or none)", "")
		default:
			bad("PeerTLSCA", "must be set with --peer-tls-cert and --peer-tls-key (all three or none)", "")
		}
	}
	if c.PeerListen != "" {
		if rule := checkPeerHostPort(c.PeerListen, c.PeerTLS()); rule != "" {
			bad("PeerListen", rule, c.PeerListen)
		}
	}
	if c.AdvertisePeer != "" {
		if rule := checkAdvertised(c.AdvertisePeer); rule != "" {
			bad("AdvertisePeer", rule, c.AdvertisePeer)
		}
	}
	if c.PeerSource != "" {
		if ip := net.ParseIP(c.PeerSource); ip == nil || ip.IsUnspecified() || ip.IsMulticast() {
			bad("PeerSource", "must be one unicast IP address (no port, not 0.0.0.0 or ::)", c.PeerSource)
		}
	}
	if c.AdvertiseClient != "" {
		u, err := url.Parse(c.AdvertiseClient)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			bad("AdvertiseClient", "must be an http:// or https:// URL with a host and no path, query or credentials", c.AdvertiseClient)
		}
	}
	for _, e := range c.EtcdEndpoints() {
		if strings.ContainsAny(e, " \x00") || strings.Contains(e, "@") {
			bad("Etcd", "must be comma-separated host:port or http(s):// endpoints without credentials", "")
			break
		}
	}
	if c.Shards < 1 || c.Shards > MaxShards {
		bad("Shards", fmt.Sprintf("must be between 1 and %d", MaxShards), strconv.Itoa(c.Shards))
	}
	if c.Replication < 1 || c.Replication > MaxReplication {
		bad("Replication", fmt.Sprintf("must be between 1 and %d", MaxReplication), strconv.Itoa(c.Replication))
	}
	if !c.Cluster {
		return errs
	}
	if !strings.HasPrefix(c.Blob, blobS3Scheme) {
		bad("Blob", "must be an s3:// object store in cluster mode (every replica must read every blob)", c.Blob)
	}
	if len(c.EtcdEndpoints()) == 0 {
		bad("Etcd", "must list at least one etcd endpoint in cluster mode", c.Etcd)
	}
	if c.PeerListen == "" {
		bad("PeerListen", "must be set in cluster mode", "")
	}
	if host, _, err := net.SplitHostPort(c.PeerListen); err == nil && c.AdvertisePeer == "" {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			bad("AdvertisePeer", "must be set when --peer-listen binds every interface (other nodes cannot dial "+c.PeerListen+")", "")
		}
	}
	return errs
}

// checkPeerHostPort returns the broken rule for a peer listen address, or "": host:port,
// loopback unless peer TLS is configured.
func checkPeerHostPort(addr string, tls bool) string {
	if rule := checkHostPort(addr); rule != "" {
		return rule
	}
	if host, _, _ := net.SplitHostPort(addr); !tls && !loopbackHost(host) {
		return "must be a loopback address unless peer TLS is configured (PeerTLSCert, PeerTLSKey, PeerTLSCA)"
	}
	return ""
}

// checkAdvertised returns the broken rule for an advertised host:port, or "".
func checkAdvertised(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || strings.ContainsAny(host, " /\x00") {
		return "must be host:port with a host"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
		return "must be host:port with a numeric port 1..65535"
	}
	return ""
}

// checkHostPort returns the broken rule for the form of a listen address, or "" (which
// hosts it may bind is the listener policy's, listen.go).
func checkHostPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "must be host:port"
	}
	if strings.ContainsAny(host, " /\x00") {
		return "must be host:port with a valid host"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || port != strconv.Itoa(n) {
		return "must be host:port with a numeric port 0..65535"
	}
	return ""
}

// checkPresentationRoot returns the broken rule for a presentation root, or "".
func checkPresentationRoot(root string) string {
	switch {
	case root == "/":
		return `must not be "/"`
	case !strings.HasPrefix(root, "/"):
		return `must be an absolute path starting with "/"`
	case !strings.Contains(root, PresentationRootAgentPlaceholder):
		return `must contain "{agent}"`
	case strings.ContainsAny(root, "\\\x00"):
		return "must not contain a backslash or NUL"
	}
	for _, comp := range strings.Split(root[1:], "/") {
		if comp == "" || comp == "." || comp == ".." {
			return `must be a clean path (no empty, "." or ".." components, no trailing "/")`
		}
	}
	return ""
}

var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// NewLogger returns a logger writing to w in c.LogFormat (json, otherwise text) at
// c.LogLevel and above (an unknown level logs at info; Validate rejects it earlier).
// Over stdio MCP, w must be stderr: stdout carries only protocol messages.
func NewLogger(c Config, w io.Writer) *slog.Logger {
	level, ok := logLevels[c.LogLevel]
	if !ok {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// setting describes one Config field in all three layers. Its flag is the YAML key with
// dashes and its environment variable CAIRN_ + the upper-case key.
type setting struct {
	field    string // Config field name, as ConfigError.Field reports it
	key      string // YAML key
	usage    string
	register func(fs *pflag.FlagSet, flag, usage string, defaults Config)
	// parse sets the field from its text form; the error text is the broken rule.
	parse func(c *Config, raw string) error
}

func (s setting) flag() string { return strings.ReplaceAll(s.key, "_", "-") }
func (s setting) env() string  { return "CAIRN_" + strings.ToUpper(s.key) }

var settings = append([]setting{
	stringSetting("DataDir", "data_dir", "data directory (Raft logs, snapshots, local blobs)",
		func(c *Config) *string { return &c.DataDir }),
	stringSetting("Listen", "listen", "client listen address, host:port (beyond loopback: needs --tls-cert/--tls-key or --insecure-plaintext)",
		func(c *Config) *string { return &c.Listen }),
	int64Setting("InlineMaxBytes", "inline_max_bytes", "largest body or segment stored inline in metadata, bytes (0..65536; 0 = never inline)",
		func(c *Config) *int64 { return &c.InlineMaxBytes }),
	int64Setting("MCPMaxPayloadBytes", "mcp_max_payload_bytes", "largest MCP write payload, bytes",
		func(c *Config) *int64 { return &c.MCPMaxPayloadBytes }),
	durationSetting("RetentionWindow", "retention_window", "how long dedupe records and tombstones are kept, command time",
		func(c *Config) *time.Duration { return &c.RetentionWindow }),
	intSetting("HistoryVersions", "history_versions", "newest versions of each path kept readable by default (1..10000; 1 = none superseded)",
		func(c *Config) *int { return &c.HistoryVersions }),
	durationSetting("HistoryAge", "history_age", "keep every version superseded less than this long ago by default, command time (0 = none by age)",
		func(c *Config) *time.Duration { return &c.HistoryAge }),
	intSetting("HistoryMaxVersions", "history_max_versions", "most versions history retention keeps per path by default (history_versions..10000)",
		func(c *Config) *int { return &c.HistoryMaxVersions }),
	intSetting("DedupeMaxPerRoot", "dedupe_max_per_root", "most remembered request ids per agent root",
		func(c *Config) *int { return &c.DedupeMaxPerRoot }),
	durationSetting("FeedRetention", "feed_retention", "how long the change feed keeps an event, command time",
		func(c *Config) *time.Duration { return &c.FeedRetention }),
	intSetting("FeedMaxPerRoot", "feed_max_per_root", "most change-feed events kept per agent root (-1: no feed)",
		func(c *Config) *int { return &c.FeedMaxPerRoot }),
	durationSetting("SnapshotGrace", "snapshot_grace", "how long an expired snapshot can be renewed before it is reaped",
		func(c *Config) *time.Duration { return &c.SnapshotGrace }),
	intSetting("RestoreBatch", "restore_batch", "files one bounded restore command stages (1..4096)",
		func(c *Config) *int { return &c.RestoreBatch }),
	durationSetting("GCGrace", "gc_grace", "how long a blob stays unreferenced (or an orphan stored) before garbage collection deletes it",
		func(c *Config) *time.Duration { return &c.GCGrace }),
	durationSetting("GCInterval", "gc_interval", "how often the leader runs a garbage-collection sweep",
		func(c *Config) *time.Duration { return &c.GCInterval }),
	intSetting("GCMaxBatch", "gc_max_batch", "most blobs one garbage-collection sweep collects per agent root (a sweep that leaves more is followed at once by another)",
		func(c *Config) *int { return &c.GCMaxBatch }),
	intSetting("MaxSnapshotsPerWorkbench", "max_snapshots_per_workbench", "most snapshots of one workbench that hold history (alive or renewable)",
		func(c *Config) *int { return &c.MaxSnapshotsPerWorkbench }),
	int64Setting("CacheMaxBytes", "cache_max_bytes", "bound of the local segment cache, bytes (0 = no cache)",
		func(c *Config) *int64 { return &c.CacheMaxBytes }),
	stringSetting("CacheDir", "cache_dir", "directory of the local segment cache (default: <data-dir>/segment-cache)",
		func(c *Config) *string { return &c.CacheDir }),
	durationSetting("MaxUploadDuration", "max_upload_duration", "longest one body may take to upload; must be less than --gc-grace (0 = half of it)",
		func(c *Config) *time.Duration { return &c.MaxUploadDuration }),
	int64Setting("QueryBudgetBytes", "query_budget_bytes", "memory the requests whose answer grows with their input (queries, grep, diffs, file, history and proposal listings, large MCP messages, backups) running at once may hold, bytes (at least 16 MiB)",
		func(c *Config) *int64 { return &c.QueryBudgetBytes }),
	durationSetting("QueryQueueTimeout", "query_queue_timeout", "how long a query waits for its share of the query budget before ResourceExhausted",
		func(c *Config) *time.Duration { return &c.QueryQueueTimeout }),
	float64Setting("PrincipalRequestsPerSecond", "principal_requests_per_second", "requests per second one principal may make to this node, sustained (0 = no limit)",
		func(c *Config) *float64 { return &c.PrincipalRequestsPerSecond }),
	intSetting("PrincipalRequestBurst", "principal_request_burst", "requests one principal may make at once (0 = ceil of --principal-requests-per-second)",
		func(c *Config) *int { return &c.PrincipalRequestBurst }),
	intSetting("PrincipalMaxUploads", "principal_max_uploads", "file body writes (PUT, append) one principal may have in flight on this node (0 = no limit, -1 = 2 beyond loopback, none on loopback)",
		func(c *Config) *int { return &c.PrincipalMaxUploads }),
	intSetting("PrincipalMaxAdmissions", "principal_max_admissions", "requests under the memory budget (queries, diffs, listings, large MCP messages) one principal may have in flight on this node (0 = no limit, -1 = 8 beyond loopback, none on loopback)",
		func(c *Config) *int { return &c.PrincipalMaxAdmissions }),
	stringSetting("PresentationRoot", "presentation_root", `path prefix shown to agents; must contain "{agent}"`,
		func(c *Config) *string { return &c.PresentationRoot }),
	durationSetting("RaftSnapshotInterval", "raft_snapshot_interval", "how often shards check whether to snapshot",
		func(c *Config) *time.Duration { return &c.RaftSnapshotInterval }),
	uint64Setting("RaftSnapshotThreshold", "raft_snapshot_threshold", "log entries since the last snapshot that trigger a new one",
		func(c *Config) *uint64 { return &c.RaftSnapshotThreshold }),
	stringSetting("LogLevel", "log_level", "minimum log level: debug, info, warn, error",
		func(c *Config) *string { return &c.LogLevel }),
	stringSetting("LogFormat", "log_format", "log format: text or json",
		func(c *Config) *string { return &c.LogFormat }),
	boolSetting("AccessLog", "access_log", "log one line per HTTP request (method, route, status, bytes, duration, remote, request id; never bodies, query values or credentials)",
		func(c *Config) *bool { return &c.AccessLog }),
	durationSetting("ShutdownTimeout", "shutdown_timeout", "graceful shutdown deadline",
		func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
	stringSetting("Blob", "blob", "blob store: dir (DATA_DIR/blobs), dir://PATH, or s3://BUCKET[/PREFIX] (credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)",
		func(c *Config) *string { return &c.Blob }),
	stringSetting("S3Endpoint", "s3_endpoint", "object store URL for an s3:// blob store: http://host:port (no TLS) or https://host[:port]",
		func(c *Config) *string { return &c.S3Endpoint }),
	stringSetting("S3Region", "s3_region", "region S3 requests are signed for",
		func(c *Config) *string { return &c.S3Region }),
	boolSetting("S3CreateBucket", "s3_create_bucket", "create the s3:// bucket at start when missing (false: a missing bucket fails the start)",
		func(c *Config) *bool { return &c.S3CreateBucket }),
	boolSetting("S3DirectReads", "s3_direct_reads", "answer GET …?redirect of a one-segment uncompressed file with a 307 to a presigned object-store URL (clients must reach --s3-endpoint)",
		func(c *Config) *bool { return &c.S3DirectReads }),
	boolSetting("Cluster", "cluster", "run as a node of a replicated cluster (needs --blob s3://…, --etcd, --peer-listen)",
		func(c *Config) *bool { return &c.Cluster }),
	stringSetting("NodeID", "node_id", "cluster node id (default: the data directory's UUID)",
		func(c *Config) *string { return &c.NodeID }),
	stringSetting("PeerListen", "peer_listen", "peer (Raft and forwarding) listen address, host:port; non-loopback only with peer TLS",
		func(c *Config) *string { return &c.PeerListen }),
	stringSetting("AdvertiseClient", "advertise_client", "client URL advertised to other nodes (default: http(s)://<listen address>)",
		func(c *Config) *string { return &c.AdvertiseClient }),
	stringSetting("AdvertisePeer", "advertise_peer", "peer address advertised to other nodes, host:port (default: the peer listen address)",
		func(c *Config) *string { return &c.AdvertisePeer }),
	stringSetting("PeerSource", "peer_source", "IP address outbound peer connections originate from (default: chosen by route)",
		func(c *Config) *string { return &c.PeerSource }),
	stringSetting("Etcd", "etcd", "comma-separated etcd endpoints of the control plane",
		func(c *Config) *string { return &c.Etcd }),
	intSetting("Shards", "shards", "number of shards, used only when the cluster is first created (1..256)",
		func(c *Config) *int { return &c.Shards }),
	intSetting("Replication", "replication", "replicas per shard (1..9)",
		func(c *Config) *int { return &c.Replication }),
	stringSetting("PeerTLSCert", "peer_tls_cert", "PEM certificate of this node for peer mutual TLS",
		func(c *Config) *string { return &c.PeerTLSCert }),
	stringSetting("PeerTLSKey", "peer_tls_key", "PEM private key of this node for peer mutual TLS",
		func(c *Config) *string { return &c.PeerTLSKey }),
	stringSetting("PeerTLSCA", "peer_tls_ca", "PEM CA bundle that signs every node's peer certificate",
		func(c *Config) *string { return &c.PeerTLSCA }),
}, append(append(append(append(servingSettings, listenerSettings...), authSettings...), redactSettings...), append(append(openwopSettings, documentsSettings...), s3GatewaySettings...)...)...)

// settingType is how Config fields of one Go type are read from text and bound to a flag.
type settingType[T any] struct {
	// bind registers the flag: one of pflag's typed methods, such as (*pflag.FlagSet).Int.
	bind func(fs *pflag.FlagSet, name string, value T, usage string) *T
	// parse reads the text form; its error is replaced by rule.
	parse func(raw string) (T, error)
	// rule is the rule broken by text that does not parse.
	rule string
}

var (
	stringType = settingType[string]{(*pflag.FlagSet).String,
		func(raw string) (string, error) { return raw, nil }, ""}
	intType = settingType[int]{(*pflag.FlagSet).Int,
		func(raw string) (int, error) { return strconv.Atoi(strings.TrimSpace(raw)) }, "must be an integer"}
	int64Type = settingType[int64]{(*pflag.FlagSet).Int64,
		func(raw string) (int64, error) { return strconv.ParseInt(strings.TrimSpace(raw), 10, 64) }, "must be an integer"}
	uint64Type = settingType[uint64]{(*pflag.FlagSet).Uint64,
		func(raw string) (uint64, error) { return strconv.ParseUint(strings.TrimSpace(raw), 10, 64) }, "must be a non-negative integer"}
	float64Type = settingType[float64]{(*pflag.FlagSet).Float64,
		func(raw string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(raw), 64) }, "must be a number"}
	boolType = settingType[bool]{(*pflag.FlagSet).Bool,
		func(raw string) (bool, error) { return strconv.ParseBool(strings.TrimSpace(raw)) }, "must be true or false"}
	durationType = settingType[time.Duration]{(*pflag.FlagSet).Duration,
		func(raw string) (time.Duration, error) { return time.ParseDuration(strings.TrimSpace(raw)) },
		`must be a duration such as "90s", "2m" or "24h"`}
)

// typedSetting is the setting of the Config field of type T that p points at.
func typedSetting[T any](typ settingType[T], field, key, usage string, p func(*Config) *T) setting {
	return setting{field: field, key: key, usage: usage,
		register: func(fs *pflag.FlagSet, flag, usage string, d Config) { typ.bind(fs, flag, *p(&d), usage) },
		parse: func(c *Config, raw string) error {
			v, err := typ.parse(raw)
			if err != nil {
				return errors.New(typ.rule)
			}
			*p(c) = v
			return nil
		},
	}
}

func stringSetting(field, key, usage string, p func(*Config) *string) setting {
	return typedSetting(stringType, field, key, usage, p)
}

func intSetting(field, key, usage string, p func(*Config) *int) setting {
	return typedSetting(intType, field, key, usage, p)
}

func int64Setting(field, key, usage string, p func(*Config) *int64) setting {
	return typedSetting(int64Type, field, key, usage, p)
}

func uint64Setting(field, key, usage string, p func(*Config) *uint64) setting {
	return typedSetting(uint64Type, field, key, usage, p)
}

func float64Setting(field, key, usage string, p func(*Config) *float64) setting {
	return typedSetting(float64Type, field, key, usage, p)
}

func boolSetting(field, key, usage string, p func(*Config) *bool) setting {
	return typedSetting(boolType, field, key, usage, p)
}

func durationSetting(field, key, usage string, p func(*Config) *time.Duration) setting {
	return typedSetting(durationType, field, key, usage, p)
}

// BindFlags registers on fs one flag per Config field (defaults from DefaultConfig, the
// environment variable named in the help text) plus --config, the YAML file path. Call
// it once per flag set: pflag panics on a duplicate flag name.
func BindFlags(fs *pflag.FlagSet) {
	d := DefaultConfig()
	for _, s := range settings {
		s.register(fs, s.flag(), fmt.Sprintf("%s (env %s)", s.usage, s.env()), d)
	}
	fs.String(ConfigFlag, "", fmt.Sprintf("YAML configuration file (env %s)", ConfigEnv))
}

// LoadConfig fills a Config with precedence flags > environment (CAIRN_*) > YAML file >
// defaults, then validates it.
//
// fs must have been prepared by BindFlags and parsed; only flags the user actually set
// (fs.Changed) override, and a nil fs means no flags. getenv looks up environment
// variables (nil means os.Getenv); an empty variable counts as unset. The YAML file comes
// from --config, else CAIRN_CONFIG; none means no file. Its top level must be a mapping of
// the documented keys (unknown or repeated keys are errors naming the key; a null value
// counts as unset).
//
// Errors: a missing or unreadable file (wrapping the os error), malformed YAML, or one
// *ConfigError per bad value whose Source names the flag, variable or file line that
// supplied it (e.g. "CAIRN_LISTEN: --listen must be host:port (got "x")"). Text that does
// not parse fails even when a higher layer overrides it; range rules apply to the final
// value.
func LoadConfig(fs *pflag.FlagSet, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := DefaultConfig()
	source := make(map[string]string, len(settings)) // field → where its value came from

	path, pathSource := "", ""
	if v, ok := changedFlag(fs, ConfigFlag); ok {
		path, pathSource = v, "--"+ConfigFlag
	} else if v := getenv(ConfigEnv); v != "" {
		path, pathSource = v, ConfigEnv
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w", pathSource, err)
		}
		if err := applyYAML(&cfg, source, path, data); err != nil {
			return Config{}, err
		}
	}

	var errs []*ConfigError
	for _, s := range settings {
		raw := getenv(s.env())
		if raw == "" {
			continue
		}
		if err := s.parse(&cfg, raw); err != nil {
			errs = append(errs, &ConfigError{Source: s.env(), Field: s.field, Rule: err.Error(), Value: raw})
			continue
		}
		source[s.field] = s.env()
	}
	for _, s := range settings {
		raw, ok := changedFlag(fs, s.flag())
		if !ok {
			continue
		}
		if err := s.parse(&cfg, raw); err != nil {
			errs = append(errs, &ConfigError{Source: "--" + s.flag(), Field: s.field, Rule: err.Error(), Value: raw})
			continue
		}
		source[s.field] = "--" + s.flag()
	}
	if len(errs) > 0 {
		return Config{}, joinConfigErrors(errs)
	}

	errs = cfg.validate()
	for _, e := range errs {
		e.Source = source[e.Field]
	}
	if len(errs) > 0 {
		return Config{}, joinConfigErrors(errs)
	}
	return cfg, nil
}

// changedFlag returns the text of flag name if the user set it.
func changedFlag(fs *pflag.FlagSet, name string) (string, bool) {
	if fs == nil {
		return "", false
	}
	f := fs.Lookup(name)
	if f == nil || !f.Changed {
		return "", false
	}
	return f.Value.String(), true
}

// applyYAML applies the YAML document data (read from path) to cfg, recording the source
// of every field it sets.
func applyYAML(cfg *Config, source map[string]string, path string, data []byte) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file: nothing set
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return &ConfigError{Source: path, Rule: "must hold one YAML document (a second one would be ignored)"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return &ConfigError{Source: path, Rule: "must hold one YAML document"}
	}
	top := doc.Content[0]
	if top.Kind == yaml.ScalarNode && top.ShortTag() == "!!null" {
		return nil // a document holding only comments or "~"
	}
	if top.Kind != yaml.MappingNode {
		return &ConfigError{Source: fmt.Sprintf("%s:%d", path, top.Line), Rule: "top level must be a mapping of configuration keys"}
	}
	byKey := make(map[string]setting, len(settings))
	for _, s := range settings {
		byKey[s.key] = s
	}
	seen := make(map[string]bool)
	var errs []*ConfigError
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		where := fmt.Sprintf("%s:%d", path, k.Line)
		s, ok := byKey[k.Value]
		if k.Kind != yaml.ScalarNode || !ok {
			errs = append(errs, &ConfigError{Source: where, Rule: fmt.Sprintf("unknown key %q", k.Value)})
			continue
		}
		where = fmt.Sprintf("%s (%s)", where, s.key)
		if seen[s.key] {
			errs = append(errs, &ConfigError{Source: where, Rule: fmt.Sprintf("repeated key %q", s.key)})
			continue
		}
		seen[s.key] = true
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			continue
		}
		if v.Kind != yaml.ScalarNode {
			errs = append(errs, &ConfigError{Source: where, Field: s.field, Rule: "must be a single value, not a list or mapping"})
			continue
		}
		if err := s.parse(cfg, v.Value); err != nil {
			errs = append(errs, &ConfigError{Source: where, Field: s.field, Rule: err.Error(), Value: v.Value})
			continue
		}
		source[s.field] = where
	}
	return joinConfigErrors(errs)
}

func joinConfigErrors(errs []*ConfigError) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}
