package blob

import (
	"context"
	"sync"
)

// KeyLocks serializes calls per Key within one process: backends use it so that
// concurrent Puts of a new blob upload it once and a Delete never interleaves with a Put of
// the same key. The zero value is ready to use.
type KeyLocks struct {
	mu       sync.Mutex
	inflight map[Key]chan struct{} // keys with a call in progress
}

// Lock waits until no other call holds key (or ctx ends, returning ctx.Err()), then holds
// it until unlock is called.
func (l *KeyLocks) Lock(ctx context.Context, key Key) (unlock func(), err error) {
	for {
		l.mu.Lock()
		busy, ok := l.inflight[key]
		if !ok {
			if l.inflight == nil {
				l.inflight = make(map[Key]chan struct{})
			}
			done := make(chan struct{})
			l.inflight[key] = done
			l.mu.Unlock()
			return func() {
				l.mu.Lock()
				delete(l.inflight, key)
				l.mu.Unlock()
				close(done)
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
