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
// shard through one leader share a call that starts after they all arrived, so the index it
// returns covers every write acknowledged before each of them began (Raft thesis §6.4). At
// most maxReadIndexCalls calls per shard and leader are in flight; reads that arrive while
// they are go with the first call that starts after them. A follower then asks the leader
// about once per round trip, not once per read, and the leader folds those calls into its
// own batched leadership rounds (shard/confirm.go).
type readIndexBatcher struct {
	// call makes one read-index call to the leader at addr (peerClient.readIndex, ended
	// early when the leader moves: leaderCalls.forwardContext).
	call    func(ctx context.Context, addr string, id int) (uint64, error)
	mu      sync.Mutex
	batches map[readIndexKey]*readIndexBatch
}

// maxReadIndexCalls bounds the read-index calls in flight per shard and leader. One: on a
// node short of CPU, fewer and larger batches serve more reads (scripts/bench-follower.sh
// on 2 cores: small-get through a follower 0.75× the leader with two in flight, 0.85–0.96×
// with one).
const maxReadIndexCalls = 1

type readIndexKey struct {
	shard int
	addr  string
}

type readIndexBatch struct {
	waiting  []chan readIndexResult
	inFlight int
}

type readIndexResult struct {
	version uint64
	err     error
}

func newReadIndexBatcher(call func(ctx context.Context, addr string, id int) (uint64, error)) *readIndexBatcher {
	return &readIndexBatcher{call: call, batches: map[readIndexKey]*readIndexBatch{}}
}

// get returns the read index of shard id from its leader at addr, from a call that
// started after get was called. Errors: those of the call, or ctx's.
func (b *readIndexBatcher) get(ctx context.Context, addr string, id int) (uint64, error) {
	key := readIndexKey{shard: id, addr: addr}
	ch := make(chan readIndexResult, 1)
	b.mu.Lock()
	batch := b.batches[key]
	if batch == nil {
		batch = &readIndexBatch{}
		b.batches[key] = batch
	}
	batch.waiting = append(batch.waiting, ch)
	if batch.inFlight < maxReadIndexCalls {
		batch.inFlight++
		go b.calls(key, batch)
	}
	b.mu.Unlock()
	select {
	case r := <-ch:
		return r.version, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// calls makes one call for the reads waiting when it starts, then another for those that
// arrived meanwhile, until none waits.
func (b *readIndexBatcher) calls(key readIndexKey, batch *readIndexBatch) {
	for {
		b.mu.Lock()
		waiting := batch.waiting
		batch.waiting = nil
		if len(waiting) == 0 {
			batch.inFlight--
			if batch.inFlight == 0 {
				delete(b.batches, key)
			}
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
