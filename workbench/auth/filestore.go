package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cairnstore/cairn/internal/durable"
)

// KeysFile is the name of the embedded node's key file in its data directory.
const KeysFile = "keys.json"

// fileVersion is the format version of the key file.
const fileVersion = 1

type keyFile struct {
	Version int   `json:"version"`
	Keys    []Key `json:"keys"`
}

// FileStore keeps the keys of an embedded node in one JSON file (mode 0600), replaced
// atomically on every change: written to a temporary file, fsync'd, renamed over the old
// one, and the directory fsync'd. All keys are held in memory, so Lookup does no I/O.
// One process owns the file at a time: the caller holds the data directory's lock.
type FileStore struct {
	path string
	mu   sync.RWMutex
	keys map[string]Key
}

// OpenFileStore opens (or, when absent, starts empty) the key file at path. Errors: an
// unreadable file, or one that does not parse (named, never shown).
func OpenFileStore(path string) (*FileStore, error) {
	s := &FileStore{path: path, keys: map[string]Key{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("key file %s: does not parse: %w", path, err)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("key file %s: format version %d, this binary reads %d", path, f.Version, fileVersion)
	}
	for _, k := range f.Keys {
		if err := checkRecord(k); err != nil {
			return nil, fmt.Errorf("key file %s: %w", path, err)
		}
		s.keys[k.ID] = k
	}
	return s, nil
}

// Create implements Store.
func (s *FileStore) Create(_ context.Context, k Key) error {
	if err := checkRecord(k); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k.ID]; ok {
		return fmt.Errorf("key %s: %w", k.ID, ErrKeyExists)
	}
	return s.commit(k)
}

// Lookup implements Store.
func (s *FileStore) Lookup(id string) (Key, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.keys[id]
	if !ok {
		return Key{}, fmt.Errorf("key %s: %w", id, ErrKeyNotFound)
	}
	return k, nil
}

// List implements Store.
func (s *FileStore) List(context.Context) ([]Key, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.all(), nil
}

func (s *FileStore) all() []Key {
	out := make([]Key, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, k)
	}
	sortKeys(out)
	return out
}

// Revoke implements Store.
func (s *FileStore) Revoke(_ context.Context, id string, at time.Time) (Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return Key{}, fmt.Errorf("key %s: %w", id, ErrKeyNotFound)
	}
	if !k.RevokedAt.IsZero() {
		return k, nil
	}
	k = revoked(k, at)
	return k, s.commit(k)
}

// Close implements Store.
func (s *FileStore) Close() error { return nil }

// commit writes the key set with k in it, then puts k in memory; on failure nothing
// changed. The caller holds mu.
func (s *FileStore) commit(k Key) error {
	old, had := s.keys[k.ID]
	s.keys[k.ID] = k
	if err := s.write(); err != nil {
		if had {
			s.keys[k.ID] = old
		} else {
			delete(s.keys, k.ID)
		}
		return err
	}
	return nil
}

func (s *FileStore) write() error {
	b, err := json.MarshalIndent(keyFile{Version: fileVersion, Keys: s.all()}, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(s.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("key file %s: %w", s.path, err)
	}
	return nil
}
