package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/internal/pause"
	"github.com/cairnstore/cairn/meta"
)

// rootRecord is the value of <prefix>/roots/<root>.
type rootRecord struct {
	Shard int `json:"shard"`
}

// Placement maps roots to shards. Answers are cached; a background watch keeps the cache
// filled with every placed root and follows a root's move to another shard (the only
// change a placement sees, move.go), so roots placed by any node keep resolving while etcd
// is unreachable. A node that meets a shard refusing a moved root re-reads it (Refresh).
type Placement struct {
	p      *Plane
	shards atomic.Int64 // the cluster's shard count as last seen: it only grows (grow.go)

	mu     sync.RWMutex
	cache  map[string]int
	synced chan struct{} // closed after the first full listing
	once   sync.Once

	cancel context.CancelFunc
	done   chan struct{}
}

// NewPlacement starts a placement map for cluster c (its shard count bounds every answer
// until a larger one is seen: SetShards, or a placement or resolve that reads a grown
// record). It returns at once; the cache fills in the background (WaitSynced). Close
// stops it.
func (p *Plane) NewPlacement(c Cluster) *Placement {
	ctx, cancel := context.WithCancel(context.Background())
	pl := &Placement{p: p, cache: map[string]int{}, synced: make(chan struct{}),
		cancel: cancel, done: make(chan struct{})}
	pl.SetShards(c.Shards)
	go func() {
		defer close(pl.done)
		// A listing or a put adds to the cache or replaces a moved root's shard; a deleted
		// root (which Cairn never deletes) stays cached.
		add := func(key string, val []byte) {
			if s, err := pl.decode(val); err == nil {
				pl.remember(strings.TrimPrefix(key, p.k.roots()), s)
			}
		}
		watchPrefix(ctx, p, p.k.roots(), func(kvs []*mvccpb.KeyValue) {
			for _, kv := range kvs {
				add(string(kv.Key), kv.Value)
			}
			pl.once.Do(func() { close(pl.synced) })
		}, func(evs []*clientv3.Event) {
			for _, ev := range evs {
				if ev.Type == clientv3.EventTypePut {
					add(string(ev.Kv.Key), ev.Kv.Value)
				}
			}
		})
	}()
	return pl
}

// SetShards tells the placement the cluster's shard count (a node following the cluster
// record, WatchCluster); a count below the one it knows is ignored: the count only grows.
func (pl *Placement) SetShards(n int) {
	for {
		cur := pl.shards.Load()
		if int64(n) <= cur || pl.shards.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// Shards returns the shard count the placement knows.
func (pl *Placement) Shards() int { return int(pl.shards.Load()) }

// Close stops the background watch and waits for it.
func (pl *Placement) Close() {
	pl.cancel()
	<-pl.done
}

// WaitSynced waits until the cache holds every root placed before the call's listing.
func (pl *Placement) WaitSynced(ctx context.Context) error {
	select {
	case <-pl.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cached returns the root's shard if the cache knows it.
func (pl *Placement) Cached(root string) (int, bool) {
	pl.mu.RLock()
	defer pl.mu.RUnlock()
	s, ok := pl.cache[root]
	return s, ok
}

func (pl *Placement) remember(root string, shard int) {
	pl.mu.Lock()
	pl.cache[root] = shard
	pl.mu.Unlock()
}

func validRoot(root string) error {
	if e := meta.ValidateName("root", root); e != nil {
		return fmt.Errorf("%w: %s", ErrInvalidArgument, e.Message)
	}
	return nil
}

// Resolve returns the shard of a placed root: from the cache, else from etcd (Refresh).
// Errors: ErrRootNotPlaced, ErrInvalidArgument, ErrControlPlaneUnavailable (etcd
// unreachable and the root not cached).
func (pl *Placement) Resolve(ctx context.Context, root string) (int, error) {
	if s, ok := pl.Cached(root); ok {
		return s, nil
	}
	return pl.Refresh(ctx, root)
}

// Refresh reads root's shard from etcd and replaces what the cache holds: a node that
// met a shard answering that the root moved (NotOwner, RootMoving) learns its new shard
// at once instead of waiting for the watch. Errors: ErrRootNotPlaced, ErrInvalidArgument,
// ErrControlPlaneUnavailable.
func (pl *Placement) Refresh(ctx context.Context, root string) (int, error) {
	if err := validRoot(root); err != nil {
		return 0, err
	}
	resp, err := pl.p.get(ctx, "resolve root", pl.p.k.root(root))
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, fmt.Errorf("root %q: %w", root, ErrRootNotPlaced)
	}
	s, err := pl.decodeFresh(ctx, resp.Kvs[0].Value)
	if err != nil {
		return 0, err
	}
	pl.remember(root, s)
	return s, nil
}

// decodeFresh decodes a root record; one that names a shard beyond the known count (placed
// on a shard a grow added since this node last read the count) is decoded again after
// reading the cluster record.
func (pl *Placement) decodeFresh(ctx context.Context, val []byte) (int, error) {
	s, err := pl.decode(val)
	if !errors.Is(err, errBeyondCount) {
		return s, err
	}
	c, err := pl.p.Cluster(ctx)
	if err != nil {
		return 0, err
	}
	pl.SetShards(c.Shards)
	return pl.decode(val)
}

// errBeyondCount: a root record names a shard at or past the count the placement knows.
var errBeyondCount = errors.New("control: root record names a shard beyond the known count")

func (pl *Placement) decode(val []byte) (int, error) {
	var rec rootRecord
	if err := json.Unmarshal(val, &rec); err != nil {
		return 0, fmt.Errorf("control: root record: %w", err)
	}
	if n := pl.Shards(); rec.Shard < 0 || rec.Shard >= n {
		return 0, fmt.Errorf("%w: shard %d of %d", errBeyondCount, rec.Shard, n)
	}
	return rec.Shard, nil
}

// Place returns the root's shard, placing it first if it has none: on a least-loaded open
// shard (fewest roots; ties broken by a hash of the root, so concurrent placements of
// different roots spread; a shard a grow added is open once it has a load counter,
// grow.go), with one transaction that creates the root key only if it is absent and
// only if no load counter changed since they were read, and that increments the chosen
// shard's counter. created is true for the one call in the cluster that placed it.
// Concurrent calls for the same root, on any nodes, all return the same shard.
// Errors: ErrInvalidArgument; ErrControlPlaneUnavailable (retryable; the root may or may
// not be placed — calling Place again is safe).
func (pl *Placement) Place(ctx context.Context, root string) (shard int, created bool, err error) {
	if s, ok := pl.Cached(root); ok {
		return s, false, nil
	}
	if err := validRoot(root); err != nil {
		return 0, false, err
	}
	return pl.place(ctx, root)
}

// placeBackoff bounds the pause between placement attempts that lost a race on the load
// counters.
const placeBackoff = 20 * time.Millisecond

func (pl *Placement) place(ctx context.Context, root string) (int, bool, error) {
	rootKey := pl.p.k.root(root)
	for attempt := 0; ; attempt++ {
		var read *clientv3.TxnResponse
		err := pl.p.withTimeout(ctx, "read placement", func(ctx context.Context) (err error) {
			read, err = pl.p.cli.Txn(ctx).Then(clientv3.OpGet(rootKey),
				clientv3.OpGet(pl.p.k.loads(), clientv3.WithPrefix()), clientv3.OpGet(pl.p.k.cluster())).Commit()
			return err
		})
		if err != nil {
			return 0, false, err
		}
		if kvs := read.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			s, err := pl.decodeFresh(ctx, kvs[0].Value)
			if err == nil {
				pl.remember(root, s)
			}
			return s, false, err
		}
		loads, open := pl.candidates(read.Responses[2].GetResponseRange().Kvs, read.Responses[1].GetResponseRange().Kvs)
		s := leastLoaded(loads, open, root)
		rec, _ := json.Marshal(rootRecord{Shard: s})
		var resp *clientv3.TxnResponse
		err = pl.p.withTimeout(ctx, "place root", func(ctx context.Context) (err error) {
			resp, err = pl.p.cli.Txn(ctx).If(
				clientv3.Compare(clientv3.CreateRevision(rootKey), "=", 0),
				clientv3.Compare(clientv3.ModRevision(pl.p.k.loads()), "<", read.Header.Revision+1).WithPrefix(),
			).Then(
				clientv3.OpPut(rootKey, string(rec)),
				clientv3.OpPut(pl.p.k.load(s), strconv.FormatInt(loads[s]+1, 10)),
			).Else(clientv3.OpGet(rootKey)).Commit()
			return err
		})
		if err != nil {
			return 0, false, err
		}
		if resp.Succeeded {
			pl.remember(root, s)
			return s, true, nil
		}
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			s, err := pl.decodeFresh(ctx, kvs[0].Value)
			if err == nil {
				pl.remember(root, s)
			}
			return s, false, err
		}
		// Another root was placed since the read: read the counters again.
		d := time.Duration(rand.Int64N(int64(placeBackoff)) + 1)
		pause.For(ctx, min(d*time.Duration(attempt+1), 10*placeBackoff))
		if ctx.Err() != nil {
			return 0, false, fmt.Errorf("control: place root %q: %w", root, ctx.Err())
		}
	}
}

// candidates reads a placement's view: the cluster record (its kvs; the count it names
// is remembered) and the load counters. It returns every shard's count of roots and
// which shards are open to placement: those of the creation, and those a grow added that
// have a counter.
func (pl *Placement) candidates(cluster, counters []*mvccpb.KeyValue) (loads []int64, open []bool) {
	created := pl.Shards()
	if len(cluster) == 1 {
		var c Cluster
		if json.Unmarshal(cluster[0].Value, &c) == nil && c.Shards > 0 {
			pl.SetShards(c.Shards)
			created = min(c.Created(), c.Shards)
		}
	}
	n := pl.Shards()
	created = min(created, n)
	loads, open = make([]int64, n), make([]bool, n)
	for s := range created {
		open[s] = true
	}
	for _, kv := range counters {
		s, ok := shardOf(pl.p.k.loads(), string(kv.Key))
		v, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if ok && err == nil && s < n {
			loads[s], open[s] = v, true
		}
	}
	return loads, open
}

// leastLoaded returns an open shard with the fewest roots; among equals, the one a hash of
// the root picks, so that concurrent placements of different roots rarely contend. Shard 0
// is open in every cluster. It allocates nothing (the simulation calls it a million times,
// rebalance_sim_test.go).
func leastLoaded(loads []int64, open []bool, root string) int {
	low, ties := int64(-1), 0
	for s, n := range loads {
		switch {
		case !open[s]:
		case low < 0 || n < low:
			low, ties = n, 1
		case n == low:
			ties++
		}
	}
	if ties == 0 {
		return 0
	}
	h := uint32(2166136261) // FNV-1a (hash/fnv's New32a), inline so nothing is allocated
	for i := 0; i < len(root); i++ {
		h ^= uint32(root[i])
		h *= 16777619
	}
	k := int(h % uint32(ties))
	for s, n := range loads {
		if open[s] && n == low {
			if k == 0 {
				return s
			}
			k--
		}
	}
	return 0
}

// Loads returns the number of roots placed on each shard, indexed by shard (as many as the
// shard count the placement knows).
func (pl *Placement) Loads(ctx context.Context) ([]int64, error) {
	resp, err := pl.p.get(ctx, "read loads", pl.p.k.loads(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	loads := make([]int64, pl.Shards())
	for _, kv := range resp.Kvs {
		s, ok := shardOf(pl.p.k.loads(), string(kv.Key))
		n, perr := strconv.ParseInt(string(kv.Value), 10, 64)
		if ok && perr == nil && s < len(loads) {
			loads[s] = n
		}
	}
	return loads, nil
}
