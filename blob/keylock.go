package blob

import (
	"context"
	"fmt"
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

// LockOp is Lock for a backend's call op on key; its error names the backend (the prefix
// of its errors, "blob/dir"), op and key.
func (l *KeyLocks) LockOp(ctx context.Context, backend, op string, key Key) (unlock func(), err error) {
	unlock, err = l.Lock(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", backend, op, key, err)
	}
	return unlock, nil
}

// LockPut starts a backend's Put of hd under key: it checks that hd is key's content
// (CheckKey: ErrInvalidKey, ErrDigestMismatch) before it waits for key (LockOp).
func (l *KeyLocks) LockPut(ctx context.Context, backend string, key Key, hd Hashed) (unlock func(), err error) {
	if err := CheckKey(key, hd); err != nil {
		return nil, fmt.Errorf("%s: %w", backend, err)
	}
	return l.LockOp(ctx, backend, "put", key)
}
