package mem

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/cairnstore/cairn/blob"
)

// Store is an in-memory blob.Store. The zero value is not usable; call New.
type Store struct {
	mu     sync.RWMutex
	blobs  map[blob.Key]*entry
	closed bool
}

// entry is a stored blob. Its fields never change after it is stored.
type entry struct {
	payload []byte
	enc     blob.Encoding
	size    int64
	modTime time.Time
}

var _ blob.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store { return &Store{blobs: make(map[blob.Key]*entry)} }

// lookup returns the entry of key (nil if absent) after checking the key, ctx and Close.
func (s *Store) lookup(ctx context.Context, op string, key blob.Key) (*entry, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob/mem: %s %s: %w", op, key, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("blob/mem: %s %s: store closed: %w", op, key, blob.ErrUnavailable)
	}
	return s.blobs[key], nil
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key blob.Key, hd blob.Hashed) (blob.PutResult, error) {
	e, err := s.lookup(ctx, "put", key)
	if err != nil {
		return blob.PutResult{}, err
	}
	if err := blob.CheckKey(key, hd); err != nil {
		return blob.PutResult{}, fmt.Errorf("blob/mem: %w", err)
	}
	data := hd.Bytes()
	if e != nil && e.intact(blob.WithBlake3(ctx, key.Digest, hd.Blake3()), key) {
		return blob.PutResult{StoredBytes: int64(len(e.payload)), Encoding: e.enc}, nil
	}
	payload, enc := blob.Encode(nil, data)
	if enc == blob.EncodingIdentity {
		payload = bytes.Clone(data)
	}
	e = &entry{payload: payload, enc: enc, size: int64(len(data)), modTime: time.Now()}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return blob.PutResult{}, fmt.Errorf("blob/mem: put %s: store closed: %w", key, blob.ErrUnavailable)
	}
	if old, ok := s.blobs[key]; ok && old.intact(blob.WithBlake3(ctx, key.Digest, hd.Blake3()), key) {
		// A concurrent Put of the same key won (or the blob was intact all along).
		return blob.PutResult{StoredBytes: int64(len(old.payload)), Encoding: old.enc}, nil
	}
	s.blobs[key] = e
	return blob.PutResult{Created: true, StoredBytes: int64(len(payload)), Encoding: enc}, nil
}

// Get implements blob.Store.
func (s *Store) Get(ctx context.Context, key blob.Key, offset, length int64) (io.ReadCloser, error) {
	e, err := s.lookup(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, fmt.Errorf("blob/mem: get %s: %w", key, blob.ErrNotFound)
	}
	return blob.NewReader(ctx, key, io.NopCloser(bytes.NewReader(e.payload)), e.enc, e.size, offset, length)
}

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, key blob.Key) (blob.Info, error) {
	e, err := s.lookup(ctx, "stat", key)
	if err != nil {
		return blob.Info{}, err
	}
	if e == nil {
		return blob.Info{}, fmt.Errorf("blob/mem: stat %s: %w", key, blob.ErrNotFound)
	}
	return e.info(), nil
}

// intact reports whether e's payload decodes to bytes that hash to key's digest (or to the
// BLAKE3 ctx carries, blob.WithBlake3): Put trusts an existing blob only then
// (put-if-absent never dedupes onto damaged data).
func (e *entry) intact(ctx context.Context, key blob.Key) bool {
	r, err := blob.NewReader(ctx, key, io.NopCloser(bytes.NewReader(e.payload)), e.enc, e.size, 0, -1)
	if err != nil {
		return false
	}
	defer r.Close()
	err = blob.Drain(r)
	return err == nil
}

// Corrupt flips the bits of one byte in the middle of key's stored payload, for tests of
// what readers and writers do with damaged data (blobtest.RunDamage). The entry is
// replaced, not changed in place, so readers already streaming it are not affected. It
// fails with blob.ErrNotFound for an absent or empty blob.
func (s *Store) Corrupt(key blob.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.blobs[key]
	if !ok || len(e.payload) == 0 {
		return fmt.Errorf("blob/mem: corrupt %s: %w", key, blob.ErrNotFound)
	}
	d := *e
	d.payload = bytes.Clone(e.payload)
	d.payload[len(d.payload)/2] ^= 0xff
	s.blobs[key] = &d
	return nil
}

func (e *entry) info() blob.Info {
	return blob.Info{Size: e.size, StoredBytes: int64(len(e.payload)), Encoding: e.enc, ModTime: e.modTime}
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, key blob.Key) error {
	if _, err := s.lookup(ctx, "delete", key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.blobs, key)
	return nil
}

// List implements blob.Store. It lists a snapshot taken when it starts, so fn may call the
// Store.
func (s *Store) List(ctx context.Context, root string, fn func(blob.Key, blob.Info) error) error {
	if err := blob.ValidateRoot(root); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blob/mem: list %s: %w", root, err)
	}
	type item struct {
		key blob.Key
		e   *entry
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return fmt.Errorf("blob/mem: list %s: store closed: %w", root, blob.ErrUnavailable)
	}
	var items []item
	for k, e := range s.blobs {
		if k.Root == root {
			items = append(items, item{k, e})
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(items, func(a, b item) int { return bytes.Compare(a.key.Digest[:], b.key.Digest[:]) })
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("blob/mem: list %s: %w", root, err)
		}
		if err := fn(it.key, it.e.info()); err != nil {
			return err
		}
	}
	return nil
}

// Close implements blob.Store: later calls fail with blob.ErrUnavailable. The blobs are
// dropped.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.blobs = nil
	return nil
}
