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
// SingleSegmentMaxBytes+1 bytes of lookahead plus ChunkMaxBytes of segment buffer.
//
// A Splitter is not safe for concurrent use.
type Splitter struct {
	r       io.Reader
	started bool
	ch      *chunker.Chunker
	buf     []byte
	err     error
}

// NewSplitter returns a Splitter that reads the body from r.
func NewSplitter(r io.Reader) *Splitter { return &Splitter{r: r} }

// Next returns the next segment of the body, at least one byte long, or io.EOF after the
// last (a zero-byte body yields no segments). An error of the body's reader is returned
// unchanged, and then again by every later call. The returned slice is valid until the next
// call, which may overwrite it.
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
		head, err := io.ReadAll(io.LimitReader(s.r, SingleSegmentMaxBytes+1))
		if err != nil {
			s.err = err
			return nil, err
		}
		if len(head) == 0 {
			s.err = io.EOF
			return nil, s.err
		}
		if len(head) <= SingleSegmentMaxBytes {
			return head, nil
		}
		// io.MultiReader drops head once it is consumed, which bounds memory.
		s.ch = chunker.NewWithBoundaries(io.MultiReader(bytes.NewReader(head), strictReader{s.r}),
			ChunkPolynomial, ChunkMinBytes, ChunkMaxBytes)
		s.ch.SetAverageBits(chunkAverageBits)
		s.buf = make([]byte, 0, ChunkMaxBytes)
	}
	c, err := s.ch.Next(s.buf)
	if err != nil {
		var re *readError
		if errors.As(err, &re) {
			err = re.err
		}
		s.err = err
		s.ch, s.buf = nil, nil
		return nil, err
	}
	return c.Data, nil
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
