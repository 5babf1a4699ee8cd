package host

import (
	"context"
	"sync"
	"time"
)

// readIndexTimeout bounds one read-index call to a shard's leader (its leadership round is
// bounded by a heartbeat timeout; this covers a slow or cut-off peer).
const readIndexTimeout = 5 * time.Second

// readIndexBatcher batches the read-index calls of this node's follower reads: reads of one
// shard through one leader that arrive while a call is in flight share the next call,
// which starts after they all arrived, so the index it returns covers every write
// acknowledged before each of them began (Raft thesis §6.4). A follower then asks the
// leader once per batch instead of once per read, and the leader folds those calls into
// its own batched leadership rounds (shard/confirm.go).
type readIndexBatcher struct {
	// call makes one read-index call to the leader at addr (peerClient.readIndex, ended
	// early when the leader moves: Host.forwardContext).
	call    func(ctx context.Context, addr string, id int) (uint64, error)
	mu      sync.Mutex
	batches map[readIndexKey]*readIndexBatch
}

type readIndexKey struct {
	shard int
	addr  string
}

type readIndexBatch struct {
	waiting []chan readIndexResult
}

type readIndexResult struct {
	version uint64
	err     error
}

func newReadIndexBatcher(call func(ctx context.Context, addr string, id int) (uint64, error)) *readIndexBatcher {
	return &readIndexBatcher{call: call, batches: map[readIndexKey]*readIndexBatch{}}
}

// get returns the read index of shard id from its leader at addr, from a call that
// started after get was called. Errors: those of peerClient.readIndex, or ctx's.
func (b *readIndexBatcher) get(ctx context.Context, addr string, id int) (uint64, error) {
	key := readIndexKey{shard: id, addr: addr}
	ch := make(chan readIndexResult, 1)
	b.mu.Lock()
	batch, running := b.batches[key]
	if !running {
		batch = &readIndexBatch{}
		b.batches[key] = batch
		go b.loop(key, batch)
	}
	batch.waiting = append(batch.waiting, ch)
	b.mu.Unlock()
	select {
	case r := <-ch:
		return r.version, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// loop makes one call per batch of waiting reads until none waits.
func (b *readIndexBatcher) loop(key readIndexKey, batch *readIndexBatch) {
	for {
		b.mu.Lock()
		waiting := batch.waiting
		batch.waiting = nil
		if len(waiting) == 0 {
			delete(b.batches, key)
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), readIndexTimeout)
		v, err := b.call(ctx, key.addr, key.shard)
		cancel()
		for _, ch := range waiting {
			ch <- readIndexResult{version: v, err: err}
		}
	}
}
