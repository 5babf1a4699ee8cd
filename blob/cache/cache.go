package cache

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairnstore/cairn/blob"
)

// tempPrefix names files being filled; Open removes those a crash left.
const tempPrefix = ".fill-"

// Cache is a bounded on-disk LRU of verified blobs. It is safe for concurrent use. A nil
// *Cache caches nothing: Get misses, Put and Remove do nothing.
type Cache struct {
	dir      string
	maxBytes int64
	log      *slog.Logger
	m        *metrics

	mu      sync.Mutex
	entries map[blob.Key]*list.Element // of *entry
	lru     *list.List                 // front: most recently used
	bytes   int64                      // sizes of all entries, filling ones included
}

type entry struct {
	key  blob.Key
	size int64
	// filling: the file is being written; Get misses until it is in place.
	filling bool
	// verified is the file as it was when its bytes last passed their digest, or were
	// filled from verified bytes (nil: not since Open found it).
	verified os.FileInfo
}

// Open opens the cache in dir (created if missing), bounded to maxBytes (> 0) of cached
// bytes, and rebuilds its index from the files there: every file of a valid name becomes
// an entry, to be verified on its first Get; leftovers of fills cut off by a crash and
// files of other names are removed; entries beyond maxBytes are evicted, the least
// recently filled first. log (nil: slog.Default) receives failed fills and evictions.
func Open(dir string, maxBytes int64, log *slog.Logger) (*Cache, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("cache: max bytes %d: must be positive", maxBytes)
	}
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Cache{dir: dir, maxBytes: maxBytes, log: log, m: newMetrics(), entries: map[blob.Key]*list.Element{}, lru: list.New()}
	if err := c.rebuild(); err != nil {
		return nil, err
	}
	return c, nil
}

// MaxBytes returns the bound on cached bytes.
func (c *Cache) MaxBytes() int64 { return c.maxBytes }

// rebuild indexes the files under dir.
func (c *Cache) rebuild() error {
	type found struct {
		key  blob.Key
		size int64
		mod  time.Time
	}
	var all []found
	err := filepath.WalkDir(c.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		key, ok := c.keyOf(path)
		info, ierr := d.Info()
		if !ok || ierr != nil || !info.Mode().IsRegular() {
			// A fill cut off by a crash, or nothing of ours: not cached.
			if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				return rerr
			}
			return nil
		}
		all = append(all, found{key: key, size: info.Size(), mod: info.ModTime()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("cache: rebuilding the index of %s: %w", c.dir, err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod.Before(all[j].mod) })
	for _, f := range all { // oldest first, so the newest ends at the front
		c.entries[f.key] = c.lru.PushFront(&entry{key: f.key, size: f.size})
		c.bytes += f.size
	}
	c.mu.Lock()
	c.evictLocked(0)
	c.mu.Unlock()
	return nil
}

// path is where key's file lives.
func (c *Cache) path(key blob.Key) string {
	hx := key.Digest.String()
	return filepath.Join(c.dir, key.Root, hx[:2], hx)
}

// keyOf parses a cached file's path back into its key.
func (c *Cache) keyOf(path string) (blob.Key, bool) {
	rel, err := filepath.Rel(c.dir, path)
	if err != nil {
		return blob.Key{}, false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) != 3 || blob.ValidateRoot(parts[0]) != nil {
		return blob.Key{}, false
	}
	d, err := blob.ParseDigest(parts[2])
	if err != nil || parts[2] != d.String() || parts[1] != parts[2][:2] {
		return blob.Key{}, false
	}
	return blob.Key{Root: parts[0], Digest: d}, true
}

// Contains reports whether key is cached (without checking the file or touching the LRU).
func (c *Cache) Contains(key blob.Key) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	return ok && !el.Value.(*entry).filling
}

// Get opens key's cached file when it is cached, intact and size bytes long, and marks it
// recently used. On a miss (not cached, being filled, or failing its check, which removes
// it) it returns nil, false. The caller closes the File. sum is the blob's BLAKE3 as its
// metadata recorded it (zero: none recorded): a file not verified since it was filled, or
// changed since, is read through BLAKE3 against it, or through SHA-256 against key.Digest
// when sum is zero, as a Get from the object store would be (blob.Check).
func (c *Cache) Get(key blob.Key, size int64, sum blob.Blake3) (*File, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	el, ok := c.entries[key]
	var e *entry
	if ok {
		e = el.Value.(*entry)
		ok = !e.filling && e.size == size
	}
	if !ok {
		c.mu.Unlock()
		c.m.misses.Inc()
		return nil, false
	}
	c.lru.MoveToFront(el)
	verified := e.verified
	c.mu.Unlock()

	f, err := os.Open(c.path(key))
	if err != nil {
		// Evicted since the lookup (not found), or unreadable.
		c.drop(key, e, "open", err)
		c.m.misses.Inc()
		return nil, false
	}
	info, err := f.Stat()
	if err == nil && !sameFile(verified, info, size) {
		// Found at Open, or changed since it was verified: read it through its digest.
		err = verify(f, key, sum, size)
		if err == nil {
			c.mu.Lock()
			e.verified = info
			c.mu.Unlock()
		}
	}
	if err != nil {
		f.Close()
		c.m.corrupt.Inc()
		c.drop(key, e, "verify", err)
		c.m.misses.Inc()
		return nil, false
	}
	c.m.hits.Inc()
	return &File{f: f, size: size, served: c.m.served}, true
}

// sameFile reports whether info describes the file as it was verified.
func sameFile(verified, info os.FileInfo, size int64) bool {
	return verified != nil && os.SameFile(verified, info) && info.Size() == size &&
		info.ModTime().Equal(verified.ModTime())
}

// verify reads f whole and checks that it is the blob of key, size bytes with BLAKE3 sum
// (or, when sum is zero, SHA-256 key.Digest), then rewinds it.
func verify(f *os.File, key blob.Key, sum blob.Blake3, size int64) error {
	if err := blob.Check(f, key, sum, size); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// drop removes key's entry e (if it is still the entry) and its file.
func (c *Cache) drop(key blob.Key, e *entry, op string, cause error) {
	c.mu.Lock()
	if el, ok := c.entries[key]; ok && el.Value.(*entry) == e {
		c.removeLocked(el)
	}
	c.mu.Unlock()
	if errors.Is(cause, fs.ErrNotExist) {
		return // evicted meanwhile: nothing was wrong
	}
	c.log.Warn("segment cache: dropped an entry that failed its check; the next read refetches it from the object store",
		"key", key.String(), "op", op, "err", cause)
}

// Put caches data as key's bytes, unless key is cached or being filled already, or data
// is longer than MaxBytes. data must be verified: its SHA-256 is key.Digest (the caller
// checked it, blob.ReadVerified or blob.Hash); the cache does not hash it again. It evicts
// the least recently used entries first so that the cached bytes never exceed MaxBytes.
// A failure is logged and counted, never returned: the cache is an optimization.
func (c *Cache) Put(key blob.Key, data []byte) {
	if c == nil {
		return
	}
	size := int64(len(data))
	if size > c.maxBytes || key.Validate() != nil {
		return
	}
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		c.mu.Unlock()
		return
	}
	c.evictLocked(size)
	if c.bytes+size > c.maxBytes {
		// The rest is being filled: no room now.
		c.mu.Unlock()
		return
	}
	e := &entry{key: key, size: size, filling: true}
	c.entries[key] = c.lru.PushFront(e)
	c.bytes += size
	c.syncGaugesLocked()
	c.mu.Unlock()

	info, err := c.write(key, data)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok || el.Value.(*entry) != e {
		return // removed meanwhile (Remove)
	}
	if err != nil {
		c.removeLocked(el)
		c.m.fillErrors.Inc()
		c.log.Warn("segment cache: fill failed", "key", key.String(), "err", err)
		return
	}
	e.filling, e.verified = false, info
	c.m.filled.Add(float64(size))
}

// write stores data as key's file: a temporary file renamed into place.
func (c *Cache) write(key blob.Key, data []byte) (os.FileInfo, error) {
	final := c.path(key)
	if err := os.MkdirAll(filepath.Dir(final), 0o750); err != nil {
		return nil, err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(final), tempPrefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return os.Stat(final)
}

// Remove drops key from the cache (its file too). A reader that has it open finishes.
func (c *Cache) Remove(key blob.Key) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.removeLocked(el)
	}
}

// evictLocked removes least recently used entries until room more bytes fit within
// MaxBytes. Entries being filled are skipped (their fill finishes or fails on its own).
func (c *Cache) evictLocked(room int64) {
	for el := c.lru.Back(); el != nil && c.bytes+room > c.maxBytes; {
		prev := el.Prev()
		if !el.Value.(*entry).filling {
			c.removeLocked(el)
			c.m.evictions.Inc()
		}
		el = prev
	}
}

// removeLocked forgets an entry and unlinks its file.
func (c *Cache) removeLocked(el *list.Element) {
	e := el.Value.(*entry)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	c.bytes -= e.size
	if !e.filling {
		if err := os.Remove(c.path(e.key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn("segment cache: removing a file", "key", e.key.String(), "err", err)
		}
	}
	c.syncGaugesLocked()
}

func (c *Cache) syncGaugesLocked() {
	c.m.bytes.Set(float64(c.bytes))
	c.m.entries.Set(float64(len(c.entries)))
}

// Bytes returns the bytes of the cached files (and of those being filled).
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
