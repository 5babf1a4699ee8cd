package server

// Cluster mode (docs/architecture.md#replication-and-placement): what a cluster node adds to the assembly — its bound
// client and peer ports, the etcd client, the node id bound to the data directory — and
// the translation of the control plane's refusals into configuration errors. The
// membership, placement, replicas, routing and forwarding are shard/host's.
//
// Data directory layout in cluster mode (under Config.DataDir):
//
//	LOCK, node-id               as in the embedded default
//	cluster-node-id             the id the node joined the cluster with (checked at start)
//	shards/<id>/                the replica of shard <id> (its Raft log and snapshots)
//
// The key that signs cursors is the cluster's, not the node's (a cursor minted by one
// leader must verify on the next after a failover): kept in etcd (host.ClusterCursorKey).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/internal/durable"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/host"
	"github.com/cairnstore/cairn/shard/mux"
)

// controllerInterval is the time between the controller's reconcile rounds; a node absent
// from the registry for controllerGrace has its replicas replaced; rebalanceInterval is
// the least time between two rebalance rounds (tests shorten them).
var (
	controllerInterval = 2 * time.Second
	controllerGrace    = 30 * time.Second
	rebalanceInterval  = control.DefaultRebalanceInterval
)

// clusterStartTimeout bounds reaching etcd at start (creating or joining the cluster,
// registering the node).
const clusterStartTimeout = 30 * time.Second

// openClusterParts binds the node id, the client and peer ports and the etcd client of a
// cluster node and returns the host's cluster configuration. instance is the data
// directory's UUID.
func (n *Node) openClusterParts(ctx context.Context, instance string) (*host.ClusterConfig, error) {
	cfg := n.cfg
	if cfg.NodeID != "" {
		n.nodeID = cfg.NodeID
	}
	if err := bindClusterNodeID(cfg.DataDir, n.nodeID, cfg.NodeID != ""); err != nil {
		return nil, err
	}
	if cfg.PeerSource != "" {
		// The system accepts any address for the dialer; an address this host does not
		// have fails every peer dial later, so check it now.
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.PeerSource, "0"))
		if err != nil {
			return nil, &ops.ConfigError{Source: "--peer-source", Field: "PeerSource",
				Rule: "must be an IP address of this host (" + err.Error() + ")", Value: cfg.PeerSource}
		}
		ln.Close()
	}
	// Ports first: the registry publishes the bound addresses. Until Serve, the starting
	// server answers on the client port at once (starting.go).
	tcp, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	capped := limitListener(tcp, cfg)
	n.clientLn = capped
	n.starting = serveStarting(capped, tcp.(*net.TCPListener), cfg, n.tls, n.nodeID, n.log)
	n.clientURL = cfg.AdvertiseClient
	if n.clientURL == "" {
		n.clientURL = cfg.ClientScheme() + "://" + n.clientLn.Addr().String()
	}
	mcfg := mux.Config{Advertise: cfg.AdvertisePeer, Logger: n.log}
	if cfg.PeerSource != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(cfg.PeerSource)}}
		mcfg.DialContext = d.DialContext
	}
	if cfg.PeerTLS() {
		if mcfg.TLS, err = mux.LoadTLS(cfg.PeerTLSCert, cfg.PeerTLSKey, cfg.PeerTLSCA); err != nil {
			return nil, err
		}
	}
	if n.peer, err = mux.Listen(cfg.PeerListen, mcfg); err != nil {
		return nil, fmt.Errorf("peer listen %s: %w", cfg.PeerListen, err)
	}
	ecfg := control.ClientConfig(cfg.EtcdEndpoints())
	ecfg.Logger = ops.ZapLogger(n.log, "etcd-client") // the node's format, not zap's JSON
	if n.etcd, err = clientv3.New(ecfg); err != nil {
		return nil, fmt.Errorf("etcd %s: %w", cfg.Etcd, err)
	}
	plane, err := control.New(n.etcd, control.Config{Logger: n.log})
	if err != nil {
		return nil, err
	}
	n.controlPlane = plane
	n.log.Info("joining the cluster", "etcd", cfg.Etcd, "node", n.nodeID, "timeout", clusterStartTimeout)
	return &host.ClusterConfig{
		Peer:               n.peer,
		Plane:              plane,
		Spec:               control.ClusterSpec{Shards: cfg.Shards, Replication: cfg.Replication, Blob: strings.TrimSuffix(cfg.Blob, "/")},
		ClientURL:          n.clientURL,
		Instance:           instance,
		ControllerInterval: controllerInterval,
		ControllerGrace:    controllerGrace,
		RebalanceInterval:  rebalanceInterval,
		StartTimeout:       clusterStartTimeout,
	}, nil
}

// hostError names, for the operator, what a host's start refused.
func (n *Node) hostError(err error) error {
	var me *control.MismatchError
	switch {
	case errors.As(err, &me):
		return mismatchConfigError(me)
	case errors.Is(err, control.ErrNodeIDInUse):
		return &ops.ConfigError{Source: "--node-id", Field: "NodeID", Value: n.nodeID,
			Rule: "must not be the id of another node's data directory (" + err.Error() + ")"}
	case n.cfg.Cluster && !errors.Is(err, ErrStorageDamaged):
		return fmt.Errorf("etcd %s: %w", n.cfg.Etcd, err)
	}
	return err
}

// mismatchConfigError names the setting a node disagrees with the cluster on.
func mismatchConfigError(me *control.MismatchError) error {
	switch me.Field {
	case "shards":
		return &ops.ConfigError{Source: "--shards", Field: "Shards", Value: me.Requested,
			Rule: "must be " + me.Existing + ", the cluster's shard count at creation or now (only cairn admin shards add changes it)"}
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
		return durable.WriteFile(p, []byte(id+"\n"), 0o644)
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

// ClusterStatusPath is the admin-listener path of the cluster status (cairn admin cluster
// status): nodes, shards, leaders and each member's applied-index lag. A cluster node
// serves it; the embedded default answers 404.
const ClusterStatusPath = "/v1/admin/cluster"

// ClusterStatus is the answer of GET ClusterStatusPath.
type ClusterStatus = host.ClusterStatus

// Status gathers the cluster status (zero for the embedded default).
func (n *Node) Status(ctx context.Context) ClusterStatus {
	st, _ := n.host.Status(ctx)
	return st
}

func (n *Node) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(n.Status(r.Context()))
}

// rootMover is what moves roots between the cluster's shards (rest.Options.Moves): the
// mover of a cluster node's host; nil for the embedded node.
func (n *Node) rootMover() rest.RootMover {
	if !n.cfg.Cluster {
		return nil
	}
	return n.host.Mover()
}

// shardGrower is what adds shards to the node's cluster (rest.Options.Shards): the host
// of a cluster node; nil for the embedded node.
func (n *Node) shardGrower() rest.ShardGrower {
	if !n.cfg.Cluster {
		return nil
	}
	return n.host
}
