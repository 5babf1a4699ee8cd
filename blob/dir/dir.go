package dir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cairnstore/cairn/blob"
)

const (
	// tmpPrefix starts the name of every temporary file; final names are 64 hex digits.
	tmpPrefix = ".tmp-"
	dirMode   = 0o750
)

// Store is a blob.Store over a local directory. Create it with Open.
type Store struct {
	path  string // absolute directory given to Open
	roots string // path/roots

	closed atomic.Bool

	// dirs holds the directories known to exist with their entry fsynced in their parent
	// during this process's life, so that a Put pays for directory fsyncs only the first
	// time it uses a fan-out directory.
	dirs sync.Map // string → struct{}

	locks blob.KeyLocks // serializes Puts and Deletes of one key

	bufs blob.EncodeBuffers // compression buffers of Puts

	reserve reserve // the free space Puts leave on the file system (Options.MinFreeBytes)
}

// Options tune a Store. The zero Options is Open's: no reserve.
type Options struct {
	// MinFreeBytes is the free space, in bytes, Puts leave on the file system under the
	// directory: a Put whose file would leave less, counting the files of the Puts in
	// flight, fails with blob.ErrStorageFull before it writes a byte. A node whose Raft log
	// shares the disk passes the log's own reserve (shard.DefaultMinFreeBytes), so that
	// bodies cannot take the room the log keeps for its term, vote and snapshots. 0 (or
	// negative) keeps no reserve: a Put then fails only when the disk refuses (ENOSPC).
	MinFreeBytes int64
}

var _ blob.Store = (*Store)(nil)

// Open returns a Store over the directory path, creating it (and roots/ inside it) if
// needed, and removes the temporary files that interrupted Puts left behind. Errors are
// I/O errors of the directory, wrapped with blob.ErrUnavailable.
func Open(path string) (*Store, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("blob/dir: open: empty directory path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("blob/dir: open %q: %w", path, err)
	}
	s := &Store{
		path:    abs,
		roots:   filepath.Join(abs, "roots"),
		reserve: reserve{dir: abs, min: o.MinFreeBytes},
	}
	if err := os.MkdirAll(abs, dirMode); err != nil {
		return nil, s.ioErr("open", abs, err)
	}
	if err := syncDir(filepath.Dir(abs)); err != nil {
		return nil, s.ioErr("open", abs, err)
	}
	if err := s.ensureDir(s.roots); err != nil {
		return nil, s.ioErr("open", abs, err)
	}
	if err := s.removeTemps(); err != nil {
		return nil, s.ioErr("open", abs, err)
	}
	return s, nil
}

// Path returns the absolute directory of the store.
func (s *Store) Path() string { return s.path }

// BlobPath returns the file that holds key's blob (whether or not it exists). For tests and
// operators; writing the file breaks the store's invariants.
func (s *Store) BlobPath(key blob.Key) string {
	return filepath.Join(s.fanoutDir(key), key.Digest.String())
}

func (s *Store) blobsDir(root string) string {
	return filepath.Join(s.roots, root, "blobs")
}

func (s *Store) fanoutDir(key blob.Key) string {
	return filepath.Join(s.blobsDir(key.Root), key.Digest.String()[:2])
}

// removeTemps deletes every temporary file under roots/*/blobs/*/.
func (s *Store) removeTemps() error {
	roots, err := os.ReadDir(s.roots)
	if err != nil {
		return err
	}
	for _, r := range roots {
		if !r.IsDir() {
			continue
		}
		blobs := s.blobsDir(r.Name())
		fans, err := os.ReadDir(blobs)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, f := range fans {
			if !f.IsDir() {
				continue
			}
			fan := filepath.Join(blobs, f.Name())
			entries, err := os.ReadDir(fan)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), tmpPrefix) {
					if err := os.Remove(filepath.Join(fan, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return err
					}
				}
			}
		}
	}
	return nil
}

// ensureDir makes dir exist with its entry durable in its parent, and the same for every
// ancestor up to s.roots. The parent is fsynced even when dir already existed: a process
// that crashed after mkdir may have left an entry that is not on disk yet.
func (s *Store) ensureDir(dir string) error {
	if _, ok := s.dirs.Load(dir); ok {
		return nil
	}
	parent := filepath.Dir(dir)
	if dir != s.roots {
		if err := s.ensureDir(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := syncDir(parent); err != nil {
		return err
	}
	s.dirs.Store(dir, struct{}{})
	return nil
}

// forgetDirs drops the cached directories of key's path, after one was found missing.
func (s *Store) forgetDirs(key blob.Key) {
	for d := s.fanoutDir(key); d != s.roots; d = filepath.Dir(d) {
		s.dirs.Delete(d)
	}
}

// syncDir fsyncs a directory, making the creation, rename or removal of its entries durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *Store) ioErr(op string, what any, err error) error {
	return fmt.Errorf("blob/dir: %s %v: %w: %w", op, what, blob.ErrUnavailable, err)
}

// begin checks what every call checks first: the key's root, ctx, and Close.
func (s *Store) begin(ctx context.Context, op, root string, what any) error {
	if err := blob.ValidateRoot(root); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blob/dir: %s %v: %w", op, what, err)
	}
	if s.closed.Load() {
		return fmt.Errorf("blob/dir: %s %v: store closed: %w", op, what, blob.ErrUnavailable)
	}
	return nil
}

// statFile reads the header of the blob file at path. Errors: fs.ErrNotExist, ErrCorrupt
// (see readHeader) or I/O.
func statFile(path string) (header, int64, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return header{}, 0, nil, err
	}
	defer f.Close()
	return readFile(f)
}

func readFile(f *os.File) (header, int64, os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return header{}, 0, nil, err
	}
	h, payload, err := readHeader(f, fi.Size())
	return h, payload, fi, err
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key blob.Key, hd blob.Hashed) (blob.PutResult, error) {
	if err := s.begin(ctx, "put", key.Root, key); err != nil {
		return blob.PutResult{}, err
	}
	unlock, err := s.locks.LockPut(ctx, "blob/dir", key, hd)
	if err != nil {
		return blob.PutResult{}, err
	}
	defer unlock()
	data := hd.Bytes()

	final := s.BlobPath(key)
	h, payloadBytes, err := s.verify(blob.WithBlake3(ctx, key.Digest, hd.Blake3()), key, final)
	switch {
	case err == nil:
		return blob.PutResult{StoredBytes: payloadBytes, Encoding: h.enc}, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, blob.ErrCorrupt):
		// Absent, or present but damaged: write it (rename replaces a damaged file).
	case ctx.Err() != nil:
		return blob.PutResult{}, fmt.Errorf("blob/dir: put %s: %w", key, ctx.Err())
	default:
		return blob.PutResult{}, s.ioErr("put", key, err)
	}

	payload, enc, release := s.bufs.Encode(data)
	defer release()

	hdr := header{enc: enc, size: int64(len(data))}.marshal()
	done, err := s.reserve.take(int64(len(hdr) + len(payload)))
	if err != nil {
		return blob.PutResult{}, fmt.Errorf("blob/dir: put %s: %w", key, err)
	}
	defer done()
	if err := s.write(ctx, key, final, hdr[:], payload); err != nil {
		return blob.PutResult{}, err
	}
	return blob.PutResult{Created: true, StoredBytes: int64(len(payload)), Encoding: enc}, nil
}

// verify reads the blob file at path whole, as Get would, and checks it against key: a Put
// trusts an existing blob only once its bytes hash to its digest (put-if-absent must not
// dedupe onto damaged data, which could then never be repaired); Put checks their BLAKE3
// against the bytes it was given (blob.WithBlake3), under half of SHA-256's cost. Errors:
// fs.ErrNotExist, blob.ErrCorrupt, ctx's, or I/O.
func (s *Store) verify(ctx context.Context, key blob.Key, path string) (header, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return header{}, 0, err
	}
	h, payloadBytes, _, err := readFile(f)
	if err != nil {
		f.Close()
		return header{}, 0, err
	}
	r, err := blob.NewReader(ctx, key, readCloser{io.NewSectionReader(f, HeaderBytes, payloadBytes), f}, h.enc, h.size, 0, -1)
	if err != nil {
		return header{}, 0, err
	}
	defer r.Close()
	if err := blob.Drain(r); err != nil {
		return header{}, 0, err
	}
	return h, payloadBytes, nil
}

// write puts hdr+payload at final: temp file, fsync, rename, fsync of the directory.
func (s *Store) write(ctx context.Context, key blob.Key, final string, hdr, payload []byte) error {
	fan := filepath.Dir(final)
	if err := s.ensureDir(fan); err != nil {
		return s.ioErr("put", key, err)
	}
	f, err := os.CreateTemp(fan, tmpPrefix+"*")
	if errors.Is(err, fs.ErrNotExist) {
		// A cached directory was removed behind our back: recreate the path once.
		s.forgetDirs(key)
		if err = s.ensureDir(fan); err == nil {
			f, err = os.CreateTemp(fan, tmpPrefix+"*")
		}
	}
	if err != nil {
		return s.ioErr("put", key, err)
	}
	tmp := f.Name()
	committed := false
	defer func() {
		if !committed {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		return s.ioErr("put", key, err)
	}
	if _, err := f.Write(payload); err != nil {
		f.Close()
		return s.ioErr("put", key, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return s.ioErr("put", key, err)
	}
	if err := f.Close(); err != nil {
		return s.ioErr("put", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blob/dir: put %s: %w", key, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return s.ioErr("put", key, err)
	}
	committed = true
	if err := syncDir(fan); err != nil {
		// Whether the rename is durable is unknown. Take it back so that no later Put
		// reports Created=false for a blob that may vanish in a crash.
		os.Remove(final)
		return s.ioErr("put", key, err)
	}
	return nil
}

// open opens key's file and checks its header.
func (s *Store) open(op string, key blob.Key) (*os.File, header, int64, os.FileInfo, error) {
	f, err := os.Open(s.BlobPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, header{}, 0, nil, fmt.Errorf("blob/dir: %s %s: %w", op, key, blob.ErrNotFound)
	}
	if err != nil {
		return nil, header{}, 0, nil, s.ioErr(op, key, err)
	}
	h, payload, fi, err := readFile(f)
	if err != nil {
		f.Close()
		if errors.Is(err, blob.ErrCorrupt) {
			return nil, header{}, 0, nil, fmt.Errorf("blob/dir: %s %s: %w", op, key, err)
		}
		return nil, header{}, 0, nil, s.ioErr(op, key, err)
	}
	return f, h, payload, fi, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// Get implements blob.Store.
func (s *Store) Get(ctx context.Context, key blob.Key, offset, length int64) (io.ReadCloser, error) {
	if err := s.begin(ctx, "get", key.Root, key); err != nil {
		return nil, err
	}
	f, h, payloadBytes, _, err := s.open("get", key)
	if err != nil {
		return nil, err
	}
	payload := readCloser{io.NewSectionReader(f, HeaderBytes, payloadBytes), f}
	return blob.NewReader(ctx, key, payload, h.enc, h.size, offset, length)
}

// Stat implements blob.Store. ModTime is the file's modification time.
func (s *Store) Stat(ctx context.Context, key blob.Key) (blob.Info, error) {
	if err := s.begin(ctx, "stat", key.Root, key); err != nil {
		return blob.Info{}, err
	}
	f, h, payloadBytes, fi, err := s.open("stat", key)
	if err != nil {
		return blob.Info{}, err
	}
	f.Close()
	return blob.Info{Size: h.size, StoredBytes: payloadBytes, Encoding: h.enc, ModTime: fi.ModTime()}, nil
}

// Delete implements blob.Store: it removes the file and fsyncs its directory.
func (s *Store) Delete(ctx context.Context, key blob.Key) error {
	if err := s.begin(ctx, "delete", key.Root, key); err != nil {
		return err
	}
	unlock, err := s.locks.LockOp(ctx, "blob/dir", "delete", key)
	if err != nil {
		return err
	}
	defer unlock()
	final := s.BlobPath(key)
	if err := os.Remove(final); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return s.ioErr("delete", key, err)
	}
	if err := syncDir(filepath.Dir(final)); err != nil {
		return s.ioErr("delete", key, err)
	}
	return nil
}

// List implements blob.Store. It reads the header of every file; a file with an invalid
// header stops the listing with an error wrapping blob.ErrCorrupt (fail closed: garbage
// collection must not proceed over a listing it cannot trust, docs/architecture.md#blob-storage-and-garbage-collection). Temporary files
// and names that are not 64 lower-case hex digits in the right fan-out directory are skipped.
func (s *Store) List(ctx context.Context, root string, fn func(blob.Key, blob.Info) error) error {
	if err := s.begin(ctx, "list", root, root); err != nil {
		return err
	}
	blobs := s.blobsDir(root)
	fans, err := os.ReadDir(blobs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return s.ioErr("list", root, err)
	}
	for _, fan := range fans {
		if !fan.IsDir() || !isHex(fan.Name(), 2) {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(blobs, fan.Name()))
		if err != nil {
			return s.ioErr("list", root, err)
		}
		for _, e := range entries {
			name := e.Name()
			if !isHex(name, 64) || name[:2] != fan.Name() {
				continue
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("blob/dir: list %s: %w", root, err)
			}
			d, err := blob.ParseDigest(name)
			if err != nil {
				continue
			}
			key := blob.Key{Root: root, Digest: d}
			h, payloadBytes, fi, err := statFile(filepath.Join(blobs, fan.Name(), name))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // deleted since ReadDir
			case errors.Is(err, blob.ErrCorrupt):
				return fmt.Errorf("blob/dir: list %s: %s: %w", root, key, err)
			case err != nil:
				return s.ioErr("list", root, err)
			}
			info := blob.Info{Size: h.size, StoredBytes: payloadBytes, Encoding: h.enc, ModTime: fi.ModTime()}
			if err := fn(key, info); err != nil {
				return err
			}
		}
	}
	return nil
}

// isHex reports whether s is n lower-case hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Close implements blob.Store: later calls fail with blob.ErrUnavailable. The store holds no
// file open between calls; readers returned by Get keep theirs until they are closed.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}
