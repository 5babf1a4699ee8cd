package dir

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/cairnstore/cairn/blob"
)

// reserve keeps min bytes free on the file system under dir: take admits a write of n
// bytes only while the free space, less the bytes of the writes admitted and not yet done,
// stays at or above min. Writes in flight are counted because the file system reports
// their bytes as free until they land: without them, concurrent Puts that each fit would
// together eat the reserve. (A write's bytes that have landed are then counted twice, in
// the free space and in flight, until it is done: the reserve errs towards refusing.)
type reserve struct {
	dir string
	min int64
	// free reads the file system's free bytes under dir (nil: statfs).
	free func(dir string) (int64, error)

	mu       sync.Mutex
	inFlight int64
}

// statfsFree returns the bytes available to this process on the file system under dir.
func statfsFree(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// take admits a write of n bytes, returning the func that ends it, or an error wrapping
// blob.ErrStorageFull (and blob.ErrUnavailable, as the store's other errors do) that says
// how much is free and how much the reserve keeps. A reserve of 0 admits everything, and
// so does a file system whose free space cannot be read: the write itself then fails if
// the disk is full.
func (r *reserve) take(n int64) (done func(), err error) {
	if r.min <= 0 {
		return func() {}, nil
	}
	read := r.free
	if read == nil {
		read = statfsFree
	}
	free, err := read(r.dir)
	if err != nil {
		return func() {}, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if free-r.inFlight-n < r.min {
		return nil, fmt.Errorf("%w: %w: the disk has %d bytes free, %d of them promised to writes in flight; a %d-byte blob would leave less than the %d bytes kept free",
			blob.ErrStorageFull, blob.ErrUnavailable, free, r.inFlight, n, r.min)
	}
	r.inFlight += n
	return func() {
		r.mu.Lock()
		r.inFlight -= n
		r.mu.Unlock()
	}, nil
}
