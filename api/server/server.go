package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cairnstore/cairn/api/mcp"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/dir"
	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/worker"
)

// ErrDataDirLocked: another process uses the data directory.
var ErrDataDirLocked = errors.New("data directory is in use by another process")

// blobOpenTimeout bounds opening the blob store at start (for s3: reaching the endpoint,
// checking and perhaps creating the bucket, with retries), so that an unreachable object
// store fails the start instead of hanging it.
const blobOpenTimeout = 30 * time.Second

// Node is one running Cairn node (the embedded default: one shard, single voter).
type Node struct {
	cfg      ops.Config
	creds    ops.Credentials
	log      *slog.Logger
	lock     *flock.Flock
	blobs    blob.Store
	shard    *shard.Shard
	svc      *workbench.Service
	registry *prometheus.Registry
	handler  http.Handler
	rest     *rest.Handler
	admin    atomic.Pointer[adminServer] // while Serve runs
	health   *health
	// workers are the shard's leader workers, led from the replica's readiness (leader).
	workers *worker.Set
	leader  worker.Leadership
	// stopHealth ends the health checker; healthDone waits for it.
	stopHealth context.CancelFunc
	healthDone sync.WaitGroup
}

// Open locks cfg.DataDir and starts the node's storage and service; creds sign the
// requests of an s3:// blob store. ctx bounds the start (opening the blob store is also
// bounded by 30 s). It does not listen; call Serve for HTTP. The caller must Close the
// node.
//
// Errors: cfg's *ops.ConfigError, ErrDataDirLocked, and for an s3:// blob store
// s3.ErrBucketMissing (the bucket is absent and cfg.S3CreateBucket is false) or an
// *s3.ObjectUnavailableError (the object store cannot be reached or refuses the
// credentials), each wrapped with the endpoint and bucket for the operator.
func Open(ctx context.Context, cfg ops.Config, creds ops.Credentials, log *slog.Logger) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Cluster {
		return nil, errors.New("server: Open runs the embedded node; a cluster node is OpenCluster's (cairn serve --cluster)")
	}
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
	}
	lock := flock.New(filepath.Join(cfg.DataDir, "LOCK"))
	ok, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("data directory %s: lock: %w", cfg.DataDir, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w", cfg.DataDir, ErrDataDirLocked)
	}
	n := &Node{cfg: cfg, creds: creds, log: log, lock: lock}
	if err := n.open(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Node) open(ctx context.Context) error {
	cfg := n.cfg
	nodeID, err := readOrCreate(filepath.Join(cfg.DataDir, "node-id"), func() ([]byte, error) {
		return []byte(uuid.NewString()), nil
	})
	if err != nil {
		return err
	}
	cursorKey, err := readOrCreate(filepath.Join(cfg.DataDir, "cursor.key"), func() ([]byte, error) {
		k := make([]byte, 32)
		_, err := rand.Read(k)
		return k, err
	})
	if err != nil {
		return err
	}
	n.registry = prometheus.NewRegistry()
	n.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := n.openBlobs(ctx); err != nil {
		return err
	}
	n.shard, err = shard.Open(shard.Config{
		Dir:               filepath.Join(cfg.DataDir, "shards", "0"),
		NodeID:            strings.TrimSpace(string(nodeID)),
		FSM:               meta.Options{RetentionWindow: cfg.RetentionWindow, DedupeMaxPerRoot: cfg.DedupeMaxPerRoot, SnapshotGrace: cfg.SnapshotGrace},
		SnapshotInterval:  cfg.RaftSnapshotInterval,
		SnapshotThreshold: cfg.RaftSnapshotThreshold,
		Logger:            n.log,
		OnReady:           n.leader.OnReady,
	})
	if err != nil {
		return err
	}
	n.svc, err = workbench.New(n.shard, n.blobs, workbench.Config{InlineMaxBytes: cfg.InlineMaxBytes,
		MCPMaxPayloadBytes: cfg.MCPMaxPayloadBytes, PresentationRoot: cfg.PresentationRoot, CursorKey: cursorKey,
		RestoreBatch: cfg.RestoreBatch, GCGrace: cfg.GCGrace,
		QueryBudgetBytes: cfg.QueryBudgetBytes, QueryQueueTimeout: cfg.QueryQueueTimeout,
		MaxSnapshotsPerWorkbench: cfg.MaxSnapshotsPerWorkbench, MaxUploadDuration: cfg.MaxUploadDuration,
		Logger: n.log})
	if err != nil {
		return err
	}
	if err := n.svc.InstrumentGC(n.registry); err != nil {
		return err
	}
	if err := n.svc.InstrumentIntegrity(n.registry); err != nil {
		return err
	}
	if err := n.svc.InstrumentQueries(n.registry); err != nil {
		return err
	}
	if n.workers, err = worker.New(worker.Config{Blobs: n.blobs, GCInterval: cfg.GCInterval, GCGrace: cfg.GCGrace,
		InlineMaxBytes: cfg.InlineMaxBytes, Restorer: n.svc, Registerer: n.registry, Logger: n.log}); err != nil {
		return err
	}
	n.leader.Bind(n.workers, 0, n.shard)
	hctx, cancel := context.WithCancel(context.Background())
	n.stopHealth = cancel
	n.healthDone.Add(1)
	go func() { defer n.healthDone.Done(); n.health.run(hctx) }()
	n.registry.MustRegister(shardCollector{n.shard})
	n.rest = rest.NewHandler(n.svc, rest.Options{
		MCP:      mcp.Handler(n.svc, mcp.Options{MaxPayloadBytes: cfg.MCPMaxPayloadBytes}),
		Ready:    n.shard.Ready,
		Failing:  n.health.Failing,
		GC:       n.workers,
		Registry: n.registry,
		Logger:   n.log,

		BodyMinBytesPerSecond: cfg.BodyMinBytesPerSecond,
		BodyRateWindow:        cfg.BodyRateWindow,
		WriteTimeout:          cfg.WriteTimeout,
	})
	n.handler = n.rest
	return nil
}

// openBlobs opens the blob store cfg.Blob names and instruments it on the node's
// registry (cairn_blob_* metrics).
func (n *Node) openBlobs(ctx context.Context) error {
	target, err := n.cfg.BlobTarget()
	if err != nil {
		return err
	}
	var store blob.Store
	dirs := map[string]string{"data directory": n.cfg.DataDir}
	switch target.Kind {
	case ops.BlobDir:
		dirs["blob store"] = target.Dir
		ds, err := dir.Open(target.Dir)
		if err != nil {
			return fmt.Errorf("blob store %s: %w", n.cfg.Blob, err)
		}
		store = ds
	case ops.BlobS3:
		scheme := "http://"
		if target.Secure {
			scheme = "https://"
		}
		where := fmt.Sprintf("blob store %s at %s%s", n.cfg.Blob, scheme, target.Endpoint)
		if !n.creds.HasS3() {
			n.log.Warn("no S3 credentials: requests to the object store are anonymous (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", "blob", n.cfg.Blob)
		}
		sc := s3.DefaultConfig()
		sc.Endpoint = target.Endpoint
		sc.Secure = target.Secure
		sc.Bucket = target.Bucket
		sc.Prefix = target.Prefix
		sc.Region = target.Region
		sc.CreateBucket = target.CreateBucket
		sc.AccessKey = n.creds.S3AccessKey
		sc.SecretKey = n.creds.S3SecretKey
		// Multipart uploads in flight are noted here; a restart aborts a crash's leftovers.
		sc.UploadJournal = filepath.Join(n.cfg.DataDir, "s3-uploads")
		octx, cancel := context.WithTimeout(ctx, blobOpenTimeout)
		ss, err := s3.Open(octx, sc)
		cancel()
		switch {
		case errors.Is(err, s3.ErrBucketMissing):
			return fmt.Errorf("%s: bucket %q does not exist and --s3-create-bucket (CAIRN_S3_CREATE_BUCKET) is false: create it or allow Cairn to: %w", where, target.Bucket, err)
		case err != nil:
			return fmt.Errorf("%s: %w", where, err)
		}
		store = ss
	default:
		return fmt.Errorf("blob store %s: unknown kind %q", n.cfg.Blob, target.Kind)
	}
	// Every call has a deadline: a stalled store answers ObjectUnavailable (503), and the
	// readiness probe (health.go) reports it.
	store = blob.WithDeadline(store, n.cfg.BlobTimeout)
	n.health = &health{blobs: store, dirs: dirs, log: n.log}
	n.blobs, err = blob.Instrument(store, n.registry)
	if err != nil {
		store.Close()
		return err
	}
	return nil
}

// readOrCreate returns the contents of path, creating it (atomically, mode 0600) from
// make when it does not exist.
func readOrCreate(path string, make func() ([]byte, error)) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if b, err = make(); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return b, nil
}

// WaitReady blocks until the shard serves writes and linearizable reads.
func (n *Node) WaitReady(ctx context.Context) error { return n.shard.WaitReady(ctx) }

// Service returns the node's Workbench service.
func (n *Node) Service() *workbench.Service { return n.svc }

// Handler returns the node's HTTP handler.
func (n *Node) Handler() http.Handler { return n.handler }

// AdminHandler returns the node's admin handler (the admin listener's routes).
func (n *Node) AdminHandler() http.Handler { return n.rest.Admin() }

// AdminAddr returns the bound admin address while Serve runs (from before it calls
// ready), else nil.
func (n *Node) AdminAddr() net.Addr {
	if a := n.admin.Load(); a != nil {
		return a.Addr()
	}
	return nil
}

// Serve listens on cfg.Listen (tenant routes) and cfg.AdminAddress() (admin routes) and
// serves HTTP until ctx ends, then shuts down gracefully within cfg.ShutdownTimeout.
// ready, when non-nil, receives the bound client address once both listen (AdminAddr
// has the admin one).
func (n *Node) Serve(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := net.Listen("tcp", n.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", n.cfg.Listen, err)
	}
	admin, err := listenAdmin(n.cfg, "", n.rest.Admin(), n.log)
	if err != nil {
		ln.Close()
		return err
	}
	n.admin.Store(admin)
	defer n.admin.Store(nil)
	var d drainer
	srv := newHTTPServer(n.cfg, d.wrap(newGuard(n.cfg, "", n.handler)), n.log)
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(limitListener(ln, n.cfg)) }()
	select {
	case err := <-errc:
		sctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
		defer cancel()
		admin.shutdown(sctx)
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
	defer cancel()
	err = errors.Join(d.shutdown(sctx, srv), admin.shutdown(sctx))
	<-errc
	return err
}

// Close stops the node and releases the data directory.
func (n *Node) Close() error {
	var errs []error
	if n.workers != nil {
		errs = append(errs, n.workers.Close())
	}
	if n.stopHealth != nil {
		n.stopHealth()
		n.healthDone.Wait()
	}
	if n.shard != nil {
		errs = append(errs, n.shard.Close())
	}
	if n.blobs != nil {
		errs = append(errs, n.blobs.Close())
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Unlock())
	}
	return errors.Join(errs...)
}

// shardCollector exports the shard's Raft figures.
type shardCollector struct{ s *shard.Shard }

var (
	descApplied = prometheus.NewDesc("cairn_shard_applied_version", "Last shard version applied by the FSM.", []string{"shard"}, nil)
	descCommit  = prometheus.NewDesc("cairn_shard_commit_index", "Raft commit index.", []string{"shard"}, nil)
	descReady   = prometheus.NewDesc("cairn_shard_ready", "1 when the replica serves writes and linearizable reads.", []string{"shard"}, nil)
)

func (c shardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descApplied
	ch <- descCommit
	ch <- descReady
}

func (c shardCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ready := 0.0
	if st.Ready {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(descApplied, prometheus.GaugeValue, float64(st.AppliedVersion), "0")
	ch <- prometheus.MustNewConstMetric(descCommit, prometheus.GaugeValue, float64(st.CommitIndex), "0")
	ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, ready, "0")
}
