package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// scratchBytes is the buffer a reader decodes into while it skips the bytes before the
// requested range and verifies the bytes after it.
const scratchBytes = 64 << 10

var scratchPool = sync.Pool{New: func() any { b := make([]byte, scratchBytes); return &b }}

// drainBytes is the copy buffer of Drain.
const drainBytes = 256 << 10

var drainPool = sync.Pool{New: func() any { b := make([]byte, drainBytes); return &b }}

// Drain reads r to its end in reads of 256 KiB from a pooled buffer (io.Copy to
// io.Discard would read 8 KiB at a time) and returns the first error but io.EOF. Backends
// drain a reader from NewReader to verify a whole blob (put-if-absent). A reader that
// keeps returning no bytes and no error fails with io.ErrNoProgress.
func Drain(r io.Reader) error {
	bp := drainPool.Get().(*[]byte)
	defer drainPool.Put(bp)
	for empty := 0; empty < maxEmptyReads; {
		n, err := r.Read(*bp)
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		case n == 0:
			empty++
		default:
			empty = 0
		}
	}
	return io.ErrNoProgress
}

// maxEmptyReads bounds how often a payload may return (0, nil) in a row before the reader
// gives up with io.ErrNoProgress, as bufio does.
const maxEmptyReads = 100

// NewReader returns the reader Store.Get hands out, for backends to share. payload streams
// the stored form (encoding enc) of the blob named key, whose uncompressed length is size
// bytes. The reader yields the uncompressed bytes [offset, offset+length) (length < 0: to
// the end; a range past the end is cut at the end) and verifies the whole blob: it decodes
// and hashes the bytes before and after the range too, and in place of io.EOF returns an
// error wrapping ErrCorrupt when the payload is undecodable, shorter or longer than size, or
// does not hash to key.Digest: under a context from WithBlake3 for this blob, the reader
// computes the BLAKE3 instead of the SHA-256 and checks it against the one given there.
// Errors from payload itself are returned wrapped in ErrUnavailable. Once ctx is done,
// Read fails with ctx's error.
//
// NewReader fails with ErrRange when offset < 0 or offset > size, and with ErrCorrupt when
// enc is unknown or size < 0. The returned reader owns payload and closes it on Close; on
// error NewReader closes payload itself.
func NewReader(ctx context.Context, key Key, payload io.ReadCloser, enc Encoding, size, offset, length int64) (io.ReadCloser, error) {
	if size < 0 {
		payload.Close()
		return nil, fmt.Errorf("blob %s: negative size %d: %w", key, size, ErrCorrupt)
	}
	if offset < 0 || offset > size {
		payload.Close()
		return nil, fmt.Errorf("blob %s: offset %d outside [0, %d]: %w", key, offset, size, ErrRange)
	}
	end := size
	if length >= 0 && length < size-offset {
		end = offset + length
	}
	r := &reader{
		ctx:     ctx,
		key:     key,
		payload: &trackingReader{r: payload},
		closer:  payload,
		v:       newVerifier(key, blake3For(ctx, key.Digest)),
		size:    size,
		start:   offset,
		end:     end,
	}
	switch enc {
	case EncodingIdentity:
		r.src = r.payload
	case EncodingZstd:
		d, err := getDecoder()
		if err != nil {
			payload.Close()
			return nil, fmt.Errorf("blob %s: zstd decoder: %w", key, err)
		}
		if err := d.Reset(r.payload); err != nil {
			putDecoder(d)
			payload.Close()
			return nil, fmt.Errorf("blob %s: zstd decoder: %w", key, err)
		}
		r.dec = d
		r.src = d
	default:
		payload.Close()
		return nil, fmt.Errorf("blob %s: unknown encoding %d: %w", key, uint8(enc), ErrCorrupt)
	}
	return r, nil
}

// reader decodes, hashes and cuts a blob. pos counts the uncompressed bytes taken from src
// (all of them hashed); bytes in [start, end) go to the caller, the others to a scratch
// buffer. err is sticky: io.EOF after successful verification, or the first failure.
type reader struct {
	ctx     context.Context
	key     Key
	payload *trackingReader
	closer  io.Closer
	dec     *zstd.Decoder // nil for identity
	src     io.Reader
	v       *verifier // hashes every uncompressed byte; released on Close
	size    int64
	pos     int64
	start   int64
	end     int64
	err     error
	closed  bool
}

// trackingReader remembers the payload's own failures, so that the reader can tell an I/O
// error (ErrUnavailable, retryable) from an undecodable payload (ErrCorrupt).
type trackingReader struct {
	r   io.Reader
	err error
}

func (t *trackingReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}

func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, fmt.Errorf("blob %s: read: %w", r.key, fs.ErrClosed)
	}
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := r.ctx.Err(); err != nil {
		return 0, r.fail(fmt.Errorf("blob %s: %w", r.key, err))
	}
	if r.pos < r.start {
		if err := r.discard(r.start); err != nil {
			return 0, r.fail(err)
		}
	}
	if r.pos < r.end {
		if rem := r.end - r.pos; int64(len(p)) > rem {
			p = p[:rem]
		}
		n, err := r.next(p)
		if err != nil {
			return n, r.fail(err)
		}
		return n, nil
	}
	if err := r.discard(r.size); err != nil {
		return 0, r.fail(err)
	}
	return 0, r.fail(r.verify())
}

func (r *reader) fail(err error) error {
	r.err = err
	return err
}

// next reads at least one byte into p (cut so that pos never passes size) and hashes it.
func (r *reader) next(p []byte) (int, error) {
	if rem := r.size - r.pos; int64(len(p)) > rem {
		p = p[:rem]
	}
	for empty := 0; ; empty++ {
		n, err := r.src.Read(p)
		r.v.Write(p[:n])
		r.pos += int64(n)
		switch {
		case err == io.EOF && r.pos < r.size:
			return n, r.corrupt(fmt.Sprintf("payload ends after %d of %d bytes", r.pos, r.size))
		case err != nil && err != io.EOF:
			return n, r.srcError(err)
		case n > 0 || len(p) == 0:
			return n, nil
		case empty >= maxEmptyReads:
			return 0, r.srcError(io.ErrNoProgress)
		}
	}
}

// discard hashes and drops bytes up to position to.
func (r *reader) discard(to int64) error {
	if r.pos >= to {
		return nil
	}
	bp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(bp)
	buf := *bp
	for r.pos < to {
		if err := r.ctx.Err(); err != nil {
			return fmt.Errorf("blob %s: %w", r.key, err)
		}
		chunk := buf
		if rem := to - r.pos; int64(len(chunk)) > rem {
			chunk = chunk[:rem]
		}
		if _, err := r.next(chunk); err != nil {
			return err
		}
	}
	return nil
}

// verify runs at pos == size: the source must be exhausted and the digest (the BLAKE3
// when the caller gave one, else the SHA-256) must match.
func (r *reader) verify() error {
	var one [1]byte
	for empty := 0; ; empty++ {
		n, err := r.src.Read(one[:])
		if n > 0 {
			return r.corrupt(fmt.Sprintf("payload is longer than its %d bytes", r.size))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return r.srcError(err)
		}
		if empty >= maxEmptyReads {
			return r.srcError(io.ErrNoProgress)
		}
	}
	if err := r.v.check(); err != nil {
		return fmt.Errorf("blob %s: %w", r.key, err)
	}
	return io.EOF
}

func (r *reader) corrupt(what string) error {
	return fmt.Errorf("blob %s: %s: %w", r.key, what, ErrCorrupt)
}

// srcError classifies an error from src: a failure of the payload itself is an I/O error;
// anything else the decoder reports means the payload is not valid zstd.
func (r *reader) srcError(err error) error {
	if r.payload.err != nil {
		return fmt.Errorf("blob %s: read payload: %w: %w", r.key, ErrUnavailable, r.payload.err)
	}
	if errors.Is(err, io.ErrNoProgress) {
		return fmt.Errorf("blob %s: read payload: %w: %w", r.key, ErrUnavailable, err)
	}
	return fmt.Errorf("blob %s: undecodable payload: %v: %w", r.key, err, ErrCorrupt)
}

// Close releases the decoder and closes the payload. It is idempotent.
func (r *reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.v.release()
	if r.dec != nil {
		putDecoder(r.dec)
		r.dec = nil
	}
	r.src = nil
	return r.closer.Close()
}

// ReadVerified fills dst from r, a reader from Store.Get, and then reads on to r's io.EOF:
// the reader verifies the whole blob in place of its EOF, so dst holds verified bytes only
// when ReadVerified returns nil. A blob that ends before dst is full, or holds more bytes
// than dst, is an error wrapping ErrCorrupt; a reader that stops making progress, one
// wrapping ErrUnavailable and io.ErrNoProgress; r's own errors are returned as they are.
// The callers that must not pass on unverified bytes (the Workbench read path, the
// compactor) read segments through it.
func ReadVerified(r io.Reader, dst []byte) error {
	if _, err := io.ReadFull(r, dst); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return fmt.Errorf("the blob ended after fewer bytes than asked for: %w", ErrCorrupt)
		}
		return err
	}
	var one [1]byte
	for empty := 0; empty < maxEmptyReads; empty++ {
		n, err := r.Read(one[:])
		switch {
		case n > 0:
			return fmt.Errorf("the blob holds more bytes than the range asked for: %w", ErrCorrupt)
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
	return fmt.Errorf("blob reader: %w: %w", ErrUnavailable, io.ErrNoProgress)
}
