package blob

import (
	"bytes"
	"errors"
	"io"

	"github.com/restic/chunker"
)

// Segment sizes of the write path (DESIGN.md §5), in bytes.
const (
	// SingleSegmentMaxBytes: a body up to this length is one segment.
	SingleSegmentMaxBytes = 8 << 20
	// ChunkMinBytes: every content-defined chunk but a body's last is at least this long.
	ChunkMinBytes = 1 << 20
	// ChunkAvgBytes: the nominal average chunk length, 2^chunkAverageBits: past a chunk's
	// first ChunkMinBytes, a cut comes every ChunkAvgBytes on average. The mean chunk is thus
	// ChunkMinBytes + ChunkAvgBytes·(1 − e^−(ChunkMaxBytes−ChunkMinBytes)/ChunkAvgBytes) ≈ 4.9 MiB
	// (4.7 MiB measured over 2 GiB of random bytes).
	ChunkAvgBytes = 4 << 20
	// ChunkMaxBytes: no chunk is longer; a chunk that reaches it is cut there.
	ChunkMaxBytes = 16 << 20
)

// ChunkPolynomial is the Rabin polynomial (irreducible, degree 53) of content-defined
// chunking. It is fixed forever: a different one cuts the same bytes elsewhere and silently
// defeats dedupe against every blob already stored (DESIGN.md §5). It was drawn once with
// chunker.RandomPolynomial.
const ChunkPolynomial chunker.Pol = 0x2d566fc01bd237

// chunkAverageBits: a cut is made where the low bits of the rolling hash are all zero,
// which happens every 2^bits bytes on average.
const chunkAverageBits = 22

// Splitter cuts a body into segments, reading it once (DESIGN.md §5). A body of up to
// SingleSegmentMaxBytes is one segment. A longer one is cut by content-defined chunking
// (Rabin fingerprints over a 64-byte window, ChunkPolynomial, chunks of ChunkMinBytes to
// ChunkMaxBytes, ChunkAvgBytes nominal), so the same bytes are always cut at the same
// places and an edit only changes the segments around it. A Splitter holds at most
// SingleSegmentMaxBytes+1 bytes of lookahead besides the segments it hands out.
//
// A Splitter is not safe for concurrent use.
type Splitter struct {
	r       io.Reader
	hint    int64
	alloc   func(n int) []byte
	started bool
	single  bool
	ch      *chunker.Chunker
	err     error
}

// NewSplitter returns a Splitter that reads the body from r. sizeHint > 0 is the body's
// length in bytes when the caller knows it (an HTTP Content-Length): it sizes the first
// read buffer exactly, and nothing else depends on it (a body of another length is split
// all the same). alloc, when not nil, provides the memory of the segments Next returns (a
// slice of length n, e.g. from a pool of buffers); nil means make.
func NewSplitter(r io.Reader, sizeHint int64, alloc func(n int) []byte) *Splitter {
	if alloc == nil {
		alloc = func(n int) []byte { return make([]byte, n) }
	}
	return &Splitter{r: r, hint: sizeHint, alloc: alloc}
}

// Single reports whether the segment Next returned first is the whole body (a body of at
// most SingleSegmentMaxBytes). It is meaningful once Next has returned a segment.
func (s *Splitter) Single() bool { return s.single }

// Next returns the next segment of the body, at least one byte long, or io.EOF after the
// last (a zero-byte body yields no segments). An error of the body's reader is returned
// unchanged, and then again by every later call. The returned slice is the caller's: it
// lies in memory from alloc (possibly with more capacity than its length) or, for a
// single segment read without a sizeHint, fresh memory, and the Splitter never touches it
// again, so the caller may keep it or give it back to where alloc took it from.
func (s *Splitter) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.ch == nil {
		if s.started {
			// The single segment was returned by the previous call.
			s.err = io.EOF
			return nil, s.err
		}
		s.started = true
		head, err := s.readHead()
		if err != nil {
			s.err = err
			return nil, err
		}
		if len(head) == 0 {
			s.err = io.EOF
			return nil, s.err
		}
		if len(head) <= SingleSegmentMaxBytes {
			s.single = true
			return head, nil
		}
		// io.MultiReader drops head once it is consumed, which bounds memory.
		s.ch = chunker.NewWithBoundaries(io.MultiReader(bytes.NewReader(head), strictReader{s.r}),
			ChunkPolynomial, ChunkMinBytes, ChunkMaxBytes)
		s.ch.SetAverageBits(chunkAverageBits)
	}
	// restic/chunker appends the chunk to the buffer it is given, which holds the longest.
	c, err := s.ch.Next(s.alloc(ChunkMaxBytes)[:0])
	if err != nil {
		var re *readError
		if errors.As(err, &re) {
			err = re.err
		}
		s.err = err
		s.ch = nil
		return nil, err
	}
	return c.Data, nil
}

// readHead reads the body's first SingleSegmentMaxBytes+1 bytes (all of a shorter body)
// into a buffer sized by the hint: exactly, for a body of the hinted length up to
// SingleSegmentMaxBytes. Without a hint it grows the buffer as io.ReadAll does. Any error
// of the reader but io.EOF, io.ErrUnexpectedEOF included (an HTTP body cut off), fails.
func (s *Splitter) readHead() ([]byte, error) {
	const limit = SingleSegmentMaxBytes + 1
	var buf []byte
	switch {
	case s.hint <= 0:
		return io.ReadAll(io.LimitReader(s.r, limit))
	case s.hint < limit:
		buf = s.alloc(int(s.hint) + 1) // one byte more, to see the end without a second buffer
	default:
		buf = make([]byte, limit) // a longer body: cut into chunks, head is read through
	}
	n := 0
	for n < len(buf) {
		m, err := s.r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
	if n == limit {
		return buf, nil
	}
	// Longer than the hint said: read on, growing the buffer.
	rest, err := io.ReadAll(io.LimitReader(s.r, int64(limit-n)))
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}

// strictReader keeps every failure of the body's reader distinct, by identity, from
// io.ErrUnexpectedEOF: restic/chunker treats that value as "no more bytes for now" and
// would accept a truncated body as complete, or spin forever on a reader that keeps
// returning it (an HTTP request body cut off mid-stream does exactly that).
type strictReader struct{ r io.Reader }

func (s strictReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = &readError{err: err}
	}
	return n, err
}

type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }
