package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// Admin routes, served only on a node's admin listener (--admin-listen): an Admin is
// built on the admin listener's URL, not the client one.
const (
	// AdminGCPath runs one garbage-collection sweep (POST).
	AdminGCPath = "/v1/admin/gc"
	// AdminClusterPath answers the cluster status of a cluster node (GET); an embedded
	// node answers 404.
	AdminClusterPath = "/v1/admin/cluster"
	// AdminLeavingPath marks a node leaving (POST) or clears the mark (DELETE ?node=).
	AdminLeavingPath = "/v1/admin/cluster/leaving"
	// AdminShardsPath adds shards to a cluster (POST); an embedded node answers 409
	// InvalidState.
	AdminShardsPath = "/v1/admin/cluster/shards"
	// AdminRebalancePath reads (GET) and sets (POST) the cluster's rebalance switch.
	AdminRebalancePath = "/v1/admin/cluster/rebalance"
)

// Admin talks to one node's admin listener (--admin-listen): the operator routes under
// /v1/admin/, which no other listener serves. It owns garbage collection and, on a
// cluster node, the cluster's status, leaving marks, shards and rebalance switch
// (admin.go); root moves (admin_moves.go); shard recovery (admin_recover.go); backups,
// their holds and scrubs (backup.go); API keys (keys.go); quotas and purges
// (lifecycle.go); and history retention (history.go). Its requests go through a transport
// built exactly as a Client's (base URL, HTTP client with TLS and API key, retry policy),
// and it calls no route outside /v1/admin/. It is safe for concurrent use.
type Admin struct {
	// tr is the plumbing every request goes through; its base is the admin listener's URL.
	tr *transport
}

// NewAdmin returns an admin client for the node whose admin listener is at adminURL
// ("http://127.0.0.1:7071"; a trailing "/" is ignored). httpClient nil means
// http.DefaultClient; NewHTTPClient(adminURL, opts) gives it a CA, a client certificate
// and an API key, as for New. Like New's, it never retries on its own (WithRetry).
func NewAdmin(adminURL string, httpClient *http.Client) *Admin {
	return &Admin{tr: newTransport(adminURL, httpClient)}
}

// WithRetry returns a copy of a that retries as p says (RetryPolicy; the same rules as
// Client.WithRetry).
func (a *Admin) WithRetry(p RetryPolicy) *Admin {
	return &Admin{tr: a.tr.withRetry(p)}
}

// WithAPIKey returns a copy of a that sends key (Authorization: Bearer) on every request
// to a's own server, never to another host a redirect names (as Client.WithAPIKey).
func (a *Admin) WithAPIKey(key string) *Admin {
	return &Admin{tr: a.tr.withAPIKey(key)}
}

// ErrNotCluster is wrapped by the error of a cluster call (ClusterStatus, AddShards,
// Decommission, …) when the node is an embedded one (cairn serve without --cluster): it
// wraps the server's *Error, 409 InvalidState with details.reason not_a_cluster.
var ErrNotCluster = errors.New("not a cluster node")

// ErrNoAdminRoutes is wrapped by the error of an admin call answered 404 without naming a
// field: the URL serves no admin route at all (a node's client port instead of its
// --admin-listen address, or not a Cairn node); it wraps the server's *Error.
var ErrNoAdminRoutes = errors.New("no admin routes")

// GCRequest is the body of a garbage-collection sweep (POST /v1/admin/gc).
type GCRequest struct {
	// DryRun reports what the sweep would delete and deletes nothing.
	DryRun bool `json:"dry_run"`
	// Agent limits the sweep to one agent root; "" sweeps every root.
	Agent string `json:"agent"`
	// MaxBatch bounds the blobs collected per agent root; 0 means the server's default.
	MaxBatch int `json:"max_batch"`
}

// GCCandidate is one blob a sweep found unreferenced past the grace period.
type GCCandidate struct {
	// Digest is "sha256:<hex>" of the blob's plaintext.
	Digest string `json:"digest"`
	// StoredBytes is the blob's size in the object store, in bytes.
	StoredBytes int64 `json:"stored_bytes"`
	// Orphan is a blob uploaded but never published.
	Orphan bool `json:"orphan"`
	// TakenOver is a candidate a newer reference claimed before deletion.
	TakenOver bool `json:"taken_over"`
}

// GCRoot is what a sweep did in one agent root.
type GCRoot struct {
	Agent        string        `json:"agent"`
	Candidates   []GCCandidate `json:"candidates"`
	Intents      int           `json:"intents"`
	Deleted      int           `json:"deleted"`
	DeletedBytes int64         `json:"deleted_bytes"`
	Orphans      int           `json:"orphans_deleted"`
	// More says the root holds more candidates than MaxBatch: run again.
	More bool `json:"more"`
}

// GCReport is the answer of a sweep: totals, then per agent root (byte counts are stored
// bytes).
type GCReport struct {
	DryRun         bool     `json:"dry_run"`
	Candidates     int      `json:"candidates"`
	CandidateBytes int64    `json:"candidate_bytes"`
	Intents        int      `json:"intents"`
	Deleted        int      `json:"deleted"`
	DeletedBytes   int64    `json:"deleted_bytes"`
	Orphans        int      `json:"orphans_deleted"`
	More           bool     `json:"more"`
	Roots          []GCRoot `json:"roots"`
	RawJSON
}

// CollectGarbage runs one garbage-collection sweep with the server's grace period
// (docs/architecture.md#blob-storage-and-garbage-collection).
//
// Errors: *Error RoutingUnavailable (503, the node is not the shard leader),
// ObjectUnavailable (503, the blob store failed; the sweep stopped), InvalidArguments.
func (a *Admin) CollectGarbage(ctx context.Context, req GCRequest) (*GCReport, error) {
	if req.MaxBatch < 0 {
		return nil, fmt.Errorf("client: GCRequest.MaxBatch %d must not be negative", req.MaxBatch)
	}
	return postJSON[GCReport](ctx, a.tr, a.tr.base+AdminGCPath, req, notReplayable)
}

// ClusterNode is one node registered in the cluster's control plane (etcd). A node is
// registered while its lease is kept alive: one that stopped or died drops out after the
// lease's TTL.
type ClusterNode struct {
	ID        string    `json:"id"`
	ClientURL string    `json:"client_url"`
	PeerAddr  string    `json:"peer_addr"`
	StartedAt time.Time `json:"started_at"`
}

// ClusterMember is one replica of a shard, as the shard's leader sees it.
type ClusterMember struct {
	// ID is the node id (the Raft server id).
	ID    string `json:"id"`
	Voter bool   `json:"voter"`
	// Lag is how many log entries the member's applied index is behind the leader's
	// commit index; negative when unknown (the member did not report).
	Lag int64 `json:"lag"`
}

// ClusterShard is one shard as its leader sees it; Error says why no leader answered.
type ClusterShard struct {
	Shard   int             `json:"shard"`
	Leader  string          `json:"leader,omitempty"`
	Members []ClusterMember `json:"members,omitempty"`
	Error   string          `json:"error,omitempty"`
	// FromRecord: no leader answered (Error), and Members are the shard's replica-set
	// record in etcd, lags unknown.
	FromRecord bool `json:"from_record,omitempty"`
	// Closed: a shard added by AddShards that takes no root yet (its group is being built).
	Closed bool `json:"closed,omitempty"`
	// Roots is the number of agent roots placed on the shard.
	Roots int64 `json:"roots"`
	// StoredBytes and WriteRate are the leader's measures: the logical bytes of the
	// shard's live files, and the commands per second it applied over the last complete
	// minute; nil when no leader answered.
	StoredBytes *int64   `json:"stored_bytes,omitempty"`
	WriteRate   *float64 `json:"write_rate,omitempty"`
}

// ClusterStatus is the answer of GET /v1/admin/cluster: the cluster as the answering
// node sees it.
type ClusterStatus struct {
	ClusterID   string `json:"cluster_id"`
	Shards      int    `json:"shards"`
	Replication int    `json:"replication"`
	// Node is the id of the node that answered.
	Node string `json:"node"`
	// Controller is the node whose controller leads ("" when none does, or unknown).
	Controller string `json:"controller,omitempty"`
	// Nodes are the registered nodes, by id.
	Nodes       []ClusterNode  `json:"nodes"`
	ShardStatus []ClusterShard `json:"shard_status"`
	// Leaving are the nodes marked leaving (Decommission), by id.
	Leaving []string `json:"leaving,omitempty"`
	RawJSON
}

// Registered reports whether node id is registered (its lease is alive).
func (s *ClusterStatus) Registered(id string) bool {
	for _, n := range s.Nodes {
		if n.ID == id {
			return true
		}
	}
	return false
}

// ClusterStatus returns the cluster status of the node a is built on (its admin
// listener's URL).
//
// Errors: an *Error InvalidState wrapped with ErrNotCluster when the node is an embedded
// one; a NotFound wrapped with ErrNoAdminRoutes when the URL serves no admin route; other
// *Errors as the server answers.
func (a *Admin) ClusterStatus(ctx context.Context) (*ClusterStatus, error) {
	out, err := getJSON[ClusterStatus](ctx, a.tr, a.tr.base+AdminClusterPath)
	if err != nil {
		return nil, notCluster(a, AdminClusterPath, err)
	}
	return out, nil
}

// Staying counts the registered nodes not marked leaving: those a leaving node's
// replicas can move to.
func (s *ClusterStatus) Staying() int {
	n := 0
	for _, node := range s.Nodes {
		if !s.IsLeaving(node.ID) {
			n++
		}
	}
	return n
}

// IsLeaving reports whether node id is marked leaving.
func (s *ClusterStatus) IsLeaving(id string) bool { return slices.Contains(s.Leaving, id) }

// Replicas returns the shards whose members include node id, in shard order, and
// whether every shard's leader answered (when not, a shard that did not may hold one too).
func (s *ClusterStatus) Replicas(id string) (shards []int, complete bool) {
	var out []int
	complete = true
	for _, sh := range s.ShardStatus {
		if sh.Error != "" {
			complete = false
		}
		for _, m := range sh.Members {
			if m.ID == id {
				out = append(out, sh.Shard)
				break
			}
		}
	}
	return out, complete
}

// NodeLeaving is the answer of Decommission and Recommission: what the cluster knows of
// the node whose leaving mark changed.
type NodeLeaving struct {
	// Node is the node's full id (the call may name it by a prefix).
	Node    string `json:"node"`
	Leaving bool   `json:"leaving"`
	// Registered: the node's registration is live (it runs). Nil from a server that
	// does not say (an older release).
	Registered *bool `json:"registered,omitempty"`
	// Shards are the shards whose replica-set record lists the node.
	Shards []int `json:"shards,omitempty"`
	// WasLeaving: the node was marked leaving before the call. Nil from a server that
	// does not say.
	WasLeaving *bool `json:"was_leaving,omitempty"`
}

// Gone reports whether the server said the node is not registered and in no replica set:
// nothing to move, nothing to stop.
func (l *NodeLeaving) Gone() bool {
	return l.Registered != nil && !*l.Registered && len(l.Shards) == 0
}

// Decommission marks node leaving: the cluster's controller moves each of its replicas
// to another node and removes it from every shard, after which the node can be stopped
// for good. node is a node id the cluster knows, or a prefix only one such id starts with;
// the answer names the full id. Idempotent. Errors: ErrNotCluster-wrapped InvalidState on
// an embedded node; NotFound (details.field node) for an id the cluster does not know
// (nothing is marked); InvalidArguments for a bad id or a prefix of several ids;
// RoutingUnavailable (retryable) when etcd does not answer.
func (a *Admin) Decommission(ctx context.Context, node string) (*NodeLeaving, error) {
	var out NodeLeaving
	err := a.tr.postTool(ctx, a.tr.base+AdminLeavingPath, map[string]string{"node": node}, &out, replayable)
	if err != nil {
		return nil, notCluster(a, AdminLeavingPath, err)
	}
	return &out, nil
}

// Recommission clears node's leaving mark, so the controller may give it replicas again.
// node is named as Decommission's is (an id only marked leaving is known too); errors as
// Decommission's.
func (a *Admin) Recommission(ctx context.Context, node string) (*NodeLeaving, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, a.tr.base+AdminLeavingPath+"?node="+url.QueryEscape(node), nil)
	if err != nil {
		return nil, err
	}
	var out NodeLeaving
	if err := a.tr.doJSON(req, &out); err != nil {
		return nil, notCluster(a, AdminLeavingPath, err)
	}
	return &out, nil
}

// notCluster classifies the answer of the admin cluster route at path: the embedded
// node's refusal (409 InvalidState, details.reason not_a_cluster) is wrapped with
// ErrNotCluster; a 404 that names no field (the route is unknown there) with
// ErrNoAdminRoutes. Other errors are returned as they are.
func notCluster(a *Admin, path string, err error) error {
	var e *Error
	switch {
	case !errors.As(err, &e):
	case e.HTTPStatus == http.StatusConflict && e.Details["reason"] == "not_a_cluster":
		return fmt.Errorf("%s is an embedded node (cairn serve without --cluster): %w: %w", a.tr.base, ErrNotCluster, err)
	case e.HTTPStatus == http.StatusNotFound && e.Details["field"] == nil:
		return fmt.Errorf("%s answers 404 on %s: %w: %w", a.tr.base, path, ErrNoAdminRoutes, err)
	}
	return err
}

// MaxClusterShards is the most shards a cluster may have, grown or not (the server's
// bound, shard/control.MaxShards): AddShards past it answers InvalidArguments.
const MaxClusterShards = 4096

// AddShardsResult is the answer of POST /v1/admin/cluster/shards.
type AddShardsResult struct {
	// Shards is the cluster's shard count after the grow.
	Shards int `json:"shards"`
	// InitialShards is the count the cluster was created with.
	InitialShards int `json:"initial_shards"`
	// Added is how many shards the call added.
	Added int `json:"added"`
}

// AddShards adds add shards to the cluster a's admin listener belongs to. The controller
// then builds their Raft groups and opens them to placement (ClusterShard.Closed until
// then). expect is the count the caller read just before (ClusterStatus), which the server
// requires (at least 1; 0 is refused with InvalidArguments): a cluster with another one
// answers Conflict (details.current_shards) and changes nothing, which makes the call
// safe to send again (it is retried after a retryable answer).
//
// Errors: InvalidArguments (add < 1, or past the maximum count; expect < 1); Conflict; InvalidState
// (details.reason: not_a_cluster on an embedded node, upgrade_in_progress while a node
// runs an older release); RoutingUnavailable (retryable) when etcd does not answer.
func (a *Admin) AddShards(ctx context.Context, add, expect int) (*AddShardsResult, error) {
	safety := notReplayable
	if expect != 0 {
		safety = replayable
	}
	res, err := postJSON[AddShardsResult](ctx, a.tr, a.tr.base+AdminShardsPath, map[string]int{"add": add, "expect_shards": expect}, safety)
	return res, notCluster(a, AdminShardsPath, err)
}

// RebalanceSwitch is the cluster's rebalance switch: while Enabled, the elected controller
// moves roots from shards above the load threshold to the least loaded.
type RebalanceSwitch struct {
	Enabled bool `json:"enabled"`
	// Since is when the switch was last set; nil when it never was (off).
	Since *time.Time `json:"since"`
}

// Rebalance returns the cluster's rebalance switch. Errors as ClusterStatus's.
func (a *Admin) Rebalance(ctx context.Context) (*RebalanceSwitch, error) {
	out, err := getJSON[RebalanceSwitch](ctx, a.tr, a.tr.base+AdminRebalancePath)
	return out, notCluster(a, AdminRebalancePath, err)
}

// SetRebalance turns the cluster's rebalancer on or off and returns the switch as set.
// Setting it again to the same value is harmless. Errors as ClusterStatus's.
func (a *Admin) SetRebalance(ctx context.Context, enabled bool) (*RebalanceSwitch, error) {
	out, err := postJSON[RebalanceSwitch](ctx, a.tr, a.tr.base+AdminRebalancePath, map[string]bool{"enabled": enabled}, replayable)
	return out, notCluster(a, AdminRebalancePath, err)
}
