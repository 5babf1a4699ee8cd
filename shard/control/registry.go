package control

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/cairnstore/cairn/internal/pause"
	"github.com/cairnstore/cairn/meta"
)

// NodeInfo is what a node publishes about itself in the registry.
type NodeInfo struct {
	// ClientURL is where clients reach the node's REST/MCP surface (--advertise-client).
	ClientURL string `json:"client_url"`
	// PeerAddr is the node's Raft and forwarding address (--advertise-peer); it is the
	// Raft server address of every replica the node hosts.
	PeerAddr  string    `json:"peer_addr"`
	StartedAt time.Time `json:"started_at"`
	// Instance identifies the node's data directory (a UUID kept in it). A registration
	// of the same node id from another data directory is refused while this one is
	// live: two processes must never act as one Raft server. "" skips the check.
	Instance string `json:"instance,omitempty"`
	// ClusterVersion is the newest cluster version the node's binary applies
	// (meta.ClusterVersion); 0, from a release before the field existed, means 1. A
	// command needing a newer version is not proposed to a shard with such a member.
	ClusterVersion int `json:"cluster_version,omitempty"`
}

// NodeSet is the registry at one moment: node id → what it published.
type NodeSet map[string]NodeInfo

// validNodeID checks a node id: non-empty, at most 128 bytes, no '/' (it is a key
// component), printable ASCII.
func validNodeID(id string) error {
	if id == "" || len(id) > 128 {
		return Refuse(ErrInvalidArgument, "node id must be 1 to 128 bytes, got %d", len(id))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || c == '/' {
			return Refuse(ErrInvalidArgument, "node id %q: byte %d is %s (printable ASCII, no '/')", id, i, meta.DescribeChar(id[i:]))
		}
	}
	return nil
}

// Nodes lists the registered nodes and the etcd revision of the listing.
func (p *Plane) Nodes(ctx context.Context) (NodeSet, int64, error) {
	resp, err := p.get(ctx, "list nodes", p.k.nodes(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	out := make(NodeSet, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var n NodeInfo
		if json.Unmarshal(kv.Value, &n) == nil {
			out[strings.TrimPrefix(string(kv.Key), p.k.nodes())] = n
		}
	}
	return out, resp.Header.Revision, nil
}

// WatchNodes delivers the full registry now and after every change (a node joining,
// leaving, or its lease expiring), until ctx ends; a slow reader gets the latest set, not
// every intermediate one. The channel is closed when ctx ends.
func (p *Plane) WatchNodes(ctx context.Context) <-chan NodeSet {
	src := watchMap(ctx, p, p.k.nodes(), func(key string) (string, bool) {
		return strings.TrimPrefix(key, p.k.nodes()), true
	}, func(val []byte, _ int64) (NodeInfo, bool) {
		var n NodeInfo
		return n, json.Unmarshal(val, &n) == nil
	})
	out := make(chan NodeSet, 1)
	go func() {
		defer close(out)
		for m := range src {
			select {
			case <-out:
			default:
			}
			out <- NodeSet(m)
		}
	}()
	return out
}

// Registration keeps a node's key in the registry, bound to a lease it renews. When the
// lease is lost (etcd unreachable for longer than the TTL), it registers again with a new
// lease as soon as etcd answers, and re-publishes the leader hints it holds. Close removes
// the key at once.
type Registration struct {
	p        *Plane
	id       string
	info     []byte
	instance string // NodeInfo.Instance

	mu    sync.Mutex
	sess  *concurrency.Session // nil while re-registering
	hints map[int]LeaderHint   // hints this node published, re-put after a new lease

	cancel context.CancelFunc
	done   chan struct{}
}

// Register publishes info under <prefix>/nodes/<id>, bound to a lease of Config.NodeTTL,
// and keeps it alive until Close. It returns once the key is written. An existing key of
// the same id (this node's previous process, whose lease has not expired yet) is
// overwritten and moves to the new lease. Errors: ErrInvalidArgument,
// ErrControlPlaneUnavailable.
func (p *Plane) Register(ctx context.Context, id string, info NodeInfo) (*Registration, error) {
	if err := validNodeID(id); err != nil {
		return nil, err
	}
	val, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	if err := p.bindInstance(ctx, id, info.Instance); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &Registration{p: p, id: id, info: val, instance: info.Instance, hints: map[int]LeaderHint{}, cancel: cancel, done: make(chan struct{})}
	sess, err := r.register(ctx, rctx)
	if err != nil {
		cancel()
		return nil, err
	}
	r.sess = sess
	go r.keep(rctx, sess)
	return r, nil
}

// bindInstance records, once and for good, that node id belongs to the data directory
// instance (a key with no lease), or checks that it does. A node id is a Raft server id in
// every shard: a node that lost its data directory and came back under the same id would
// count as a voter that still holds the entries it acknowledged, and could help elect a
// replica that lacks them (an acknowledged write lost). Such a node must join under a new
// id. "" skips the check. Errors: ErrNodeIDInUse, ErrControlPlaneUnavailable.
func (p *Plane) bindInstance(ctx context.Context, id, instance string) error {
	if instance == "" {
		return nil
	}
	key := p.k.identity(id)
	var resp *clientv3.TxnResponse
	err := p.withTimeout(ctx, "bind node id", func(ctx context.Context) (err error) {
		resp, err = p.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, instance)).Else(clientv3.OpGet(key)).Commit()
		return err
	})
	if err != nil || resp.Succeeded {
		return err
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 && string(kvs[0].Value) != instance {
		return fmt.Errorf("%w: node %s belongs to data directory instance %s, not %s (a node that lost its data directory joins under a new id)",
			ErrNodeIDInUse, id, kvs[0].Value, instance)
	}
	return nil
}

// ID returns the registered node id.
func (r *Registration) ID() string { return r.id }

// Lease returns the lease the node's keys are bound to now (0 while re-registering).
func (r *Registration) Lease() clientv3.LeaseID {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sess == nil {
		return clientv3.NoLease
	}
	return r.sess.Lease()
}

// register grants a lease, starts renewing it under life, and puts the node key and the
// held hints on it.
func (r *Registration) register(ctx, life context.Context) (*concurrency.Session, error) {
	ttl := int64(r.p.cfg.NodeTTL / time.Second)
	var lease clientv3.LeaseID
	err := r.p.withTimeout(ctx, "grant node lease", func(ctx context.Context) error {
		resp, err := r.p.cli.Grant(ctx, ttl)
		if err == nil {
			lease = resp.ID
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sess, err := concurrency.NewSession(r.p.cli, concurrency.WithLease(lease), concurrency.WithTTL(int(ttl)),
		concurrency.WithContext(life))
	if err != nil {
		return nil, wrapErr(ctx, "keep node lease alive", err)
	}
	key := r.p.k.node(r.id)
	err = r.p.withTimeout(ctx, "register node", func(ctx context.Context) error {
		put := clientv3.OpPut(key, string(r.info), clientv3.WithLease(lease))
		resp, err := r.p.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(put).Else(clientv3.OpGet(key)).Commit()
		if err != nil || resp.Succeeded {
			return err
		}
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			var cur NodeInfo
			if json.Unmarshal(kvs[0].Value, &cur) == nil && cur.Instance != "" && r.instance != "" && cur.Instance != r.instance {
				return fmt.Errorf("%w: node %s is registered from another data directory (instance %s, client %s) whose lease is live",
					ErrNodeIDInUse, r.id, cur.Instance, cur.ClientURL)
			}
		}
		// This data directory's earlier registration (a restart before its lease ran
		// out): take the key over.
		_, err = r.p.cli.Txn(ctx).Then(put).Commit()
		return err
	})
	if err != nil {
		sess.Orphan() // the lease expires by itself
		return nil, err
	}
	// The hints this node held when its lease was lost go back only where no newer leader
	// has published since: a node that stalled past its lease must not overwrite the
	// hints of the leaders elected meanwhile.
	r.mu.Lock()
	held := maps.Clone(r.hints)
	r.mu.Unlock()
	for s, h := range held {
		if err := r.putHint(ctx, s, h, lease); err != nil {
			r.p.cfg.Logger.Warn("control: re-publishing a leader hint", "shard", s, "err", err)
		}
	}
	return sess, nil
}

// keep waits for the session to end and registers again until Close.
func (r *Registration) keep(life context.Context, sess *concurrency.Session) {
	defer close(r.done)
	for {
		select {
		case <-life.Done():
			return
		case <-sess.Done():
		}
		if life.Err() != nil { // Close ended the session: it revokes the lease
			return
		}
		r.mu.Lock()
		r.sess = nil
		r.mu.Unlock()
		r.p.cfg.Logger.Warn("control: node lease lost; registering again", "node", r.id)
		for {
			s, err := r.register(life, life)
			if err == nil {
				sess = s
				break
			}
			if life.Err() != nil {
				return
			}
			pause.For(life, retryBackoff)
		}
		r.mu.Lock()
		r.sess = sess
		r.mu.Unlock()
	}
}

// Close stops renewing the lease and revokes it, which deletes the node key and the
// leader hints bound to it. It waits for the renewal goroutine. A revoke that etcd does
// not answer is reported; the key then expires with the lease.
func (r *Registration) Close() error {
	r.cancel()
	<-r.done
	r.mu.Lock()
	sess := r.sess
	r.sess = nil
	r.mu.Unlock()
	if sess == nil {
		return nil
	}
	return r.p.withTimeout(context.Background(), "revoke node lease", func(ctx context.Context) error {
		_, err := r.p.cli.Revoke(ctx, sess.Lease())
		return err
	})
}

// SetLeaderHint publishes that this node leads shard in Raft term term. The hint is bound
// to the node's lease, so it disappears with the node, and is re-published after a lease
// is lost and re-granted. A hint with a higher term already in etcd is left alone (a
// slow, deposed leader cannot hide the new one). Errors: ErrControlPlaneUnavailable.
func (r *Registration) SetLeaderHint(ctx context.Context, shard int, term uint64) error {
	h := LeaderHint{Node: r.id, Term: term, UpdatedAt: time.Now().UTC()}
	r.mu.Lock()
	r.hints[shard] = h
	r.mu.Unlock()
	lease := r.Lease()
	if lease == clientv3.NoLease {
		return fmt.Errorf("%w: set leader hint: node lease is being re-granted", ErrControlPlaneUnavailable)
	}
	return r.putHint(ctx, shard, h, lease)
}

// putHint writes hint h of shard under lease unless the stored hint has a higher term
// (then this node forgets its own: a newer leader exists).
func (r *Registration) putHint(ctx context.Context, shard int, h LeaderHint, lease clientv3.LeaseID) error {
	val, _ := json.Marshal(h)
	key := r.p.k.leader(shard)
	for {
		cur, err := r.p.get(ctx, "read leader hint", key)
		if err != nil {
			return err
		}
		var rev int64
		if len(cur.Kvs) == 1 {
			var old LeaderHint
			if json.Unmarshal(cur.Kvs[0].Value, &old) == nil && old.Term > h.Term {
				r.mu.Lock()
				delete(r.hints, shard)
				r.mu.Unlock()
				return nil
			}
			rev = cur.Kvs[0].ModRevision
		}
		var resp *clientv3.TxnResponse
		err = r.p.withTimeout(ctx, "write leader hint", func(ctx context.Context) (err error) {
			resp, err = r.p.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
				Then(clientv3.OpPut(key, string(val), clientv3.WithLease(lease))).Commit()
			return err
		})
		if err != nil || resp.Succeeded {
			return err
		}
	}
}

// ClearLeaderHint removes this node's hint for shard (it stepped down); a hint naming
// another node is left alone.
func (r *Registration) ClearLeaderHint(ctx context.Context, shard int) error {
	r.mu.Lock()
	h, ok := r.hints[shard]
	delete(r.hints, shard)
	r.mu.Unlock()
	if !ok {
		return nil
	}
	val, _ := json.Marshal(h)
	key := r.p.k.leader(shard)
	return r.p.withTimeout(ctx, "clear leader hint", func(ctx context.Context) error {
		_, err := r.p.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", string(val))).
			Then(clientv3.OpDelete(key)).Commit()
		return err
	})
}
