package host

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/mux"
)

// EmbeddedShard is the one shard of the embedded default.
const EmbeddedShard = 0

// Config configures a Host.
type Config struct {
	// DataDir holds the replicas, one directory per shard: DataDir/shards/<id>.
	DataDir string
	// NodeID is this node's id, the Raft server id of each of its replicas.
	NodeID string
	// FSM are the metadata options of every replica. In a cluster the host adds
	// RequireRootAssignment and a per-shard RootUIDPrefix.
	FSM meta.Options
	// SnapshotInterval and SnapshotThreshold tune each replica's Raft snapshots (shard.Config).
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	// Logger receives the host's and the replicas' reports. Default slog.Default().
	Logger *slog.Logger
	// OnLeadership, when set, is told each time a local replica becomes the shard's ready
	// leader (leads true; r serves proposals and linearizable reads) and when it stops
	// being one or closes (leads false; a replica that closes is reported before it does,
	// and may be reported twice). Calls for one shard come in order; they must not block.
	// The leader-only workers (shard/worker) start and stop here.
	OnLeadership func(id int, r *shard.Shard, leads bool)
	// Cluster, when set, makes the host a cluster node (docs/architecture.md#replication-and-placement); nil is the embedded
	// default (one shard, single voter, static placement).
	Cluster *ClusterConfig
}

// ClusterConfig is what a cluster node's host needs beyond Config. The caller opens the
// peer port and the control plane (their addresses, TLS and etcd endpoints are
// configuration) and owns neither: the host stops using them at Close.
type ClusterConfig struct {
	// Peer is the node's multiplexed peer port: Raft traffic of every replica and the
	// fwd stream (forwarded requests and commands, the node-to-node API).
	Peer *mux.Mux
	// Plane is the etcd control plane.
	Plane *control.Plane
	// Spec is the cluster this node creates or joins (shard count, replication, blob
	// store); a mismatch with the cluster in etcd is a *control.MismatchError.
	Spec control.ClusterSpec
	// ClientURL is the URL clients reach this node at (published in the registry).
	ClientURL string
	// Instance is the UUID of the node's data directory (control.NodeInfo.Instance).
	Instance string
	// ControllerInterval and ControllerGrace tune the controller (control.ControllerConfig).
	ControllerInterval, ControllerGrace time.Duration
	// RebalanceInterval is the least time between two rebalance rounds
	// (control.ControllerConfig). Zero: control.DefaultRebalanceInterval.
	RebalanceInterval time.Duration
	// StartTimeout bounds reaching etcd at start. Default 30 s.
	StartTimeout time.Duration
}

// Host is a node's set of replicas and the routing in front of them.
type Host struct {
	cfg       Config
	log       *slog.Logger
	placement Placement

	// replicas are the local replicas (replicas.go).
	replicas *replicaSet
	assigned *sync.Map // agent → struct{}: roots known assigned on their shard

	// reannounce makes the leadership loop repeat its reports of the replicas that lead
	// (replicas.kick wakes it when a replica's readiness changed).
	reannounce chan struct{}
	cancel     context.CancelFunc
	wg         sync.WaitGroup

	// leaders runs calls on a shard's leader, here or over the peer port (leader.go).
	leaders *leaderCalls
	peers   *peerClient   // nil in the embedded default
	cluster *clusterState // nil in the embedded default
	// followerReads counts reads at a snapshot id served from a replica that did not lead.
	followerReads *followerReadCounter
	// raftTimings are the replicas' latency histograms (cairn_shard_*_duration_seconds).
	raftTimings *shard.Metrics
	// stored caches each led replica's count of its roots and stored bytes (load.go).
	stored *storedLoads
	// exports are the views the moves' copies read from, on the source's leader
	// (move_export.go).
	exports *exportViews
	// mover drives the moves of roots between shards (move.go).
	mover *Mover
	// recovery recovers shards that lost a majority on this node (recover.go).
	recovery *Recovery
	// shards are the shards by number, for node-wide operations such as backups (shards.go).
	shards *Shards
}

// Open starts a host: for the embedded default it opens the replica of shard 0 (created
// and bootstrapped on first open); for a cluster it creates or joins the cluster in etcd,
// registers the node, hosts the replicas the control plane assigns it and runs the
// controller candidate. ctx bounds the start. The caller must Close the host.
func Open(ctx context.Context, cfg Config) (*Host, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodeID == "" || cfg.DataDir == "" {
		return nil, errors.New("host: Config.NodeID and Config.DataDir are required")
	}
	if cc := cfg.Cluster; cc != nil && (cc.Peer == nil || cc.Plane == nil) {
		return nil, errors.New("host: ClusterConfig.Peer and ClusterConfig.Plane are required")
	}
	h, wctx := newHost(cfg)
	if cfg.Cluster == nil {
		h.placement = Static{Shard: EmbeddedShard}
		if _, err := h.replicas.ensure(EmbeddedShard); err != nil {
			h.Close()
			return nil, err
		}
		h.goRun(func() { h.watchLeadership(wctx) })
		return h, nil
	}
	if err := h.openCluster(ctx, wctx); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// newHost returns a host with no replica and no placement yet, and the context its
// background work runs under (Close ends it). A cluster node's host calls other nodes
// over cfg.Cluster's peer port (it does not serve it yet: ServePeer).
func newHost(cfg Config) (*Host, context.Context) {
	h := &Host{cfg: cfg, log: cfg.Logger, reannounce: make(chan struct{}, 1), followerReads: newFollowerReadCounter(),
		raftTimings: shard.NewMetrics(), stored: &storedLoads{}, assigned: &sync.Map{}, exports: &exportViews{}}
	h.replicas = newReplicaSet(cfg, h.raftTimings, h.stored)
	if cc := cfg.Cluster; cc != nil {
		h.cluster = newClusterState(cc, cfg.NodeID, cfg.Logger)
		h.peers = newPeerClient(cc.Peer)
	}
	h.leaders = newLeaderCalls(cfg.NodeID, h.replicas, h.cluster, h.peers)
	h.recovery = &Recovery{self: cfg.NodeID, log: cfg.Logger, cluster: h.cluster, replicas: h.replicas}
	h.shards = &Shards{cluster: h.cluster, leaders: h.leaders, replicas: h.replicas}
	h.mover = &Mover{log: cfg.Logger, cluster: h.cluster, leaders: h.leaders, peers: h.peers, exports: h.exports, assigned: h.assigned}
	wctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	return h, wctx
}

// NodeID returns this node's id.
func (h *Host) NodeID() string { return h.cfg.NodeID }

// Embedded reports whether the host is the embedded default (no cluster).
func (h *Host) Embedded() bool { return h.cfg.Cluster == nil }

// WaitReady blocks until the embedded default's shard serves writes and linearizable
// reads. A cluster host returns at once: it serves as soon as it opened, and calls for a
// shard without a leader yet answer a retryable error.
func (h *Host) WaitReady(ctx context.Context) error {
	if h.Embedded() {
		r := h.Replica(EmbeddedShard)
		if r == nil {
			return shard.ErrClosed
		}
		return r.WaitReady(ctx)
	}
	return ctx.Err()
}

func (h *Host) goRun(f func()) {
	h.wg.Add(1)
	go func() { defer h.wg.Done(); f() }()
}

// Replica returns the local replica of shard id, or nil.
func (h *Host) Replica(id int) *shard.Shard { return h.replicas.get(id) }

// Replicas returns the local replicas by shard id.
func (h *Host) Replicas() map[int]*shard.Shard { return h.replicas.all() }

// leadershipPoll is how often the leadership loop looks at the replicas without being
// woken (a backstop for a missed wake-up and for hint writes that failed while etcd was
// away).
const leadershipPoll = time.Second

// watchLeadership tells OnLeadership of every change of a local replica's leadership, and
// in a cluster publishes and withdraws leader hints (cluster.go).
func (h *Host) watchLeadership(ctx context.Context) {
	leads := map[int]*shard.Shard{}
	t := time.NewTicker(leadershipPoll)
	defer t.Stop()
	defer func() {
		for id := range leads {
			h.replicas.tell(id, nil, false)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.replicas.kick:
		case <-h.reannounce:
			for id, r := range leads {
				h.replicas.tell(id, r, true)
			}
		}
		list := h.Replicas()
		for id, r := range leads {
			if list[id] != r || !r.Ready() {
				delete(leads, id)
				h.replicas.tell(id, r, false)
			}
		}
		for id, r := range list {
			if _, ok := leads[id]; !ok && r.Ready() {
				leads[id] = r
				h.replicas.tell(id, r, true)
			}
		}
		if h.cluster != nil {
			h.cluster.publishHints(ctx, list)
		}
	}
}

// Reannounce makes the leadership loop report again every local replica that leads (to
// an OnLeadership that could not act on the first report, such as workers created after
// the host). The reports come from the loop, in order with the others.
func (h *Host) Reannounce() {
	select {
	case h.reannounce <- struct{}{}:
	default:
	}
}

// TransferLeadership hands the leadership of every shard this node leads to another
// voter (SIGTERM), so that clients see a short handover instead of an election timeout.
// From then on the host refuses new replicas.
func (h *Host) TransferLeadership(ctx context.Context) {
	h.replicas.closing.Store(true)
	var wg sync.WaitGroup
	for id, r := range h.Replicas() {
		if r.Stats().State != "Leader" || !hasOtherVoter(r, h.cfg.NodeID) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.TransferLeadership(ctx); err != nil {
				h.log.Warn("leadership transfer", "shard", id, "err", err)
			} else {
				h.log.Info("leadership transferred", "shard", id)
			}
		}()
	}
	wg.Wait()
}

// Closing reports whether the host is shutting down (TransferLeadership or Close ran).
func (h *Host) Closing() bool { return h.replicas.closing.Load() }

// hasOtherVoter reports whether r's group has a voter other than self.
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

// Close stops the host: the controller, the registration, the fwd stream, every replica.
func (h *Host) Close() error {
	h.replicas.closing.Store(true)
	if h.cancel != nil {
		h.cancel()
	}
	var errs []error
	if h.cluster != nil {
		errs = append(errs, h.cluster.stopServing())
	}
	h.wg.Wait()
	if h.cluster != nil {
		errs = append(errs, h.cluster.close())
	}
	if h.placement != nil {
		h.placement.Close()
	}
	errs = append(errs, h.replicas.closeAll())
	return errors.Join(errs...)
}
