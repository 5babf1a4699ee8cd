package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/internal/pause"
)

// EtcdKeysPrefix is where a cluster's keys live under its control-plane prefix
// (shard/control): <prefix>/keys/<id> = the Key as JSON.
const EtcdKeysPrefix = "/keys/"

// etcdRequestTimeout bounds one etcd call of the store.
const etcdRequestTimeout = 5 * time.Second

// etcdRetryPause is the pause before the cache lists again after its watch failed.
const etcdRetryPause = 200 * time.Millisecond

// EtcdStore keeps a cluster's keys in etcd, one key per API key, and serves Lookup from
// a cache that a watch keeps current: a revocation reaches every node's cache as fast as
// etcd delivers the event (milliseconds), and a request never reads etcd. The cache
// lists the prefix again after any watch failure (compaction, lost leader, etcd restart).
type EtcdStore struct {
	cli    *clientv3.Client
	prefix string

	mu     sync.RWMutex
	keys   map[string]cached
	synced chan struct{}
	once   sync.Once

	cancel context.CancelFunc
	done   chan struct{}
}

type cached struct {
	key Key
	rev int64 // etcd mod revision
}

// OpenEtcdStore opens the keys under clusterPrefix+EtcdKeysPrefix (clusterPrefix is the
// control plane's, "/cairn" by default) and waits, within ctx, until the cache holds
// every key stored before. The client stays the caller's. Errors: ErrStoreUnavailable
// when etcd does not answer within ctx.
func OpenEtcdStore(ctx context.Context, cli *clientv3.Client, clusterPrefix string) (*EtcdStore, error) {
	wctx, cancel := context.WithCancel(context.Background())
	s := &EtcdStore{cli: cli, prefix: clusterPrefix + EtcdKeysPrefix, keys: map[string]cached{},
		synced: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go s.follow(wctx)
	select {
	case <-s.synced:
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("%w: etcd: list %s: %v", ErrStoreUnavailable, s.prefix, ctx.Err())
	}
}

// follow keeps the cache equal to etcd's keys until ctx ends.
func (s *EtcdStore) follow(ctx context.Context) {
	defer close(s.done)
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, etcdRequestTimeout)
		resp, err := s.cli.Get(rctx, s.prefix, clientv3.WithPrefix())
		cancel()
		if err != nil {
			pause.For(ctx, etcdRetryPause)
			continue
		}
		fresh := map[string]cached{}
		for _, kv := range resp.Kvs {
			if k, ok := decodeKey(kv.Value); ok {
				fresh[k.ID] = cached{key: k, rev: kv.ModRevision}
			}
		}
		s.mu.Lock()
		s.keys = fresh
		s.mu.Unlock()
		s.once.Do(func() { close(s.synced) })
		wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range s.cli.Watch(wctx, s.prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				id := strings.TrimPrefix(string(ev.Kv.Key), s.prefix)
				if ev.Type == clientv3.EventTypeDelete {
					s.mu.Lock()
					delete(s.keys, id)
					s.mu.Unlock()
					continue
				}
				if k, ok := decodeKey(ev.Kv.Value); ok && k.ID == id {
					s.remember(k, ev.Kv.ModRevision)
				}
			}
		}
		wcancel()
		pause.For(ctx, etcdRetryPause)
	}
}

// remember caches k at mod revision rev unless the cache holds a newer one.
func (s *EtcdStore) remember(k Key, rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.keys[k.ID]; !ok || c.rev < rev {
		s.keys[k.ID] = cached{key: k, rev: rev}
	}
}

func decodeKey(b []byte) (Key, bool) {
	var k Key
	if json.Unmarshal(b, &k) != nil || checkRecord(k) != nil {
		return Key{}, false
	}
	return k, true
}

// Create implements Store: a transaction that succeeds only if the id is absent.
func (s *EtcdStore) Create(ctx context.Context, k Key) error {
	if err := checkRecord(k); err != nil {
		return err
	}
	val, err := json.Marshal(k)
	if err != nil {
		return err
	}
	key := s.prefix + k.ID
	rctx, cancel := context.WithTimeout(ctx, etcdRequestTimeout)
	defer cancel()
	resp, err := s.cli.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val))).Commit()
	if err != nil {
		return fmt.Errorf("%w: etcd: create key %s: %v", ErrStoreUnavailable, k.ID, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("key %s: %w", k.ID, ErrKeyExists)
	}
	// This node knows its own write at once; the watch brings it to the others.
	s.remember(k, resp.Header.Revision)
	return nil
}

// Lookup implements Store, from the cache.
func (s *EtcdStore) Lookup(id string) (Key, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.keys[id]
	if !ok {
		return Key{}, fmt.Errorf("key %s: %w", id, ErrKeyNotFound)
	}
	return c.key, nil
}

// List implements Store, reading etcd (an operator's call, not a request's).
func (s *EtcdStore) List(ctx context.Context) ([]Key, error) {
	rctx, cancel := context.WithTimeout(ctx, etcdRequestTimeout)
	defer cancel()
	resp, err := s.cli.Get(rctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("%w: etcd: list keys: %v", ErrStoreUnavailable, err)
	}
	out := make([]Key, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if k, ok := decodeKey(kv.Value); ok {
			out = append(out, k)
		}
	}
	sortKeys(out)
	return out, nil
}

// Revoke implements Store: a read, then a write conditional on the record being
// unchanged since (retried once per concurrent change).
func (s *EtcdStore) Revoke(ctx context.Context, id string, at time.Time) (Key, error) {
	key := s.prefix + id
	for {
		rctx, cancel := context.WithTimeout(ctx, etcdRequestTimeout)
		resp, err := s.cli.Get(rctx, key)
		cancel()
		if err != nil {
			return Key{}, fmt.Errorf("%w: etcd: read key %s: %v", ErrStoreUnavailable, id, err)
		}
		if len(resp.Kvs) == 0 {
			return Key{}, fmt.Errorf("key %s: %w", id, ErrKeyNotFound)
		}
		k, ok := decodeKey(resp.Kvs[0].Value)
		if !ok {
			return Key{}, fmt.Errorf("key %s: the stored record does not parse", id)
		}
		if !k.RevokedAt.IsZero() {
			return k, nil
		}
		k = revoked(k, at)
		val, err := json.Marshal(k)
		if err != nil {
			return Key{}, err
		}
		rctx, cancel = context.WithTimeout(ctx, etcdRequestTimeout)
		tr, err := s.cli.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
			Then(clientv3.OpPut(key, string(val))).Commit()
		cancel()
		if err != nil {
			return Key{}, fmt.Errorf("%w: etcd: revoke key %s: %v", ErrStoreUnavailable, id, err)
		}
		if tr.Succeeded {
			s.remember(k, tr.Header.Revision)
			return k, nil
		}
		if ctx.Err() != nil {
			return Key{}, fmt.Errorf("%w: revoke key %s: %v", ErrStoreUnavailable, id, ctx.Err())
		}
	}
}

// Close stops the watch and waits for it; the client stays open.
func (s *EtcdStore) Close() error {
	s.cancel()
	<-s.done
	return nil
}
