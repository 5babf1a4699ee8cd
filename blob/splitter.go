package blob

import (
	"errors"
	"fmt"
	"io"
)

// Segment sizes of the write path (docs/architecture.md#the-write-path), in bytes.
const (
	// SingleSegmentMaxBytes: a body up to this length is one segment, in every format.
	SingleSegmentMaxBytes = 8 << 20
	// ChunkMaxBytes: no chunk is longer, in any format; a chunk that reaches it is cut
	// there.
	ChunkMaxBytes = 16 << 20
)

// ErrChunkFormat: a Splitter was asked for a ChunkFormat this build does not know.
var ErrChunkFormat = errors.New("unknown chunk format")

// Splitter cuts a body into segments, reading it once (docs/architecture.md#the-write-path). A body of up to
// SingleSegmentMaxBytes is one segment. A longer one is cut by content-defined chunking in
// the Splitter's ChunkFormat, so the same bytes are always cut at the same places and an
// edit only changes the segments around it. A Splitter holds at most
// SingleSegmentMaxBytes+1 bytes of lookahead besides the segments it hands out.
//
// A Splitter is not safe for concurrent use.
type Splitter struct {
	r       io.Reader
	hint    int64
	format  ChunkFormat
	alloc   func(n int) []byte
	started bool
	single  bool
	err     error
	// ChunkGear: the bytes read past the last cut; whether r reported io.EOF.
	chunking bool
	carry    []byte
	eof      bool
	// ChunkRabin.
	rabin *rabinSplitter
}

// NewSplitter returns a Splitter that reads the body from r and cuts it in format.
// sizeHint > 0 is the body's length in bytes when the caller knows it (an HTTP
// Content-Length): it sizes the first read buffer exactly, and nothing else depends on it
// (a body of another length is split all the same). alloc, when not nil, provides the
// memory of the segments Next returns (a slice of length n, e.g. from a pool of buffers);
// nil means make. A format this build does not know fails the first Next with
// ErrChunkFormat.
func NewSplitter(r io.Reader, sizeHint int64, format ChunkFormat, alloc func(n int) []byte) *Splitter {
	if alloc == nil {
		alloc = func(n int) []byte { return make([]byte, n) }
	}
	return &Splitter{r: r, hint: sizeHint, format: format, alloc: alloc}
}

// Format returns the format the Splitter cuts in.
func (s *Splitter) Format() ChunkFormat { return s.format }

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
	seg, err := s.next()
	if err != nil {
		s.err = err
		s.rabin, s.carry = nil, nil
		return nil, err
	}
	return seg, nil
}

func (s *Splitter) next() ([]byte, error) {
	switch {
	case s.rabin != nil:
		return s.rabin.next(s.alloc)
	case s.chunking:
		return s.nextGear(nil, 0)
	case s.started:
		// The single segment was returned by the previous call.
		return nil, io.EOF
	}
	s.started = true
	if !s.format.Known() {
		return nil, fmt.Errorf("blob: splitter: chunk format %d: %w", s.format, ErrChunkFormat)
	}
	head, err := s.readHead()
	if err != nil {
		return nil, err
	}
	if len(head) == 0 {
		return nil, io.EOF
	}
	if len(head) <= SingleSegmentMaxBytes {
		s.single = true
		return head, nil
	}
	s.chunking = true
	if s.format == ChunkRabin {
		s.rabin = newRabinSplitter(head, s.r)
		return s.rabin.next(s.alloc)
	}
	buf := head[:cap(head)]
	if len(buf) < ChunkMaxBytes {
		// Read without a size hint: move the head into a segment buffer once.
		buf = s.alloc(ChunkMaxBytes)[:ChunkMaxBytes]
		copy(buf, head)
	}
	return s.nextGear(buf, len(head))
}

// readHead reads the body's first SingleSegmentMaxBytes+1 bytes (all of a shorter body)
// into a buffer sized by the hint: exactly, for a body of the hinted length up to
// SingleSegmentMaxBytes; for a longer one, in ChunkGear, a segment buffer of
// ChunkMaxBytes that the first chunk is then cut in. Without a hint it grows the buffer as
// io.ReadAll does. Any error of the reader but io.EOF, io.ErrUnexpectedEOF included (an
// HTTP body cut off), fails.
func (s *Splitter) readHead() ([]byte, error) {
	const limit = SingleSegmentMaxBytes + 1
	var buf []byte
	switch {
	case s.hint <= 0:
		return io.ReadAll(io.LimitReader(s.r, limit))
	case s.hint < limit:
		buf = s.alloc(int(s.hint) + 1) // one byte more, to see the end without a second buffer
	case s.format == ChunkGear:
		buf = s.alloc(ChunkMaxBytes)[:limit]
	default:
		buf = make([]byte, limit) // ChunkRabin reads the head through into its chunks
	}
	n := 0
	for n < len(buf) {
		m, err := s.r.Read(buf[n:])
		n += m
		if err == io.EOF {
			s.eof = true
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
