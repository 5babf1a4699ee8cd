package workbench

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/cache"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/worker"
)

// The defaults of the Service's settings, each declared here once (hashicorp/raft
// config.go style); Config.Default and the parts' Default methods apply them, and
// ops/config.go refers to them.
const (
	// DefaultMCPMaxPayloadBytes is Config.MCPMaxPayloadBytes's default: 16 MiB.
	DefaultMCPMaxPayloadBytes = 16 << 20
	// DefaultPresentationRoot is Config.PresentationRoot's default.
	DefaultPresentationRoot = "/agents/{agent}/wb"
	// DefaultUploadConcurrency is Config.UploadConcurrency's default.
	DefaultUploadConcurrency = 2
	// DefaultMaxConcurrentIngests is Config.MaxConcurrentIngests's default.
	DefaultMaxConcurrentIngests = 4
	// DefaultMaxConcurrentLoads is Config.MaxConcurrentLoads's default.
	DefaultMaxConcurrentLoads = 4
	// DefaultMaxConcurrentPrefetches is Config.MaxConcurrentPrefetches's default.
	DefaultMaxConcurrentPrefetches = 4
	// DefaultMaxReadBufferBytes is Config.MaxReadBufferBytes's default: 16 reads each
	// holding a segment of the longest size at once.
	DefaultMaxReadBufferBytes = 256 << 20
	// DefaultGCGrace is Config.GCGrace's default: the collector's (shard/worker), declared
	// there once, since an upload must end before the collector may take its blobs.
	DefaultGCGrace = worker.DefaultGCGrace
	// DefaultQueryBudgetBytes is Config.QueryBudgetBytes's default: 512 MiB.
	DefaultQueryBudgetBytes = 512 << 20
	// DefaultQueryQueueTimeout is Config.QueryQueueTimeout's default.
	DefaultQueryQueueTimeout = 5 * time.Second
	// DefaultIngestQueueTimeout is Config.IngestQueueTimeout's default.
	DefaultIngestQueueTimeout = 30 * time.Second
	// DefaultDirectReadExpiry is how long a direct-read URL stays valid by default
	// (Config.DirectReadExpiry).
	DefaultDirectReadExpiry = 5 * time.Minute
	// DefaultRestoreBatch is how many files one bounded restore command stages
	// (LifecycleConfig.RestoreBatch).
	DefaultRestoreBatch = 1024
	// DefaultMaxSnapshotsPerWorkbench is the default cap on the snapshots of one
	// workbench that hold history (alive, or expired and still renewable),
	// LifecycleConfig.MaxSnapshotsPerWorkbench.
	DefaultMaxSnapshotsPerWorkbench = 256
	// DefaultMaxRunSnapshotsPerWorkbench is the default cap on the held snapshots of
	// OpenWOP runs of one workbench, LifecycleConfig.MaxRunSnapshotsPerWorkbench.
	DefaultMaxRunSnapshotsPerWorkbench = 256
)

// Config is the Service's input: the settings of the shared state (every part reads them
// through base) and, mapped into their own configurations, the parts' (LifecycleConfig,
// ReviewConfig). A zero field takes its default (Default); Validate checks the result.
type Config struct {
	// InlineMaxBytes: bodies (and appended segments) up to this many bytes are stored in
	// the metadata record, not the object store. Default 4096; 0 stores every body in the
	// object store.
	InlineMaxBytes int64
	// MCPMaxPayloadBytes caps decoded MCP payloads and the bodies edit and structured reads
	// load into memory. Default 16 MiB.
	MCPMaxPayloadBytes int64
	// PresentationRoot is the path prefix shown to agents; "{agent}" is replaced by the
	// agent id. Default "/agents/{agent}/wb".
	PresentationRoot string
	// CursorKey signs cursors (HMAC-SHA256). Required: at least 16 bytes.
	CursorKey []byte
	// UploadConcurrency is how many segments of one body upload at once. Default 2.
	UploadConcurrency int
	// MaxConcurrentIngests bounds the memory of the bodies above the inline threshold that
	// are cut and uploaded at once, node-wide, in slots; further writers wait their turn,
	// first come first served, at most IngestQueueTimeout. A slot is what one body of any
	// length may hold: up to blob.SingleSegmentMaxBytes + blob.ChunkMaxBytes of buffers
	// plus UploadConcurrency segments in flight. A body weighs what it holds: the pooled
	// buffer of its length when declared and at most blob.SingleSegmentMaxBytes, else a slot
	// (ingest_budget.go). A body read from the network takes its weight when its first
	// bytes come, and keeps it until its ingest ends (ingest_gate.go). Default 4.
	MaxConcurrentIngests int
	// IngestQueueTimeout is how long an upload waits for its weight of the ingest budget
	// before it is answered ResourceExhausted (retryable, details.limit "ingest_budget").
	// Default DefaultIngestQueueTimeout (30s).
	IngestQueueTimeout time.Duration
	// MaxConcurrentLoads bounds the whole bodies loaded into memory at once for edit and
	// structured reads (each up to MCPMaxPayloadBytes plus its decoded form). Default 4.
	MaxConcurrentLoads int
	// MaxConcurrentPrefetches bounds the segments read ahead at once, node-wide, while
	// large bodies stream (each up to blob.ChunkMaxBytes in memory). Default 4.
	MaxConcurrentPrefetches int
	// MaxReadBufferBytes bounds the bytes of verified object-store segments all reads of
	// the node hold at once (integrity.go: a read holds the part of one segment it serves,
	// at most blob.ChunkMaxBytes, until every byte of it is out, plus its read-ahead). A
	// read waits while the budget is spent; read-ahead is skipped. Default
	// DefaultMaxReadBufferBytes (256 MiB); at least blob.ChunkMaxBytes.
	MaxReadBufferBytes int64
	// RestoreBatch is how many files one bounded restore command stages (1..4096).
	// Default DefaultRestoreBatch.
	RestoreBatch int
	// GCGrace is the garbage collector's grace period (shard/worker's Config.GCGrace must
	// be the same): ingests are bounded below it (MaxUploadDuration). Default
	// DefaultGCGrace (1h).
	GCGrace time.Duration
	// Logger receives the adapter's own reports (stored data failing verification,
	// integrity.go). Default slog.Default().
	Logger *slog.Logger
	// QueryBudgetBytes is the node's memory budget, in bytes: what the requests whose
	// answer grows with their input (queries, greps, diffs, file, history and proposal
	// listings, state-diff pages, and through AdmitMemory the surfaces' large bodies and
	// listings and backups) running at once on this node may hold
	// together, by their estimates (admission.go). Default DefaultQueryBudgetBytes (512 MiB).
	QueryBudgetBytes int64
	// QueryQueueTimeout is how long a query waits for its share of the budget before it
	// is answered ResourceExhausted. Default DefaultQueryQueueTimeout (5s).
	QueryQueueTimeout time.Duration
	// MaxUploadDuration bounds how long one body's ingest (reading, cutting and uploading
	// it) may take; a slower one fails with ResourceExhausted before it publishes. It must
	// be less than GCGrace: the orphan sweeper deletes uploaded blobs that stayed
	// unpublished longer than the grace (docs/architecture.md#the-read-path and
	// #blob-storage-and-garbage-collection). Default GCGrace / 2.
	MaxUploadDuration time.Duration
	// SegmentCache is the node's local cache of verified segments (blob/cache,
	// docs/architecture.md#the-read-path): reads are served from it when it holds a segment (REST GET by sendfile) and
	// fill it with whole segments they fetched and verified; writes fill it with the
	// segments they upload. nil (the default): no cache.
	SegmentCache *cache.Cache
	// DirectReads, when set, lets a reader fetch a one-segment body straight from the
	// object store through a presigned URL (File.DirectURL, REST `?redirect`), for
	// clients that can reach the store. nil (the default): every read goes through the
	// node.
	DirectReads blob.Presigner
	// DirectReadExpiry is how long a direct-read URL stays valid. Default 5m.
	DirectReadExpiry time.Duration
	// MaxSnapshotsPerWorkbench caps the snapshots of one workbench that hold history
	// (alive, or expired and still renewable); minting one more is ResourceExhausted.
	// Default DefaultMaxSnapshotsPerWorkbench (256).
	MaxSnapshotsPerWorkbench int
	// MaxRunSnapshotsPerWorkbench caps the snapshots of OpenWOP runs (RunSnapshot) one
	// workbench holds, apart from MaxSnapshotsPerWorkbench: runs never use up the
	// workbench's own snapshots. Default DefaultMaxRunSnapshotsPerWorkbench (256).
	MaxRunSnapshotsPerWorkbench int
	// Limits caps each principal's request rate and concurrent uploads on this node
	// (limits.go). Default: no caps.
	Limits PrincipalLimits
	// ReservedWorkbenches maps a workbench name to the only surface (WithSurface) that may
	// change its files or delete it, in every agent root: a surface that keeps its own
	// records in a workbench and judges every write to it (the OpenWOP facade's installed
	// packs). The surface speaks as itself or as one of its operations ("s3/UploadPart" is
	// the surface "s3"). Through any other surface such a command is PermissionDenied; reads, snapshots
	// and the node's own work are not affected. Default none.
	ReservedWorkbenches map[string]string
	// RequireDistinctReviewer refuses a decision on a proposal, accept or reject, by a
	// principal that authored it (its proposer): PermissionDenied (403) with
	// details.reason ReasonSelfReview, on every surface that decides (proposals.go).
	// Default false: a principal with the review scope may decide its own proposals.
	RequireDistinctReviewer bool
	// Redactor rewrites the bodies of writes and appends before they are stored
	// (redact.go: secret redaction for the tenants that opted in). nil (the default):
	// bodies are stored as sent.
	Redactor BodyRedactor
}

// Default fills every zero field with its default, the parts' through their own Default.
func (c *Config) Default() {
	if c.MCPMaxPayloadBytes <= 0 {
		c.MCPMaxPayloadBytes = DefaultMCPMaxPayloadBytes
	}
	if c.PresentationRoot == "" {
		c.PresentationRoot = DefaultPresentationRoot
	}
	if c.UploadConcurrency <= 0 {
		c.UploadConcurrency = DefaultUploadConcurrency
	}
	if c.MaxConcurrentIngests <= 0 {
		c.MaxConcurrentIngests = DefaultMaxConcurrentIngests
	}
	if c.MaxConcurrentLoads <= 0 {
		c.MaxConcurrentLoads = DefaultMaxConcurrentLoads
	}
	if c.MaxConcurrentPrefetches <= 0 {
		c.MaxConcurrentPrefetches = DefaultMaxConcurrentPrefetches
	}
	if c.MaxReadBufferBytes <= 0 {
		c.MaxReadBufferBytes = DefaultMaxReadBufferBytes
	}
	if c.GCGrace <= 0 {
		c.GCGrace = DefaultGCGrace
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxUploadDuration <= 0 {
		c.MaxUploadDuration = c.GCGrace / 2
	}
	if c.QueryBudgetBytes <= 0 {
		c.QueryBudgetBytes = DefaultQueryBudgetBytes
	}
	if c.QueryQueueTimeout <= 0 {
		c.QueryQueueTimeout = DefaultQueryQueueTimeout
	}
	if c.IngestQueueTimeout <= 0 {
		c.IngestQueueTimeout = DefaultIngestQueueTimeout
	}
	if c.DirectReadExpiry <= 0 {
		c.DirectReadExpiry = DefaultDirectReadExpiry
	}
	lc := c.lifecycle()
	lc.Default()
	c.RestoreBatch, c.MaxSnapshotsPerWorkbench, c.MaxRunSnapshotsPerWorkbench = lc.RestoreBatch, lc.MaxSnapshotsPerWorkbench, lc.MaxRunSnapshotsPerWorkbench
}

// Validate reports the first setting out of its range, naming it; call it after Default.
func (c Config) Validate() error {
	if c.MaxReadBufferBytes < blob.ChunkMaxBytes {
		return fmt.Errorf("workbench: MaxReadBufferBytes %d is below one segment (blob.ChunkMaxBytes, %d)", c.MaxReadBufferBytes, blob.ChunkMaxBytes)
	}
	if c.MaxUploadDuration >= c.GCGrace {
		return fmt.Errorf("workbench: MaxUploadDuration %s must be less than GCGrace %s", c.MaxUploadDuration, c.GCGrace)
	}
	if err := c.lifecycle().Validate(); err != nil {
		return err
	}
	if c.InlineMaxBytes < 0 || c.InlineMaxBytes > meta.MaxInlineSegmentBytes {
		return fmt.Errorf("workbench: InlineMaxBytes %d out of range 0..%d", c.InlineMaxBytes, meta.MaxInlineSegmentBytes)
	}
	if len(c.CursorKey) < 16 {
		return errors.New("workbench: CursorKey must be at least 16 bytes")
	}
	return c.Limits.validate()
}

// lifecycle is the part of c that configures Lifecycle.
func (c Config) lifecycle() LifecycleConfig {
	return LifecycleConfig{RestoreBatch: c.RestoreBatch, MaxSnapshotsPerWorkbench: c.MaxSnapshotsPerWorkbench,
		MaxRunSnapshotsPerWorkbench: c.MaxRunSnapshotsPerWorkbench}
}

// review is the part of c that configures Review.
func (c Config) review() ReviewConfig {
	return ReviewConfig{RequireDistinctReviewer: c.RequireDistinctReviewer}
}

// LifecycleConfig tunes Lifecycle; Config carries the same fields (see there) and maps
// into it.
type LifecycleConfig struct {
	// RestoreBatch is how many files one bounded restore command stages
	// (1..meta.MaxRestoreBatch). Default DefaultRestoreBatch.
	RestoreBatch int
	// MaxSnapshotsPerWorkbench caps a workbench's snapshots that hold history. Default
	// DefaultMaxSnapshotsPerWorkbench.
	MaxSnapshotsPerWorkbench int
	// MaxRunSnapshotsPerWorkbench caps a workbench's OpenWOP run snapshots. Default
	// DefaultMaxRunSnapshotsPerWorkbench.
	MaxRunSnapshotsPerWorkbench int
}

// Default fills every zero field with its default.
func (c *LifecycleConfig) Default() {
	if c.RestoreBatch <= 0 {
		c.RestoreBatch = DefaultRestoreBatch
	}
	if c.MaxSnapshotsPerWorkbench <= 0 {
		c.MaxSnapshotsPerWorkbench = DefaultMaxSnapshotsPerWorkbench
	}
	if c.MaxRunSnapshotsPerWorkbench <= 0 {
		c.MaxRunSnapshotsPerWorkbench = DefaultMaxRunSnapshotsPerWorkbench
	}
}

// Validate reports a setting out of its range; call it after Default.
func (c LifecycleConfig) Validate() error {
	if c.RestoreBatch < 1 || c.RestoreBatch > meta.MaxRestoreBatch {
		return fmt.Errorf("workbench: RestoreBatch %d out of range 1..%d", c.RestoreBatch, meta.MaxRestoreBatch)
	}
	return nil
}

// ReviewConfig tunes Review; Config carries the same field and maps into it. Its zero
// value is its default, and every value is valid.
type ReviewConfig struct {
	// RequireDistinctReviewer refuses a decision by a proposal's own proposer (see
	// Config.RequireDistinctReviewer). Default false.
	RequireDistinctReviewer bool
}
