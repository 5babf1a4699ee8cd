package control

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/cairnstore/cairn/internal/pause"
)

// DefaultReplication is the replication factor of a cluster created without one.
const DefaultReplication = 3

// Config configures a Plane.
type Config struct {
	// Prefix is the etcd key prefix of the cluster, without a trailing slash; several
	// clusters can share one etcd under different prefixes. Default "/cairn".
	Prefix string
	// RequestTimeout bounds one etcd request; past it etcd counts as unavailable and the
	// call returns ErrControlPlaneUnavailable. Default 2s.
	RequestTimeout time.Duration
	// NodeTTL is the lease TTL of a node registration: a node that stops renewing it
	// disappears from the registry this long after its last renewal. Whole seconds, at
	// least 1s. Default 10s.
	NodeTTL time.Duration
	// Logger receives the control plane's warnings. Default slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{Prefix: "/cairn", RequestTimeout: 2 * time.Second, NodeTTL: 10 * time.Second}
}

// Validate reports the first field that cannot work.
func (c Config) Validate() error {
	if c.Prefix == "" || strings.HasSuffix(c.Prefix, "/") {
		return fmt.Errorf("%w: prefix %q must be non-empty and not end in '/'", ErrInvalidArgument, c.Prefix)
	}
	if c.RequestTimeout <= 0 {
		return fmt.Errorf("%w: request timeout must be positive, got %v", ErrInvalidArgument, c.RequestTimeout)
	}
	if c.NodeTTL < time.Second || c.NodeTTL%time.Second != 0 {
		return fmt.Errorf("%w: node TTL must be whole seconds, at least 1s, got %v", ErrInvalidArgument, c.NodeTTL)
	}
	return nil
}

func (c *Config) setDefaults() {
	d := DefaultConfig()
	if c.Prefix == "" {
		c.Prefix = d.Prefix
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.NodeTTL == 0 {
		c.NodeTTL = d.NodeTTL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// ClientConfig returns an etcd client configuration for the control plane. gRPC's default
// reconnect backoff grows to two minutes, which would keep a node off etcd long after etcd
// came back; this one retries at most reconnectMaxDelay apart. Keepalive pings (no more
// often than etcd's 5s minimum) notice a dead connection while nothing else is sent. TLS
// and credentials are the caller's to add.
func ClientConfig(endpoints []string) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2,
				MaxDelay: reconnectMaxDelay},
			MinConnectTimeout: time.Second,
		})},
	}
}

// reconnectMaxDelay bounds the pause between reconnect attempts to an etcd endpoint.
const reconnectMaxDelay = time.Second

// Plane is a handle on one cluster's control plane in etcd. It is safe for concurrent use
// and holds no goroutine of its own; the client belongs to the caller.
type Plane struct {
	cli *clientv3.Client
	cfg Config
	k   keys
}

// New returns a Plane over cli. Zero fields of cfg take their defaults.
func New(cli *clientv3.Client, cfg Config) (*Plane, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Plane{cli: cli, cfg: cfg, k: keys{cfg.Prefix}}, nil
}

// Client returns the etcd client the plane uses.
func (p *Plane) Client() *clientv3.Client { return p.cli }

// Config returns the plane's configuration with defaults filled in.
func (p *Plane) Config() Config { return p.cfg }

// keys builds the key layout documented in doc.go.
type keys struct{ prefix string }

func (k keys) cluster() string               { return k.prefix + "/cluster" }
func (k keys) nodes() string                 { return k.prefix + "/nodes/" }
func (k keys) node(id string) string         { return k.nodes() + id }
func (k keys) identity(id string) string     { return k.prefix + "/node-instances/" + id }
func (k keys) shards() string                { return k.prefix + "/shards/" }
func (k keys) shard(s int) string            { return k.shards() + strconv.Itoa(s) }
func (k keys) leaders() string               { return k.prefix + "/leaders/" }
func (k keys) leader(s int) string           { return k.leaders() + strconv.Itoa(s) }
func (k keys) roots() string                 { return k.prefix + "/roots/" }
func (k keys) root(r string) string          { return k.roots() + r }
func (k keys) loads() string                 { return k.prefix + "/load/" }
func (k keys) load(s int) string             { return k.loads() + strconv.Itoa(s) }
func (k keys) controller() string            { return k.prefix + "/controller" } // Election appends "/"
func (k keys) leaving() string               { return k.prefix + "/leaving/" }
func (k keys) rebalance() string             { return k.prefix + "/rebalance" }
func (k keys) leavingNode(id string) string  { return k.leaving() + id }
func shardOf(prefix, key string) (int, bool) { return parseShard(strings.TrimPrefix(key, prefix)) }

func parseShard(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// withTimeout runs f under the plane's request timeout and maps its error (wrapErr).
func (p *Plane) withTimeout(ctx context.Context, op string, f func(ctx context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	return wrapErr(ctx, op, f(rctx))
}

// get reads key (with opts) under the plane's request timeout; op names the read in its
// error (wrapErr).
func (p *Plane) get(ctx context.Context, op, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	var resp *clientv3.GetResponse
	err := p.withTimeout(ctx, op, func(ctx context.Context) (err error) {
		resp, err = p.cli.Get(ctx, key, opts...)
		return err
	})
	return resp, err
}

// ClusterSpec is what a node asks for when it creates or joins a cluster.
type ClusterSpec struct {
	// Shards is the number of shards at creation. Joining, it must be the cluster's count
	// at creation or its count now (a grow, GrowShards, raises it); 0 joins an existing
	// cluster whatever its count (ErrClusterNotCreated when there is none).
	Shards int
	// Replication is the number of replicas per shard. 0 means DefaultReplication when
	// creating and "whatever it is" when joining.
	Replication int
	// Blob names the object store every replica reads ("s3://bucket/prefix"): a node
	// configured with another one would acknowledge writes no other node can read. ""
	// skips the check (and records nothing when creating).
	Blob string
}

// Cluster is the cluster's metadata, created once.
type Cluster struct {
	ID string `json:"id"`
	// Shards is the number of shards now: the count at creation until a grow
	// (GrowShards) raised it.
	Shards int `json:"shards"`
	// InitialShards is the count at creation, recorded by the first grow (0: never grown,
	// Shards is the count at creation). A node started with --shards naming it joins a
	// grown cluster.
	InitialShards int       `json:"initial_shards,omitempty"`
	Replication   int       `json:"replication"`
	Blob          string    `json:"blob,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}

// MaxShards bounds the shard count, at creation and after every grow: a node hosts tens of
// shards (docs/architecture.md#replication-and-placement). api/client.MaxClusterShards
// states it to callers (a test compares them).
const MaxShards = 4096

// CreateCluster creates the cluster metadata if absent (a transaction that succeeds only if
// the key is absent), or checks the existing one against spec. It returns the metadata in
// force. Errors: *MismatchError (ErrClusterMismatch) when the cluster exists with another
// shard count (neither its count at creation nor its count now), replication factor or blob store; ErrClusterNotCreated when spec.Shards is 0 and there
// is no cluster; ErrInvalidArgument; ErrControlPlaneUnavailable.
func (p *Plane) CreateCluster(ctx context.Context, spec ClusterSpec) (Cluster, error) {
	if spec.Shards < 0 || spec.Shards > MaxShards {
		return Cluster{}, fmt.Errorf("%w: shards must be in [1, %d] (0 joins an existing cluster), got %d", ErrInvalidArgument, MaxShards, spec.Shards)
	}
	if spec.Replication < 0 {
		return Cluster{}, fmt.Errorf("%w: replication must be at least 1, got %d", ErrInvalidArgument, spec.Replication)
	}
	if spec.Shards == 0 {
		c, err := p.Cluster(ctx)
		if err != nil {
			return Cluster{}, err
		}
		return c, checkSpec(c, spec)
	}
	want := Cluster{ID: uuid.NewString(), Shards: spec.Shards, Replication: spec.Replication, Blob: spec.Blob,
		CreatedAt: time.Now().UTC()}
	if want.Replication == 0 {
		want.Replication = DefaultReplication
	}
	val, err := json.Marshal(want)
	if err != nil {
		return Cluster{}, err
	}
	var resp *clientv3.TxnResponse
	err = p.withTimeout(ctx, "create cluster", func(ctx context.Context) (err error) {
		key := p.k.cluster()
		resp, err = p.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(val))).Else(clientv3.OpGet(key)).Commit()
		return err
	})
	if err != nil {
		return Cluster{}, err
	}
	if resp.Succeeded {
		return want, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 { // deleted between the compare and the get: impossible in one txn
		return Cluster{}, fmt.Errorf("control: create cluster: %w", ErrClusterNotCreated)
	}
	var got Cluster
	if err := json.Unmarshal(kvs[0].Value, &got); err != nil {
		return Cluster{}, fmt.Errorf("control: cluster metadata %q: %w", kvs[0].Key, err)
	}
	return got, checkSpec(got, spec)
}

func checkSpec(c Cluster, spec ClusterSpec) error {
	if spec.Shards != 0 && spec.Shards != c.Shards && spec.Shards != c.Created() {
		existing := strconv.Itoa(c.Shards)
		if c.Created() != c.Shards {
			existing = strconv.Itoa(c.Created()) + " or " + existing
		}
		return &MismatchError{Field: "shards", Existing: existing, Requested: strconv.Itoa(spec.Shards)}
	}
	if spec.Replication != 0 && spec.Replication != c.Replication {
		return &MismatchError{Field: "replication", Existing: strconv.Itoa(c.Replication), Requested: strconv.Itoa(spec.Replication)}
	}
	if spec.Blob != "" && c.Blob != "" && spec.Blob != c.Blob {
		return &MismatchError{Field: "blob", Existing: c.Blob, Requested: spec.Blob}
	}
	return nil
}

// Cluster reads the cluster metadata. ErrClusterNotCreated when absent.
func (p *Plane) Cluster(ctx context.Context) (Cluster, error) {
	resp, err := p.get(ctx, "read cluster", p.k.cluster())
	if err != nil {
		return Cluster{}, err
	}
	if len(resp.Kvs) == 0 {
		return Cluster{}, ErrClusterNotCreated
	}
	var c Cluster
	if err := json.Unmarshal(resp.Kvs[0].Value, &c); err != nil {
		return Cluster{}, fmt.Errorf("control: cluster metadata: %w", err)
	}
	return c, nil
}

// ReplicaSet is the record of which nodes host replicas of a shard. The controller writes
// it before it changes the shard's Raft configuration, so a node listed here should open
// (or keep) a replica of the shard; Voters and Nonvoters mirror the Raft roles.
type ReplicaSet struct {
	Voters    []string `json:"voters"`
	Nonvoters []string `json:"nonvoters"`
	// Epoch counts the shard's recoveries from a lost majority (RecoverRecord): a replica
	// whose directory predates the current epoch holds a log of the group before the
	// recovery and must start empty (shard/host). 0 until the first recovery.
	Epoch uint64 `json:"epoch,omitempty"`
	// Revision is the etcd mod revision the record was read at (0: no record); the
	// controller's write is conditional on it.
	Revision int64 `json:"-"`
}

// Members returns voters then non-voters.
func (r ReplicaSet) Members() []string {
	return append(append([]string(nil), r.Voters...), r.Nonvoters...)
}

// Has reports whether node is a voter or non-voter of the set.
func (r ReplicaSet) Has(node string) bool {
	return slices.Contains(r.Voters, node) || slices.Contains(r.Nonvoters, node)
}

// ReplicaSets reads every shard's record, keyed by shard. A shard without a record is
// absent from the map.
func (p *Plane) ReplicaSets(ctx context.Context) (map[int]ReplicaSet, error) {
	resp, err := p.get(ctx, "read replica sets", p.k.shards(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make(map[int]ReplicaSet, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		s, ok := shardOf(p.k.shards(), string(kv.Key))
		if !ok {
			continue
		}
		var rs ReplicaSet
		if err := json.Unmarshal(kv.Value, &rs); err != nil {
			return nil, fmt.Errorf("control: replica set %q: %w", kv.Key, err)
		}
		rs.Revision = kv.ModRevision
		out[s] = rs
	}
	return out, nil
}

// WatchReplicaSets delivers the full map of records now and after every change, until ctx
// ends; a slow reader gets the latest map, not every intermediate one. Nodes use it to
// open the replicas they are listed in and close the others.
func (p *Plane) WatchReplicaSets(ctx context.Context) <-chan map[int]ReplicaSet {
	return watchMap(ctx, p, p.k.shards(), p.shardKey(p.k.shards()), func(val []byte, rev int64) (ReplicaSet, bool) {
		var rs ReplicaSet
		if json.Unmarshal(val, &rs) != nil {
			return rs, false
		}
		rs.Revision = rev
		return rs, true
	})
}

// shardKey returns a key decoder for keys "<prefix><shard>".
func (p *Plane) shardKey(prefix string) func(string) (int, bool) {
	return func(key string) (int, bool) { return shardOf(prefix, key) }
}

// LeaderHint says which node last claimed leadership of a shard. Advisory: routing tries
// it first and falls back on NotLeader answers.
type LeaderHint struct {
	Node      string    `json:"node"`
	Term      uint64    `json:"term"`
	UpdatedAt time.Time `json:"updated_at"`
}

// LeaderHints reads every shard's hint, keyed by shard.
func (p *Plane) LeaderHints(ctx context.Context) (map[int]LeaderHint, error) {
	resp, err := p.get(ctx, "read leader hints", p.k.leaders(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make(map[int]LeaderHint, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		s, ok := shardOf(p.k.leaders(), string(kv.Key))
		var h LeaderHint
		if ok && json.Unmarshal(kv.Value, &h) == nil {
			out[s] = h
		}
	}
	return out, nil
}

// WatchLeaderHints delivers the full map of hints now and after every change, until ctx
// ends (latest map wins, as WatchReplicaSets).
func (p *Plane) WatchLeaderHints(ctx context.Context) <-chan map[int]LeaderHint {
	return watchMap(ctx, p, p.k.leaders(), p.shardKey(p.k.leaders()), func(val []byte, _ int64) (LeaderHint, bool) {
		var h LeaderHint
		return h, json.Unmarshal(val, &h) == nil
	})
}

// retryBackoff is the pause between attempts of a background loop whose etcd call failed.
const retryBackoff = 200 * time.Millisecond

// watchPrefix follows the keys under prefix: reset gets a full listing (first, and again
// after any watch failure: compaction, etcd restart, lost leader), then apply gets every
// change after it, one watch response at a time. It returns when ctx ends.
func watchPrefix(ctx context.Context, p *Plane, prefix string,
	reset func(kvs []*mvccpb.KeyValue), apply func(evs []*clientv3.Event)) {
	for ctx.Err() == nil {
		resp, err := p.get(ctx, "list "+prefix, prefix, clientv3.WithPrefix())
		if err != nil {
			pause.For(ctx, retryBackoff)
			continue
		}
		reset(resp.Kvs)
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range p.cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
			if wr.Err() != nil {
				break
			}
			apply(wr.Events)
		}
		cancel()
		pause.For(ctx, retryBackoff)
	}
}

// watchMap keeps a map of the keys under prefix, decoded by keyOf and decode (entries
// either rejects are left out), and delivers a copy after every listing and watch
// response, so a consumer always converges on etcd's state. The channel has room for one
// map; a newer map replaces an unread one. The channel is closed when ctx ends.
func watchMap[K comparable, V any](ctx context.Context, p *Plane, prefix string,
	keyOf func(key string) (K, bool), decode func(val []byte, modRev int64) (V, bool)) <-chan map[K]V {
	ch := make(chan map[K]V, 1)
	m := map[K]V{}
	publish := func() {
		c := make(map[K]V, len(m))
		for k, v := range m {
			c[k] = v
		}
		select {
		case ch <- c:
		default:
			select {
			case <-ch:
			default:
			}
			ch <- c
		}
	}
	set := func(key string, val []byte, modRev int64, put bool) {
		k, ok := keyOf(key)
		if !ok {
			return
		}
		if v, vok := decode(val, modRev); vok && put {
			m[k] = v
		} else {
			delete(m, k)
		}
	}
	go func() {
		defer close(ch)
		watchPrefix(ctx, p, prefix, func(kvs []*mvccpb.KeyValue) {
			clear(m)
			for _, kv := range kvs {
				set(string(kv.Key), kv.Value, kv.ModRevision, true)
			}
			publish()
		}, func(evs []*clientv3.Event) {
			for _, ev := range evs {
				set(string(ev.Kv.Key), ev.Kv.Value, ev.Kv.ModRevision, ev.Type == clientv3.EventTypePut)
			}
			publish()
		})
	}()
	return ch
}
