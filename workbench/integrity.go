package workbench

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/cache"
	"github.com/cairnstore/cairn/meta"
)

// Verified reads (issue 10, docs/architecture.md#the-read-path): no byte of a body reaches a caller before the
// segment it belongs to is verified against the segment's content digest. loadSegment is
// the one door segment bytes come through: it reads the requested range of an
// object-store segment through the blob reader to the blob's end (where the reader checks
// the digest of the whole decompressed blob, whatever the range) into a bounded buffer,
// and hashes an inline segment, before it hands out a byte. The digest an object-store
// segment is checked against is its BLAKE3 when the metadata recorded one
// (meta.Segment.Blake3, taken by the write path in the same pass as its SHA-256; under
// half of SHA-256's CPU), else its SHA-256 content address, as for every segment
// written before BLAKE3 digests (segmentContext). The node's segment cache
// (Config.SegmentCache) holds only bytes verified so when they were filled (blob/cache),
// so a segment served from it is not hashed again.

// Where damaged bytes were found: the "source" label of cairn_blob_corrupt_total and of
// the log line.
const (
	corruptObjectStore = "object_store"
	corruptInline      = "inline"
)

// Segment buffers are pooled in power-of-two classes from 64 KiB to blob.ChunkMaxBytes
// (16 MiB, the longest segment the write path cuts). A reader holds one at a time (plus
// one read-ahead), so a streaming read costs at most one segment's requested range,
// ≤ 16 MiB, whatever the body's size; all of them together are held within
// Config.MaxReadBufferBytes (Service.readBudget).
const (
	segBufMinShift = 16
	segBufMaxShift = 24
)

var segBufs [segBufMaxShift - segBufMinShift + 1]sync.Pool

// segBufShift is the power of two of the class a buffer of length n comes from.
func segBufShift(n int64) int {
	if n > 1<<segBufMinShift {
		return bits.Len64(uint64(n - 1))
	}
	return segBufMinShift
}

// segBufCap is the capacity getSegBuf allocates for length n: what a buffer of n bytes
// holds in memory (the ingest budget weighs a body by it).
func segBufCap(n int64) int64 {
	if shift := segBufShift(n); shift <= segBufMaxShift {
		return 1 << shift
	}
	return n
}

// getSegBuf returns a buffer of length n (pooled when n ≤ blob.ChunkMaxBytes).
func getSegBuf(n int64) *[]byte {
	shift := segBufShift(n)
	if shift > segBufMaxShift {
		b := make([]byte, n) // longer than any segment the write path cuts: not pooled
		return &b
	}
	if p, ok := segBufs[shift-segBufMinShift].Get().(*[]byte); ok {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n, 1<<shift)
	return &b
}

// putSegBuf returns a buffer from getSegBuf to its pool. nil is ignored.
func putSegBuf(p *[]byte) {
	if p == nil {
		return
	}
	c := cap(*p)
	if c < 1<<segBufMinShift || c > 1<<segBufMaxShift || c&(c-1) != 0 {
		return
	}
	segBufs[bits.Len64(uint64(c))-1-segBufMinShift].Put(p)
}

func noop() {}

// readWeight is what holding n bytes of an object-store segment takes from the node's read
// budget (Config.MaxReadBufferBytes): n, at most the whole budget.
func (s *base) readWeight(n int64) int64 { return max(1, min(n, s.cfg.MaxReadBufferBytes)) }

// loadSegment returns bytes [from, from+n) of sg, verified. For an object-store segment
// they live in a pooled buffer counted against the node's read budget, waiting (until ctx
// ends) while the budget is spent; for an inline segment data aliases the metadata record
// (read-only). The caller calls done once it no longer uses data (done is never nil). A
// segment that fails verification is answered with DataCorrupted (counted and logged,
// corrupted); other failures with the *Error of AsError.
func (s *base) loadSegment(ctx context.Context, agent string, sg meta.Segment, from, n int64) (data []byte, done func(), werr *Error) {
	if from < 0 || n < 0 || from+n > sg.Size {
		return nil, nil, AsError(fmt.Errorf("range [%d, +%d) outside a segment of %d bytes: %w", from, n, sg.Size, blob.ErrRange))
	}
	if sg.IsInline() {
		if err := verifyInline(sg); err != nil {
			return nil, nil, s.corrupted(agent, sg.Digest, corruptInline, err)
		}
		return sg.Inline[from : from+n], noop, nil
	}
	w := s.readWeight(n)
	if err := s.readBudget.Acquire(ctx, w); err != nil {
		return nil, nil, AsError(err)
	}
	return s.loadHeld(ctx, agent, sg, from, n, w)
}

// loadHeld is loadSegment for an object-store segment whose w bytes of read budget the
// caller took already: done (or a failure) gives them back.
func (s *base) loadHeld(ctx context.Context, agent string, sg meta.Segment, from, n, w int64) (data []byte, done func(), werr *Error) {
	fail := func(e *Error) ([]byte, func(), *Error) {
		s.readBudget.Release(w)
		return nil, nil, e
	}
	uid, err := s.rootUID(ctx, agent)
	if err != nil {
		return fail(AsError(err))
	}
	key := blob.Key{Root: uid, Digest: blob.Digest(sg.Digest)}
	buf := getSegBuf(n)
	done = func() { putSegBuf(buf); s.readBudget.Release(w) }
	if f, ok := s.cfg.SegmentCache.Get(key, sg.Size, blob.Blake3(sg.Blake3)); ok {
		_, err := f.ReadAt(*buf, from)
		f.Close()
		if err == nil {
			return *buf, done, nil
		}
		// The local disk failed us: drop the entry and read from the object store.
		s.cfg.SegmentCache.Remove(key)
	}
	rc, err := s.blobs.Get(segmentContext(ctx, sg), key, from, n)
	if err != nil {
		putSegBuf(buf)
		return fail(s.segmentError(agent, sg, err))
	}
	defer rc.Close()
	if err := blob.ReadVerified(rc, *buf); err != nil {
		putSegBuf(buf)
		return fail(s.segmentError(agent, sg, err))
	}
	if from == 0 && n == sg.Size {
		s.cfg.SegmentCache.Put(key, *buf) // verified whole: fill the cache
	}
	return *buf, done, nil
}

// cachedFile opens sg's verified file in the segment cache (Config.SegmentCache); nil
// when there is no cache, sg is inline, or the cache does not hold it (a miss is left to
// loadSegment, which counts it).
func (s *base) cachedFile(ctx context.Context, agent string, sg meta.Segment) *cache.File {
	key, ok := s.cacheKey(ctx, agent, sg)
	if !ok {
		return nil
	}
	f, _ := s.cfg.SegmentCache.Get(key, sg.Size, blob.Blake3(sg.Blake3))
	return f
}

// segmentContext is ctx for a read of sg's blob: when sg recorded a BLAKE3 the blob
// reader verifies the blob by it instead of by its SHA-256 (blob.WithBlake3); a segment
// without one (recorded before BLAKE3 digests, or compacted) verifies by SHA-256.
func segmentContext(ctx context.Context, sg meta.Segment) context.Context {
	return blob.WithBlake3(ctx, blob.Digest(sg.Digest), blob.Blake3(sg.Blake3))
}

// isCached reports whether sg is in the segment cache (without opening it).
func (s *base) isCached(ctx context.Context, agent string, sg meta.Segment) bool {
	_, ok := s.cacheKey(ctx, agent, sg)
	return ok
}

// cacheKey is sg's blob key when the segment cache holds it.
func (s *base) cacheKey(ctx context.Context, agent string, sg meta.Segment) (blob.Key, bool) {
	if s.cfg.SegmentCache == nil || sg.IsInline() {
		return blob.Key{}, false
	}
	uid, err := s.rootUID(ctx, agent)
	if err != nil {
		return blob.Key{}, false
	}
	key := blob.Key{Root: uid, Digest: blob.Digest(sg.Digest)}
	return key, s.cfg.SegmentCache.Contains(key)
}

// verifyInline checks an inline segment's bytes against its size and digest.
func verifyInline(sg meta.Segment) error {
	if int64(len(sg.Inline)) != sg.Size {
		return fmt.Errorf("inline segment of %d bytes, its record says %d", len(sg.Inline), sg.Size)
	}
	if got := sha256.Sum256(sg.Inline); got != sg.Digest {
		return fmt.Errorf("inline segment hashes to %s", DigestURI(got))
	}
	return nil
}

// segmentError maps a failure to read an object-store segment.
func (s *base) segmentError(agent string, sg meta.Segment, err error) *Error {
	if errors.Is(err, blob.ErrCorrupt) {
		return s.corrupted(agent, sg.Digest, corruptObjectStore, err)
	}
	return AsError(err)
}

// corrupted counts (cairn_blob_corrupt_total{source}), logs, and answers damaged stored
// bytes: a DataCorrupted error naming the segment's digest.
func (s *base) corrupted(agent string, digest meta.Digest, source string, cause error) *Error {
	if c := s.corrupt.Load(); c != nil {
		c.WithLabelValues(source).Inc()
	}
	s.log.Error("stored data failed verification and is not served; writing the same content again repairs it",
		"agent", agent, "digest", DigestURI(digest), "source", source, "err", cause)
	return dataCorrupted(&digest)
}

// instrumentCorrupt registers cairn_blob_corrupt_total{source="object_store"|"inline"}
// on reg: the reads that found stored bytes failing verification against their digest
// (each was answered DataCorrupted and logged with the digest). Services registering on
// one registry share the counter.
func instrumentCorrupt(reg prometheus.Registerer, corrupt *atomic.Pointer[prometheus.CounterVec]) error {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "blob", Name: "corrupt_total",
		Help: "Segment reads whose stored bytes failed verification against their digest (answered DataCorrupted), by where the bytes were stored (object_store, inline)."},
		[]string{"source"})
	if err := reg.Register(c); err != nil {
		// Several services of one node (the follower read path) share the counter.
		var are prometheus.AlreadyRegisteredError
		existing, ok := (*prometheus.CounterVec)(nil), false
		if errors.As(err, &are) {
			existing, ok = are.ExistingCollector.(*prometheus.CounterVec)
		}
		if !ok {
			return fmt.Errorf("workbench: integrity metrics: %w", err)
		}
		c = existing
	}
	corrupt.Store(c)
	return nil
}
