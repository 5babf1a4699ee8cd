package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
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

	"github.com/gofrs/flock"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/api/console"
	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/api/mcp"
	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/api/s3"
	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/cache"
	"github.com/cairnstore/cairn/internal/durable"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/ops/backup"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/host"
	"github.com/cairnstore/cairn/shard/mux"
	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/redact"
)

// reservedWorkbenches are the workbenches only one surface writes (workbench.Config.ReservedWorkbenches):
// the OpenWOP facade's packs of a tenant, the working documents of every workspace of a
// root, and the S3 gateway's multipart uploads of every bucket of a root. No key is bound
// to one of them: such a binding would reach the records of every workspace the surface
// keeps there.
var reservedWorkbenches = map[string]string{openwop.PacksWorkbench: openwop.Surface, documents.Workbench: documents.Surface,
	s3.UploadsWorkbench: s3.Surface}

// ErrDataDirLocked: another process uses the data directory.
var ErrDataDirLocked = errors.New("data directory is in use by another process")

// Node is one running Cairn node: the embedded default (one shard, a single voter) or a
// node of a replicated cluster (Config.Cluster). Both are a shard host with the same
// surfaces and workers on top.
type Node struct {
	cfg    ops.Config
	creds  ops.Credentials
	log    *slog.Logger
	lock   *flock.Flock
	nodeID string
	docs   *documents.Handler // the working-documents surface (Documents)
	blobs  blob.Store
	// directReads presigns direct reads (--s3-direct-reads); nil when off.
	directReads blob.Presigner
	host        *host.Host
	svc         *workbench.Service
	registry    *prometheus.Registry
	rest        *rest.Handler
	keys        auth.Store   // the API keys: the data directory's file, or the cluster's etcd
	handler     http.Handler // the client port: authentication, then routing in front of REST/MCP
	adminH      http.Handler // the admin port: authentication in front of the admin routes
	health      *health
	tls         *tls.Config // the client and admin listeners' (nil: plain HTTP)
	redactor    *redact.Redactor

	// Cluster mode only: the client port is bound at open (the registry publishes its
	// address; clientLn has its connection caps), and served by starting until Serve
	// takes it over (starting.go); the peer port and the etcd client are the node's.
	clientLn     net.Listener
	starting     *startingServer
	clientURL    string
	peer         *mux.Mux
	etcd         *clientv3.Client
	controlPlane *control.Plane

	admin atomic.Pointer[sideServer] // while Serve runs
	// s3 is the S3 gateway's listener while Serve runs (nil when --s3-listen is unset).
	s3  atomic.Pointer[sideServer]
	s3H http.Handler // the S3 gateway (api/s3), nil when off
	// s3Gateway serves S3 requests here, from the listener or forwarded by peers (nil
	// when neither); Serve runs its sweep of abandoned multipart uploads.
	s3Gateway *s3.Handler
	// workers are the leader-only workers of the replicas here, led and unled from the
	// host's leadership reports (the same in both modes).
	workers atomic.Pointer[worker.Set]
	// stopHealth ends the health checker; healthDone waits for it.
	stopHealth context.CancelFunc
	healthDone sync.WaitGroup
}

// Open locks cfg.DataDir and starts the node: its blob store, its shard host (the
// embedded default's one replica, or for cfg.Cluster the cluster membership in etcd and
// the replicas the control plane assigns), the Workbench service and the background
// workers; creds sign the requests of an s3:// blob store. ctx bounds the start. A
// cluster node binds its client and peer ports here (the registry publishes them), and
// until Serve its client port answers at once that the node is starting (starting.go);
// the embedded node listens only in Serve. The caller must Close the node.
//
// Errors: cfg's *ops.ConfigError (also a TLS file that does not load, a data directory
// this process cannot write, a setting that contradicts the cluster, or a node id bound
// to another data directory), ErrDataDirLocked, backup.ErrRestoreIncomplete (a restore
// into cfg.DataDir did not finish), ErrStorageDamaged, and for an
// s3:// blob store ErrBucketMissing or ErrObjectStoreUnavailable, each wrapped with what
// the operator needs (endpoint, bucket, file).
func Open(ctx context.Context, cfg ops.Config, creds ops.Credentials, log *slog.Logger) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.CheckTLSFiles(); err != nil {
		return nil, err
	}
	if err := ops.CheckDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	lock, err := lockDataDir(ctx, cfg.DataDir, "")
	if err != nil {
		return nil, err
	}
	// A restore cut off leaves its marker: the directory is no node yet, and writing a
	// node-id here would keep the restore from being run again (ops/backup/marker.go).
	if err := backup.CheckRestoreMarker(cfg.DataDir); err != nil {
		lock.Unlock()
		return nil, err
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
	instance, err := readOrCreate(filepath.Join(cfg.DataDir, "node-id"), func() ([]byte, error) {
		return []byte(uuid.NewString()), nil
	})
	if err != nil {
		return err
	}
	n.nodeID = strings.TrimSpace(string(instance))
	if n.tls, err = serverTLS(cfg, n.log); err != nil {
		return err
	}
	if n.redactor, err = openRedactor(cfg); err != nil {
		return err
	}
	n.registry = prometheus.NewRegistry()
	n.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := n.openBlobs(ctx); err != nil {
		return err
	}
	hcfg := host.Config{
		DataDir: cfg.DataDir,
		NodeID:  n.nodeID,
		FSM: meta.Options{RetentionWindow: cfg.RetentionWindow, DedupeMaxPerRoot: cfg.DedupeMaxPerRoot, SnapshotGrace: cfg.SnapshotGrace,
			History: cfg.History()},
		SnapshotInterval:  cfg.RaftSnapshotInterval,
		SnapshotThreshold: cfg.RaftSnapshotThreshold,
		Logger:            n.log,
		OnLeadership:      n.lead,
	}
	hcfg.FSM.FeedRetention, hcfg.FSM.FeedMaxPerRoot = cfg.FeedRetention, cfg.FeedMaxPerRoot // meta/feed.go
	var cursorKey []byte
	if cfg.Cluster {
		if hcfg.Cluster, err = n.openClusterParts(ctx, strings.TrimSpace(string(instance))); err != nil {
			return err
		}
		hcfg.NodeID = n.nodeID // openClusterParts applied --node-id
	} else {
		if cursorKey, err = readOrCreate(filepath.Join(cfg.DataDir, "cursor.key"), func() ([]byte, error) {
			k := make([]byte, 32)
			_, err := rand.Read(k)
			return k, err
		}); err != nil {
			return err
		}
	}
	if n.host, err = host.Open(ctx, hcfg); err != nil {
		return n.hostError(err)
	}
	if cfg.Cluster {
		sctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
		cursorKey, err = n.host.ClusterCursorKey(sctx)
		cancel()
		if err != nil {
			return fmt.Errorf("etcd %s: cursor key: %w", cfg.Etcd, err)
		}
	}
	var segCache *cache.Cache
	if cfg.CacheMaxBytes > 0 {
		if segCache, err = cache.Open(cfg.SegmentCacheDir(), cfg.CacheMaxBytes, n.log); err != nil {
			return fmt.Errorf("segment cache (--cache-dir %s): %w", cfg.SegmentCacheDir(), err)
		}
		if err := segCache.Register(n.registry); err != nil {
			return err
		}
	}
	n.svc, err = workbench.NewWithCores(hostCores{n.host}, n.blobs, workbench.Config{InlineMaxBytes: cfg.InlineMaxBytes,
		MCPMaxPayloadBytes: cfg.MCPMaxPayloadBytes, PresentationRoot: cfg.PresentationRoot, CursorKey: cursorKey,
		RestoreBatch: cfg.RestoreBatch, GCGrace: cfg.GCGrace,
		QueryBudgetBytes: cfg.QueryBudgetBytes, QueryQueueTimeout: cfg.QueryQueueTimeout,
		MaxSnapshotsPerWorkbench: cfg.MaxSnapshotsPerWorkbench, MaxUploadDuration: cfg.MaxUploadDuration,
		Limits: workbench.PrincipalLimits{RequestsPerSecond: cfg.PrincipalRequestsPerSecond, RequestBurst: cfg.PrincipalRequestBurst,
			MaxConcurrentUploads: cfg.EffectivePrincipalMaxUploads(), MaxConcurrentAdmissions: cfg.EffectivePrincipalMaxAdmissions()},
		SegmentCache: segCache, DirectReads: n.directReads, Logger: n.log, Redactor: n.redactor,
		RequireDistinctReviewer: cfg.RequireDistinctReviewer, ReservedWorkbenches: reservedWorkbenches})
	if err != nil {
		return err
	}
	if err := n.svc.Instrument(n.registry); err != nil {
		return err
	}
	workers, err := worker.New(worker.Config{Blobs: n.blobs, GCInterval: cfg.GCInterval, GCGrace: cfg.GCGrace,
		GCMaxBatch: cfg.GCMaxBatch, InlineMaxBytes: cfg.InlineMaxBytes, Restorer: n.svc.Lifecycle, Registerer: n.registry, Logger: n.log})
	if err != nil {
		return err
	}
	n.workers.Store(workers)
	// Replicas that became leaders before the workers existed are led now.
	n.host.Reannounce()
	n.registry.MustRegister(n.host.Collector())
	if n.keys, err = n.openNodeKeys(ctx); err != nil {
		return err
	}
	n.svc.Attempts.MintKeysWith(minter{n.keys}) // a fork's mint_key (mint.go)
	adminRoutes := keyRoutes(n.keys)
	// Every node serves the shard recovery route; an embedded node answers 404 (recover.go).
	adminRoutes[ShardRecoveryPath] = http.HandlerFunc(n.serveShardRecovery)
	var gateway *s3.Handler // a cluster node serves the S3 requests other nodes forward, listener or not (route_s3.go)
	if cfg.S3Gateway.Listen != "" || cfg.Cluster {
		gateway = s3.NewHandler(n.svc, auth.S3Keys{Store: n.keys}, s3.Config{Region: cfg.S3Gateway.Region, Logger: n.log,
			BodyMinBytesPerSecond: cfg.BodyMinBytesPerSecond, BodyRateWindow: cfg.BodyRateWindow, WriteTimeout: cfg.WriteTimeout,
			Instance: n.nodeID})
	}
	n.s3Gateway = gateway
	switch {
	case cfg.S3Gateway.Listen != "" && cfg.Cluster:
		n.s3H = newS3Router(n.host, gateway)
	case cfg.S3Gateway.Listen != "":
		n.s3H = gateway
	}
	if cfg.Cluster {
		adminRoutes[ClusterStatusPath] = http.HandlerFunc(n.serveStatus)
		adminRoutes[LeavingPath] = http.HandlerFunc(n.serveLeaving)
		adminRoutes[RebalancePath] = http.HandlerFunc(n.serveRebalance)
	}
	mcpMetrics, err := mcp.NewMetrics(n.registry)
	if err != nil {
		return err
	}
	var accessLog *slog.Logger
	if cfg.AccessLog {
		accessLog = n.log.With("log", "access")
	}
	docsCaller := &lateDocuments{} // the cairn MCP profile's working-documents tools, once the surface exists (below)
	n.rest = rest.NewHandler(n.svc, rest.Options{
		MCP: mcp.Handler(n.svc, mcp.Options{MaxPayloadBytes: cfg.MCPMaxPayloadBytes, Metrics: mcpMetrics, Logger: n.log,
			Documents: docsCaller}),
		Ready:    n.ready,
		Failing:  n.health.Failing,
		GC:       workers,
		Scrub:    workers,
		Backups:  n,
		Shards:   n.shardGrower(),
		Moves:    n.rootMover(),
		Registry: n.registry,
		Logger:   n.log,

		AccessLog:             accessLog,
		BodyMinBytesPerSecond: cfg.BodyMinBytesPerSecond,
		BodyRateWindow:        cfg.BodyRateWindow,
		WriteTimeout:          cfg.WriteTimeout,

		AdminRoutes: adminRoutes,
	})
	wopOpts, err := openwopOptions(cfg, n.redactor, n.log)
	if err != nil {
		return err
	}
	facade := openwop.New(n.svc, wopOpts, n.rest)                                                      // OpenWOP's routes, then REST's and MCP's
	docs, err := documents.New(DocumentStore{Svc: n.svc}, documentsOptions(cfg, n.svc, n.log), facade) // working documents first
	if err != nil {
		return err
	}
	docsCaller.h, n.docs = docs, docs
	observed := n.rest.Observe(surfaceRoute, docs) // both surfaces' requests in the metrics and the access log
	var tenant http.Handler = observed
	if cfg.Cluster {
		tenant = newRouter(n.host, observed, func(r *http.Request) (string, bool) {
			if documents.Owns(r.URL.EscapedPath()) {
				return docs.Root(r)
			}
			return facade.Root(r)
		})
		peer := peerSurfaces{node: n.nodeID, s3: gateway,
			admin: &peerAuthn{keys: n.keys, required: cfg.AdminAuthRequired(), next: peerAdmin{next: n.rest.Admin()}},
			rest:  &peerAuthn{keys: n.keys, required: cfg.AuthRequired(), next: servedHere(n.nodeID, docs)}}
		if err := n.host.ServePeer(peer); err != nil {
			return err
		}
	}
	n.handler = &authn{keys: n.keys, required: cfg.AuthRequired(), metricsKey: cfg.MetricsRequireKey,
		beyondLoopback: cfg.ClientBeyondLoopback(), log: n.log, next: mintRoute{keys: n.keys, next: console.New(docs, facade, tenant)}} // key minting and the web console at /ui/, this node's own
	admin := n.rest.Admin()
	if cfg.Cluster {
		admin = newAdminRouter(n.host, admin)
	}
	n.adminH = &authn{keys: n.keys, required: cfg.AdminAuthRequired(), metricsKey: cfg.MetricsRequireKey,
		beyondLoopback: cfg.AdminBeyondLoopback(), admin: true, log: n.log, next: admin}
	n.health.sample = n.sampleBlobs
	hctx, cancel := context.WithCancel(context.Background())
	n.stopHealth = cancel
	n.healthDone.Add(1)
	go func() { defer n.healthDone.Done(); n.health.run(hctx) }()
	return nil
}

// lead starts or stops the leader-only workers of shard id as the host reports its local
// replica's leadership. Reports that come before the workers exist are repeated once they
// do (host.Reannounce).
func (n *Node) lead(id int, r *shard.Shard, leads bool) {
	w := n.workers.Load()
	switch {
	case w == nil:
	case leads:
		w.Lead(id, r)
	default:
		w.Unlead(id)
	}
}

// ready reports whether the node serves: the embedded default once its shard is the
// ready leader; a cluster node while it is not shutting down (it forwards what it does
// not lead).
func (n *Node) ready() bool {
	if n.host.Embedded() {
		r := n.host.Replica(host.EmbeddedShard)
		return r != nil && r.Ready()
	}
	return !n.host.Closing()
}

// hostCores serves the Workbench service's roots through the shard host.
type hostCores struct{ h *host.Host }

func (c hostCores) For(_ context.Context, agent string) (workbench.Core, error) {
	return c.h.For(agent)
}

// readOrCreate returns the contents of path, creating it (atomically, mode 0600) from
// make when it does not exist (durably: a power loss never leaves it empty).
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
	if err := durable.WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	return b, nil
}

// NodeID returns this node's id (its Raft server id).
func (n *Node) NodeID() string { return n.nodeID }

// WaitReady blocks until the node serves: the embedded default until its shard serves
// writes and linearizable reads; a cluster node returns at once (requests for a shard
// without a leader yet answer a retryable RoutingUnavailable).
func (n *Node) WaitReady(ctx context.Context) error { return n.host.WaitReady(ctx) }

// Service returns the node's Workbench service.
func (n *Node) Service() *workbench.Service { return n.svc }

// Documents returns the node's working-documents surface, which serves the cairn MCP
// profile's documents tools in process (`cairn mcp --profile cairn` on a data directory).
func (n *Node) Documents() *documents.Handler { return n.docs }

// Handler returns the node's client-port HTTP handler.
func (n *Node) Handler() http.Handler { return n.handler }

// AdminHandler returns the node's admin handler (the admin listener's routes).
func (n *Node) AdminHandler() http.Handler { return n.adminH }

// AdminAddr returns the bound admin address while Serve runs (from before it calls
// ready), else nil.
func (n *Node) AdminAddr() net.Addr {
	if a := n.admin.Load(); a != nil {
		return a.Addr()
	}
	return nil
}

// S3Addr is the bound address of the S3 gateway while Serve runs (nil when it is off).
func (n *Node) S3Addr() net.Addr {
	if a := n.s3.Load(); a != nil {
		return a.Addr()
	}
	return nil
}

// Serve listens on cfg.Listen (tenant routes; a cluster node bound it at Open, and takes
// it over from the starting server without closing it: starting.go) and
// cfg.AdminAddress() (admin routes) and serves HTTP until ctx ends, over TLS on both
// with cfg.TLS() (the certificate re-read when its files change; mutual TLS with
// cfg.TLSClientCA). A plain-HTTP listener beyond loopback (cfg.InsecurePlaintext) is
// logged as a warning first. When ctx ends, a cluster node hands the leadership of
// every shard it leads to another voter (within half of cfg.ShutdownTimeout), and the
// node drains its connections, all within cfg.ShutdownTimeout. ready, when non-nil, receives the bound client address once both
// listen (AdminAddr has the admin one).
func (n *Node) Serve(ctx context.Context, ready func(addr net.Addr)) error {
	ln := n.clientLn
	if ln == nil {
		tcp, err := net.Listen("tcp", n.cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen %s: %w", n.cfg.Listen, err)
		}
		ln = limitListener(tcp, n.cfg)
	}
	warnPlaintext(n.cfg, n.log)
	admin, err := listenAdmin(n.cfg, n.tls, n.clientURL, n.adminH, n.log)
	if err != nil {
		ln.Close()
		return err
	}
	n.admin.Store(admin)
	defer n.admin.Store(nil)
	if n.s3Gateway != nil {
		// Abandoned multipart uploads are aborted while the gateway serves.
		rctx, stopReclaim := context.WithCancel(ctx)
		reclaimDone := make(chan struct{})
		go func() { defer close(reclaimDone); n.s3Gateway.RunReclaim(rctx) }()
		defer func() { stopReclaim(); <-reclaimDone }()
	}
	var s3srv *sideServer
	if n.s3H != nil {
		if s3srv, err = listenS3(n.cfg, n.tls, n.s3H, n.log); err != nil {
			ln.Close()
			_ = admin.shutdown(context.Background())
			return err
		}
		n.s3.Store(s3srv)
		defer n.s3.Store(nil)
		n.log.Info("the S3 gateway is serving", "addr", s3srv.Addr().String(), "region", n.cfg.S3Gateway.Region)
	}
	var d drainer
	srv := newHTTPServer(n.cfg, n.tls, d.wrap(newGuard(n.cfg, n.clientURL, n.handler)), n.log)
	srv.RegisterOnShutdown(n.rest.EndStreams) // change-feed streams would hold the shutdown
	if starting := n.starting; starting != nil {
		// The hand-over (starting.go): the listener stays open, and what arrives meanwhile
		// waits in its accept queue for srv.
		starting.stopAccepting()
		n.starting = nil
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			fctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
			defer cancel()
			starting.finish(fctx)
		}()
		defer func() { <-finished }()
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- serveCapped(srv, ln) }()
	select {
	case err := <-errc:
		sctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
		defer cancel()
		admin.shutdown(sctx)
		s3srv.shutdown(sctx)
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
	defer cancel()
	if !n.host.Embedded() {
		n.log.Info("shutting down: handing over leadership, draining requests", "timeout", n.cfg.ShutdownTimeout)
		// The handover gets half the shutdown time: with its peers down it can only time
		// out, and draining the client connections must still have time left.
		tctx, tcancel := context.WithTimeout(sctx, n.cfg.ShutdownTimeout/2)
		n.host.TransferLeadership(tctx)
		tcancel()
	}
	err = errors.Join(d.shutdown(sctx, srv), admin.shutdown(sctx), s3srv.shutdown(sctx))
	<-errc
	return err
}

// TransferLeadership hands the leadership of every shard this node leads to another
// voter (what Serve does on shutdown).
func (n *Node) TransferLeadership(ctx context.Context) { n.host.TransferLeadership(ctx) }

// Close stops the node: the background workers, the shard host (controller,
// registration, replicas), the ports, the etcd client, the blob store, and releases the
// data directory.
func (n *Node) Close() error {
	var errs []error
	// The client port first: a node whose start failed refuses connections from here on
	// rather than leaving them unanswered while it closes.
	if n.starting != nil {
		n.starting.close()
	}
	if n.clientLn != nil {
		_ = n.clientLn.Close()
	}
	if w := n.workers.Load(); w != nil {
		errs = append(errs, w.Close())
	}
	if n.stopHealth != nil {
		n.stopHealth()
		n.healthDone.Wait()
	}
	if n.host != nil {
		errs = append(errs, n.host.Close())
	}
	if n.keys != nil {
		errs = append(errs, n.keys.Close())
	}
	if n.peer != nil {
		_ = n.peer.Close()
	}
	if n.etcd != nil {
		_ = n.etcd.Close()
	}
	if n.blobs != nil {
		errs = append(errs, n.blobs.Close())
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Unlock())
	}
	return errors.Join(errs...)
}
