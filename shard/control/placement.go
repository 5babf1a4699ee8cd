package control

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/meta"
)

// rootRecord is the value of <prefix>/roots/<root>.
type rootRecord struct {
	Shard int `json:"shard"`
}

// Placement maps roots to shards. Answers are cached for good (a placement never
// changes); a background watch keeps the cache filled with every placed root, so roots
// placed by any node keep resolving while etcd is unreachable.
type Placement struct {
	p      *Plane
	shards int

	mu     sync.RWMutex
	cache  map[string]int
	synced chan struct{} // closed after the first full listing
	once   sync.Once

	cancel context.CancelFunc
	done   chan struct{}
}

// NewPlacement starts a placement map for cluster c (its shard count bounds every answer).
// It returns at once; the cache fills in the background (WaitSynced). Close stops it.
func (p *Plane) NewPlacement(c Cluster) *Placement {
	ctx, cancel := context.WithCancel(context.Background())
	pl := &Placement{p: p, shards: c.Shards, cache: map[string]int{}, synced: make(chan struct{}),
		cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(pl.done)
		// Placements never change: a listing or a put only adds to the cache, and a deleted
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

// Resolve returns the shard of a placed root: from the cache, else from etcd.
// Errors: ErrRootNotPlaced, ErrInvalidArgument, ErrControlPlaneUnavailable (etcd
// unreachable and the root not cached).
func (pl *Placement) Resolve(ctx context.Context, root string) (int, error) {
	if s, ok := pl.Cached(root); ok {
		return s, nil
	}
	if err := validRoot(root); err != nil {
		return 0, err
	}
	var resp *clientv3.GetResponse
	err := pl.p.withTimeout(ctx, "resolve root", func(ctx context.Context) (err error) {
		resp, err = pl.p.cli.Get(ctx, pl.p.k.root(root))
		return err
	})
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, fmt.Errorf("root %q: %w", root, ErrRootNotPlaced)
	}
	s, err := pl.decode(resp.Kvs[0].Value)
	if err != nil {
		return 0, err
	}
	pl.remember(root, s)
	return s, nil
}

func (pl *Placement) decode(val []byte) (int, error) {
	var rec rootRecord
	if err := json.Unmarshal(val, &rec); err != nil {
		return 0, fmt.Errorf("control: root record: %w", err)
	}
	if rec.Shard < 0 || rec.Shard >= pl.shards {
		return 0, fmt.Errorf("control: root record names shard %d of %d", rec.Shard, pl.shards)
	}
	return rec.Shard, nil
}

// Place returns the root's shard, placing it first if it has none: on a least-loaded shard
// (fewest roots; ties broken by a hash of the root, so concurrent placements of different
// roots spread), with one transaction that creates the root key only if it is absent and
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
				clientv3.OpGet(pl.p.k.loads(), clientv3.WithPrefix())).Commit()
			return err
		})
		if err != nil {
			return 0, false, err
		}
		if kvs := read.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			s, err := pl.decode(kvs[0].Value)
			if err == nil {
				pl.remember(root, s)
			}
			return s, false, err
		}
		loads := make([]int64, pl.shards)
		for _, kv := range read.Responses[1].GetResponseRange().Kvs {
			s, ok := shardOf(pl.p.k.loads(), string(kv.Key))
			n, err := strconv.ParseInt(string(kv.Value), 10, 64)
			if ok && err == nil && s < pl.shards {
				loads[s] = n
			}
		}
		s := leastLoaded(loads, root)
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
			s, err := pl.decode(kvs[0].Value)
			if err == nil {
				pl.remember(root, s)
			}
			return s, false, err
		}
		// Another root was placed since the read: read the counters again.
		d := time.Duration(rand.Int64N(int64(placeBackoff)) + 1)
		sleepCtx(ctx, min(d*time.Duration(attempt+1), 10*placeBackoff))
		if ctx.Err() != nil {
			return 0, false, fmt.Errorf("control: place root %q: %w", root, ctx.Err())
		}
	}
}

// leastLoaded returns a shard with the fewest roots; among equals, the one a hash of the
// root picks, so that concurrent placements of different roots rarely contend.
func leastLoaded(loads []int64, root string) int {
	low := loads[0]
	for _, n := range loads {
		low = min(low, n)
	}
	var ties []int
	for s, n := range loads {
		if n == low {
			ties = append(ties, s)
		}
	}
	h := fnv.New32a()
	h.Write([]byte(root))
	return ties[int(h.Sum32()%uint32(len(ties)))]
}

// Loads returns the number of roots placed on each shard, indexed by shard.
func (pl *Placement) Loads(ctx context.Context) ([]int64, error) {
	var resp *clientv3.GetResponse
	err := pl.p.withTimeout(ctx, "read loads", func(ctx context.Context) (err error) {
		resp, err = pl.p.cli.Get(ctx, pl.p.k.loads(), clientv3.WithPrefix())
		return err
	})
	if err != nil {
		return nil, err
	}
	loads := make([]int64, pl.shards)
	for _, kv := range resp.Kvs {
		s, ok := shardOf(pl.p.k.loads(), string(kv.Key))
		n, perr := strconv.ParseInt(string(kv.Value), 10, 64)
		if ok && perr == nil && s < pl.shards {
			loads[s] = n
		}
	}
	return loads, nil
}
