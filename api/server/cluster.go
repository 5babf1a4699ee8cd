package server

// Cluster mode (DESIGN.md §9): the node joins a cluster whose membership and placement
// live in etcd, hosts a replica of every shard whose replica set lists it, runs the
// controller candidate, and routes every request to the leader of its root's shard.
//
// Data directory layout in cluster mode (under Config.DataDir):
//
//	LOCK, node-id               as in the embedded default
//	shards/<id>/                the replica of shard <id> (its Raft log and snapshots)
//
// The key that signs cursors is the cluster's, not the node's (a cursor minted by one
// leader must verify on the next after a failover): created once in etcd under
// <prefix>/cursor-key.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/api/mcp"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/mux"
	"github.com/cairnstore/cairn/shard/worker"
)

// controllerInterval is the time between the controller's reconcile rounds; a node absent
// from the registry for controllerGrace has its replicas replaced (tests shorten both).
var (
	controllerInterval = 2 * time.Second
	controllerGrace    = 30 * time.Second
)

// clusterStartTimeout bounds reaching etcd at start (creating or joining the cluster,
// registering the node).
const clusterStartTimeout = 30 * time.Second

// ClusterNode is one running node of a replicated cluster. Any node accepts any request:
// requests for a root whose shard another node leads are forwarded to it over the peer
// port.
type ClusterNode struct {
	cfg    ops.Config
	creds  ops.Credentials
	log    *slog.Logger
	lock   *flock.Flock
	nodeID string
	// instance is the UUID kept in the data directory (NodeInfo.Instance).
	instance string

	registry  *prometheus.Registry
	n         *Node // the blob store and its instrumentation (openBlobs), reused
	clientLn  net.Listener
	clientURL string
	admin     *adminServer
	peer      *mux.Mux
	etcd      *clientv3.Client
	plane     *control.Plane
	cluster   control.Cluster
	reg       *control.Registration
	placement *control.Placement
	ctrl      *control.Controller

	mu       sync.RWMutex
	replicas map[int]*shard.Shard
	// damaged holds the replicas whose storage failed its check at open (shard.ErrDamaged):
	// they are not opened again, which would only read the damaged log once more per call.
	damaged  map[int]error
	assigned sync.Map // agent → struct{}: roots known assigned on their (local, led) shard

	nodes atomic.Pointer[control.NodeSet]
	hints atomic.Pointer[map[int]control.LeaderHint]
	// readyKick wakes publishHints when a local replica becomes a ready leader.
	readyKick chan struct{}

	svc     *workbench.Service
	workers *worker.Set  // the leader workers of the replicas here, led from their OnReady
	handler http.Handler // the client port: routing in front of REST/MCP
	local   http.Handler // REST/MCP served here
	fwdSrv  *http.Server
	proxy   *forwarder

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closing atomic.Bool
	fence   atomic.Int64 // highest controller fence seen by adminLocal
}

// OpenCluster starts a cluster node (cfg.Cluster must be set): it locks cfg.DataDir, opens
// the s3:// blob store, binds the client and peer ports, creates or joins the cluster in
// etcd, registers the node, and starts hosting the replicas the control plane assigns it.
// The caller must Close the node.
func OpenCluster(ctx context.Context, cfg ops.Config, creds ops.Credentials, log *slog.Logger) (*ClusterNode, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Cluster {
		return nil, errors.New("server: OpenCluster needs Config.Cluster")
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
	c := &ClusterNode{cfg: cfg, creds: creds, log: log, lock: lock, replicas: map[int]*shard.Shard{}, damaged: map[int]error{}, readyKick: make(chan struct{}, 1)}
	if err := c.open(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *ClusterNode) open(ctx context.Context) error {
	cfg := c.cfg
	id, err := readOrCreate(filepath.Join(cfg.DataDir, "node-id"), func() ([]byte, error) {
		return []byte(uuid.NewString()), nil
	})
	if err != nil {
		return err
	}
	c.nodeID = strings.TrimSpace(string(id))
	c.instance = c.nodeID // the data directory's UUID, whatever --node-id says
	if cfg.NodeID != "" {
		c.nodeID = cfg.NodeID
	}
	if err := bindClusterNodeID(cfg.DataDir, c.nodeID, cfg.NodeID != ""); err != nil {
		return err
	}
	if cfg.PeerSource != "" {
		// The system accepts any address for the dialer; an address this host does not
		// have fails every peer dial later, so check it now.
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.PeerSource, "0"))
		if err != nil {
			return &ops.ConfigError{Source: "--peer-source", Field: "PeerSource",
				Rule: "must be an IP address of this host (" + err.Error() + ")", Value: cfg.PeerSource}
		}
		ln.Close()
	}
	c.registry = prometheus.NewRegistry()
	c.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c.n = &Node{cfg: cfg, creds: c.creds, log: c.log, registry: c.registry}
	if err := c.n.openBlobs(ctx); err != nil {
		return err
	}

	// Ports first: the registry publishes the bound addresses.
	c.clientLn, err = net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	c.clientURL = cfg.AdvertiseClient
	if c.clientURL == "" {
		c.clientURL = "http://" + c.clientLn.Addr().String()
	}
	mcfg := mux.Config{Advertise: cfg.AdvertisePeer, Logger: c.log}
	if cfg.PeerSource != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(cfg.PeerSource)}}
		mcfg.DialContext = d.DialContext
	}
	if cfg.PeerTLS() {
		if mcfg.TLS, err = mux.LoadTLS(cfg.PeerTLSCert, cfg.PeerTLSKey, cfg.PeerTLSCA); err != nil {
			return err
		}
	}
	if c.peer, err = mux.Listen(cfg.PeerListen, mcfg); err != nil {
		return fmt.Errorf("peer listen %s: %w", cfg.PeerListen, err)
	}

	ecfg := control.ClientConfig(cfg.EtcdEndpoints())
	ecfg.Logger = nil
	if c.etcd, err = clientv3.New(ecfg); err != nil {
		return fmt.Errorf("etcd %s: %w", cfg.Etcd, err)
	}
	if c.plane, err = control.New(c.etcd, control.Config{Logger: c.log}); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	c.log.Info("joining the cluster", "etcd", cfg.Etcd, "node", c.nodeID, "timeout", clusterStartTimeout)
	blobName := strings.TrimSuffix(cfg.Blob, "/")
	if c.cluster, err = retryControl(sctx, func() (control.Cluster, error) {
		return c.plane.CreateCluster(sctx, control.ClusterSpec{Shards: cfg.Shards, Replication: cfg.Replication, Blob: blobName})
	}); err != nil {
		var me *control.MismatchError
		if errors.As(err, &me) {
			return mismatchConfigError(me)
		}
		return fmt.Errorf("etcd %s: create or join the cluster: %w", cfg.Etcd, err)
	}
	nodes, _, err := retryControl2(sctx, func() (control.NodeSet, int64, error) { return c.plane.Nodes(sctx) })
	if err != nil {
		return fmt.Errorf("etcd %s: %w", cfg.Etcd, err)
	}
	c.nodes.Store(&nodes)
	hints := map[int]control.LeaderHint{}
	c.hints.Store(&hints)
	c.placement = c.plane.NewPlacement(c.cluster)
	cursorKey, err := retryControl(sctx, func() ([]byte, error) { return clusterCursorKey(sctx, c.plane) })
	if err != nil {
		return fmt.Errorf("etcd %s: cursor key: %w", cfg.Etcd, err)
	}

	c.svc, err = workbench.NewWithCores(clusterCores{c}, c.n.blobs, workbench.Config{InlineMaxBytes: cfg.InlineMaxBytes,
		MCPMaxPayloadBytes: cfg.MCPMaxPayloadBytes, PresentationRoot: cfg.PresentationRoot, CursorKey: cursorKey,
		RestoreBatch: cfg.RestoreBatch, GCGrace: cfg.GCGrace,
		QueryBudgetBytes: cfg.QueryBudgetBytes, QueryQueueTimeout: cfg.QueryQueueTimeout,
		MaxSnapshotsPerWorkbench: cfg.MaxSnapshotsPerWorkbench, MaxUploadDuration: cfg.MaxUploadDuration,
		Logger: c.log})
	if err != nil {
		return err
	}
	if err := c.svc.InstrumentGC(c.registry); err != nil {
		return err
	}
	if c.workers, err = worker.New(worker.Config{Blobs: c.n.blobs, GCInterval: cfg.GCInterval, GCGrace: cfg.GCGrace,
		InlineMaxBytes: cfg.InlineMaxBytes, Restorer: c.svc, Registerer: c.registry, Logger: c.log}); err != nil {
		return err
	}
	if err := c.svc.InstrumentIntegrity(c.registry); err != nil {
		return err
	}
	if err := c.svc.InstrumentQueries(c.registry); err != nil {
		return err
	}
	c.registry.MustRegister(clusterCollector{c})
	local := rest.NewHandler(c.svc, rest.Options{
		MCP:      mcp.Handler(c.svc, mcp.Options{MaxPayloadBytes: cfg.MCPMaxPayloadBytes}),
		Ready:    func() bool { return !c.closing.Load() },
		Failing:  c.n.health.Failing,
		GC:       c.workers,
		Registry: c.registry,
		Logger:   c.log,

		BodyMinBytesPerSecond: cfg.BodyMinBytesPerSecond,
		BodyRateWindow:        cfg.BodyRateWindow,
		WriteTimeout:          cfg.WriteTimeout,

		AdminRoutes: map[string]http.Handler{ClusterStatusPath: http.HandlerFunc(c.serveStatus)},
	})
	c.local = local
	if c.admin, err = listenAdmin(cfg, c.clientURL, local.Admin(), c.log); err != nil {
		return err
	}
	c.proxy = newForwarder(c)
	c.handler = c.route(false)

	fwdLn, err := c.peer.Listener(mux.StreamForward)
	if err != nil {
		return err
	}
	c.fwdSrv = &http.Server{Handler: c.peerHandler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(c.log.Handler(), slog.LevelWarn)}
	go func() { _ = c.fwdSrv.Serve(fwdLn) }()

	wctx, wcancel := context.WithCancel(context.Background())
	c.cancel = wcancel
	// Replicas first (WatchReplicaSets), then the registration that lets the controller
	// assign this node work.
	c.goRun(func() { c.n.health.run(wctx) })
	c.goRun(func() { c.hostReplicas(wctx) })
	c.goRun(func() { c.watchNodes(wctx) })
	c.goRun(func() { c.watchHints(wctx) })
	if c.reg, err = c.plane.Register(sctx, c.nodeID, control.NodeInfo{ClientURL: c.clientURL,
		PeerAddr: c.peer.Addr().String(), StartedAt: time.Now().UTC(), Instance: c.instance}); err != nil {
		if errors.Is(err, control.ErrNodeIDInUse) {
			return &ops.ConfigError{Source: "--node-id", Field: "NodeID", Value: c.nodeID,
				Rule: "must not be the id of another node's data directory (" + err.Error() + ")"}
		}
		return fmt.Errorf("etcd %s: register node %s: %w", cfg.Etcd, c.nodeID, err)
	}
	c.goRun(func() { c.publishHints(wctx) })
	if c.ctrl, err = c.plane.NewController(clusterAdmin{c}, control.ControllerConfig{ID: c.nodeID,
		Interval: controllerInterval, Grace: controllerGrace}); err != nil {
		return err
	}
	c.goRun(func() {
		if err := c.ctrl.Run(wctx); err != nil && wctx.Err() == nil {
			c.log.Error("controller stopped", "err", err)
		}
	})
	c.log.Info("cluster node started", "node", c.nodeID, "cluster", c.cluster.ID, "shards", c.cluster.Shards,
		"replication", c.cluster.Replication, "peer", c.peer.Addr().String(), "client", c.clientURL)
	return nil
}

// clusterCursorKey returns the cluster's cursor-signing key, creating it (32 random
// bytes, hex in etcd) if absent with a transaction that succeeds only if the key is
// absent, so every node signs and verifies with the same key.
func clusterCursorKey(ctx context.Context, p *control.Plane) ([]byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	key := p.Config().Prefix + "/cursor-key"
	ctx, cancel := context.WithTimeout(ctx, p.Config().RequestTimeout)
	defer cancel()
	resp, err := p.Client().Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, hex.EncodeToString(raw))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", control.ErrControlPlaneUnavailable, err)
	}
	if resp.Succeeded {
		return raw, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 {
		return nil, errors.New("server: cursor key vanished from etcd")
	}
	k, err := hex.DecodeString(string(kvs[0].Value))
	if err != nil || len(k) < 16 {
		return nil, fmt.Errorf("server: malformed cursor key in etcd (%d bytes)", len(k))
	}
	return k, nil
}

func (c *ClusterNode) goRun(f func()) {
	c.wg.Add(1)
	go func() { defer c.wg.Done(); f() }()
}

// retryControl retries f while the control plane is unavailable, until ctx ends.
func retryControl[T any](ctx context.Context, f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if err == nil || !control.IsRetryable(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func retryControl2[T, U any](ctx context.Context, f func() (T, U, error)) (T, U, error) {
	var u U
	t, err := retryControl(ctx, func() (T, error) {
		var (
			t   T
			err error
		)
		t, u, err = f()
		return t, err
	})
	return t, u, err
}

// NodeID returns this node's id (its Raft server id).
func (c *ClusterNode) NodeID() string { return c.nodeID }

// Service returns the node's Workbench service.
func (c *ClusterNode) Service() *workbench.Service { return c.svc }

// Handler returns the client-port handler (routing in front of REST and MCP).
func (c *ClusterNode) Handler() http.Handler { return c.handler }

// WaitReady returns at once: a cluster node serves (and forwards) as soon as it opened;
// requests for a shard without a leader yet answer a retryable RoutingUnavailable.
func (c *ClusterNode) WaitReady(ctx context.Context) error { return ctx.Err() }

// Serve serves HTTP on the client port until ctx ends, then transfers the leadership of
// every shard this node leads (within half of cfg.ShutdownTimeout) and drains the client
// connections, all within cfg.ShutdownTimeout. ready, when
// non-nil, receives the bound address.
func (c *ClusterNode) Serve(ctx context.Context, ready func(addr net.Addr)) error {
	var d drainer
	srv := newHTTPServer(c.cfg, d.wrap(newGuard(c.cfg, c.clientURL, c.handler)), c.log)
	if ready != nil {
		ready(c.clientLn.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(limitListener(c.clientLn, c.cfg)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	c.log.Info("shutting down: handing over leadership, draining requests", "timeout", c.cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), c.cfg.ShutdownTimeout)
	defer cancel()
	// The handover gets half the shutdown time: with its peers down it can only time out,
	// and draining the client connections must still have time left.
	tctx, tcancel := context.WithTimeout(sctx, c.cfg.ShutdownTimeout/2)
	c.TransferLeadership(tctx)
	tcancel()
	err := errors.Join(d.shutdown(sctx, srv), c.admin.shutdown(sctx))
	<-errc
	return err
}

// AdminAddr returns the bound admin address (cfg.AdminAddress()).
func (c *ClusterNode) AdminAddr() net.Addr { return c.admin.Addr() }

// TransferLeadership hands the leadership of every shard this node leads to another
// voter (SIGTERM), so that clients see a short handover instead of an election timeout.
func (c *ClusterNode) TransferLeadership(ctx context.Context) {
	c.closing.Store(true)
	var wg sync.WaitGroup
	for id, r := range c.replicaList() {
		if r.Stats().State != "Leader" || !hasOtherVoter(r, c.nodeID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.TransferLeadership(ctx); err != nil {
				c.log.Warn("leadership transfer", "shard", id, "err", err)
			} else {
				c.log.Info("leadership transferred", "shard", id)
			}
		}()
	}
	wg.Wait()
}

// hasOtherVoter reports whether r's group has a voter other than self (someone to hand
// leadership to).
func hasOtherVoter(r *shard.Shard, self string) bool {
	members, err := r.Configuration()
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.Voter && m.ID != self {
			return true
		}
	}
	return false
}

// Close stops the node: controller, registration, replicas, ports, etcd client, blob
// store, data directory lock.
func (c *ClusterNode) Close() error {
	c.closing.Store(true)
	var errs []error
	if c.cancel != nil {
		c.cancel()
	}
	if c.fwdSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.fwdSrv.Shutdown(sctx)
		cancel()
	}
	c.wg.Wait()
	if c.workers != nil {
		errs = append(errs, c.workers.Close())
	}
	if c.reg != nil {
		errs = append(errs, c.reg.Close())
	}
	if c.placement != nil {
		c.placement.Close()
	}
	c.mu.Lock()
	for id, r := range c.replicas {
		if err := r.Close(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", id, err))
		}
		delete(c.replicas, id)
	}
	c.mu.Unlock()
	if c.peer != nil {
		_ = c.peer.Close()
	}
	if c.clientLn != nil {
		_ = c.clientLn.Close()
	}
	if c.admin != nil {
		_ = c.admin.srv.Close()
	}
	if c.etcd != nil {
		_ = c.etcd.Close()
	}
	if c.n != nil && c.n.blobs != nil {
		errs = append(errs, c.n.blobs.Close())
	}
	if c.lock != nil {
		errs = append(errs, c.lock.Unlock())
	}
	return errors.Join(errs...)
}

// replica returns the local replica of shard id, or nil.
func (c *ClusterNode) replica(id int) *shard.Shard {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.replicas[id]
}

func (c *ClusterNode) replicaList() map[int]*shard.Shard {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[int]*shard.Shard, len(c.replicas))
	for id, r := range c.replicas {
		out[id] = r
	}
	return out
}

// ensureReplica opens the local replica of shard id if it is not open.
func (c *ClusterNode) ensureReplica(id int) (*shard.Shard, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.replicas[id]; ok {
		return r, nil
	}
	if c.closing.Load() {
		return nil, shard.ErrClosed
	}
	if err, ok := c.damaged[id]; ok {
		return nil, err
	}
	var leader worker.Leadership
	r, err := shard.Open(shard.Config{
		Dir:    filepath.Join(c.cfg.DataDir, "shards", strconv.Itoa(id)),
		NodeID: c.nodeID,
		FSM: meta.Options{RetentionWindow: c.cfg.RetentionWindow, DedupeMaxPerRoot: c.cfg.DedupeMaxPerRoot,
			SnapshotGrace: c.cfg.SnapshotGrace, RequireRootAssignment: true, RootUIDPrefix: fmt.Sprintf("s%dr", id)},
		SnapshotInterval:  c.cfg.RaftSnapshotInterval,
		SnapshotThreshold: c.cfg.RaftSnapshotThreshold,
		Logger:            c.log.With("shard", id),
		OnReady: func(ready bool) {
			leader.OnReady(ready)
			if ready {
				select {
				case c.readyKick <- struct{}{}:
				default:
				}
			}
		},
		Peer:    c.peer,
		ShardID: strconv.Itoa(id),
	})
	if err != nil {
		err = fmt.Errorf("open replica of shard %d: %w", id, err)
		if errors.Is(err, shard.ErrDamaged) {
			c.damaged[id] = err
		}
		return nil, err
	}
	c.replicas[id] = r
	leader.Bind(c.workers, id, r)
	c.log.Info("replica opened", "shard", id)
	return r, nil
}

// hostReplicas opens a replica of every shard whose replica set lists this node and
// closes the replicas of shards that no longer list it (their data stays on disk).
func (c *ClusterNode) hostReplicas(ctx context.Context) {
	for sets := range c.plane.WatchReplicaSets(ctx) {
		for id, set := range sets {
			if set.Has(c.nodeID) {
				if _, err := c.ensureReplica(id); err != nil && ctx.Err() == nil {
					c.log.Error("hosting replica", "shard", id, "err", err)
				}
			}
		}
		c.mu.Lock()
		for id, r := range c.replicas {
			if set, ok := sets[id]; ok && !set.Has(c.nodeID) {
				c.workers.Unlead(id)
				_ = r.Close()
				delete(c.replicas, id)
				c.log.Info("replica closed: no longer in the shard's replica set", "shard", id)
			}
		}
		c.mu.Unlock()
	}
}

func (c *ClusterNode) watchNodes(ctx context.Context) {
	for ns := range c.plane.WatchNodes(ctx) {
		c.nodes.Store(&ns)
	}
}

func (c *ClusterNode) watchHints(ctx context.Context) {
	for h := range c.plane.WatchLeaderHints(ctx) {
		c.hints.Store(&h)
	}
}

// publishHints publishes a leader hint as soon as a local replica becomes a ready leader
// (woken by the replica), and checks every hintPollInterval as a backstop (a hint write
// that failed while etcd was away).
func (c *ClusterNode) publishHints(ctx context.Context) {
	published := map[int]uint64{}
	t := time.NewTicker(hintPollInterval)
	defer t.Stop()
	lastAddressCheck := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.readyKick:
		}
		checkAddresses := time.Since(lastAddressCheck) >= addressCheckInterval
		if checkAddresses {
			lastAddressCheck = time.Now()
		}
		hints := map[int]control.LeaderHint{}
		if h := c.hints.Load(); h != nil {
			hints = *h
		}
		for id, r := range c.replicaList() {
			st := r.Stats()
			if st.State == "Leader" && checkAddresses {
				c.fixAddresses(ctx, id, r)
			}
			if st.State != "Leader" {
				if _, ok := published[id]; ok { // deposed: withdraw the claim
					delete(published, id)
					if err := c.reg.ClearLeaderHint(ctx, id); err != nil && ctx.Err() == nil {
						c.log.Debug("clear leader hint", "shard", id, "err", err)
					}
				}
				continue
			}
			// Published, and etcd still shows it: nothing to do. A hint missing, naming
			// another node or an older term (a stalled node wrote it back) is written again.
			if h, ok := hints[id]; published[id] == st.Term && ok && h.Node == c.nodeID && h.Term == st.Term {
				continue
			}
			if err := c.reg.SetLeaderHint(ctx, id, st.Term); err != nil {
				if ctx.Err() == nil {
					c.log.Debug("leader hint", "shard", id, "err", err)
				}
				continue
			}
			published[id] = st.Term
		}
	}
}

// hintPollInterval is how often publishHints looks at the local replicas without being
// woken; addressCheckInterval how often a leader compares its group's peer addresses
// with the registry.
const (
	hintPollInterval     = time.Second
	addressCheckInterval = 2 * time.Second
)

// fixAddresses updates, in shard id's Raft configuration, the address of every member
// that registered a different peer address (a node restarted on another port): without
// it the leader would keep dialling the old one.
func (c *ClusterNode) fixAddresses(ctx context.Context, id int, r *shard.Shard) {
	members, err := r.Configuration()
	if err != nil {
		return
	}
	nodes := *c.nodes.Load()
	for _, m := range members {
		info, ok := nodes[m.ID]
		if !ok || info.PeerAddr == "" || info.PeerAddr == m.Address || m.ID == c.nodeID {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		// AddNonvoter on an existing member only updates its address (a voter stays one).
		err := r.AddNonvoter(actx, m.ID, info.PeerAddr)
		cancel()
		if err != nil {
			c.log.Warn("updating a member's peer address", "shard", id, "node", m.ID, "addr", info.PeerAddr, "err", err)
		} else {
			c.log.Info("member peer address updated", "shard", id, "node", m.ID, "from", m.Address, "to", info.PeerAddr)
		}
	}
}

// leaderOf returns the node id and peer address of shard id's leader as this node knows
// it: its own replica's view first, then the leader hint and the node registry.
func (c *ClusterNode) leaderOf(id int) (node, addr string) {
	if r := c.replica(id); r != nil {
		if n, a := r.Leader(); n != "" {
			return n, a
		}
	}
	h, ok := (*c.hints.Load())[id]
	if !ok {
		return "", ""
	}
	info, ok := (*c.nodes.Load())[h.Node]
	if !ok {
		return "", ""
	}
	return h.Node, info.PeerAddr
}

// peerAddr returns the peer address of node, or "".
func (c *ClusterNode) peerAddr(node string) string {
	if node == c.nodeID {
		return c.peer.Addr().String()
	}
	return (*c.nodes.Load())[node].PeerAddr
}

// shardOf returns the shard of agent's root, placing the root on first use.
func (c *ClusterNode) shardOf(ctx context.Context, agent string) (int, error) {
	if s, ok := c.placement.Cached(agent); ok {
		return s, nil
	}
	s, _, err := c.placement.Place(ctx, agent)
	return s, err
}

// clusterCores routes each agent root to the local replica that leads its shard.
type clusterCores struct{ c *ClusterNode }

// assignTimeout bounds placing a root and assigning it on its shard.
const assignTimeout = 10 * time.Second

func (cc clusterCores) For(agent string) (workbench.Core, error) {
	c := cc.c
	ctx, cancel := context.WithTimeout(context.Background(), assignTimeout)
	defer cancel()
	id, err := c.shardOf(ctx, agent)
	if err != nil {
		if control.IsRetryable(err) {
			return nil, fmt.Errorf("%w (placing root: %v)", shard.ErrNotLeader, err)
		}
		return nil, err
	}
	r := c.replica(id)
	if r == nil || !r.Ready() {
		return nil, shard.ErrNotLeader
	}
	if _, ok := c.assigned.Load(agent); ok {
		return r, nil
	}
	v, err := r.ReadView(ctx)
	if err != nil {
		return nil, err
	}
	if !v.HoldsRoot(agent) {
		res, err := r.Propose(ctx, meta.Header{TimeMs: time.Now().UnixMilli()}, meta.AssignRoot{Agent: agent})
		if err != nil {
			return nil, err
		}
		if res.Err != nil {
			return nil, res.Err
		}
	}
	c.assigned.Store(agent, struct{}{})
	return r, nil
}

// clusterCollector exports every local replica's Raft figures.
type clusterCollector struct{ c *ClusterNode }

func (cc clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descApplied
	ch <- descCommit
	ch <- descReady
	ch <- descVoters
	ch <- descInstalls
}

func (cc clusterCollector) Collect(ch chan<- prometheus.Metric) {
	for id, r := range cc.c.replicaList() {
		st := r.Stats()
		ready := 0.0
		if st.Ready {
			ready = 1
		}
		label := strconv.Itoa(id)
		ch <- prometheus.MustNewConstMetric(descApplied, prometheus.GaugeValue, float64(st.AppliedVersion), label)
		ch <- prometheus.MustNewConstMetric(descCommit, prometheus.GaugeValue, float64(st.CommitIndex), label)
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, ready, label)
		ch <- prometheus.MustNewConstMetric(descInstalls, prometheus.CounterValue, float64(st.SnapshotInstalls), label)
		if st.State != "Leader" {
			continue
		}
		if members, err := r.Configuration(); err == nil {
			voters := 0
			for _, m := range members {
				if m.Voter {
					voters++
				}
			}
			ch <- prometheus.MustNewConstMetric(descVoters, prometheus.GaugeValue, float64(voters), label)
		}
	}
}

var descInstalls = prometheus.NewDesc("cairn_shard_snapshot_installs_total",
	"Raft snapshots this replica received from a leader and restored since the process started (a follower too far behind for the leader's log).", []string{"shard"}, nil)

var descVoters = prometheus.NewDesc("cairn_shard_voters", "Voters in the shard's Raft configuration, as its leader (this node) sees it.", []string{"shard"}, nil)

// mismatchConfigError names the setting a node disagrees with the cluster on.
func mismatchConfigError(me *control.MismatchError) error {
	switch me.Field {
	case "shards":
		return &ops.ConfigError{Source: "--shards", Field: "Shards", Value: me.Requested,
			Rule: "must be " + me.Existing + ", the shard count the cluster was created with (fixed at creation)"}
	case "replication":
		return &ops.ConfigError{Source: "--replication", Field: "Replication", Value: me.Requested,
			Rule: "must be " + me.Existing + ", the cluster's replication factor (fixed at creation)"}
	case "blob":
		return &ops.ConfigError{Source: "--blob", Field: "Blob", Value: me.Requested,
			Rule: "must be " + me.Existing + ", the object store every node of this cluster reads"}
	}
	return me
}

// clusterNodeIDFile records, in the data directory, the node id the node joined the
// cluster with.
const clusterNodeIDFile = "cluster-node-id"

// bindClusterNodeID records id as the cluster node id of dataDir, or checks it against the
// one recorded: a node's id is its Raft server id in every shard, so a data directory
// started under another id would present one node's state as another's. explicit says
// whether id came from --node-id (for the error).
func bindClusterNodeID(dataDir, id string, explicit bool) error {
	p := filepath.Join(dataDir, clusterNodeIDFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(p+".tmp", []byte(id+"\n"), 0o644); err != nil {
			return err
		}
		return os.Rename(p+".tmp", p)
	}
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(string(b)); got != id {
		rule := "must be " + got + ", the id this data directory's node joined the cluster with (a node's id never changes; a new node needs an empty --data-dir)"
		if !explicit {
			rule = "must be set to " + got + ": this data directory's node joined the cluster with that id"
		}
		return &ops.ConfigError{Source: "--node-id", Field: "NodeID", Rule: rule, Value: id}
	}
	return nil
}
