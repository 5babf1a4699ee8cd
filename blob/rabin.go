package blob

import (
	"bytes"
	"errors"
	"io"

	"github.com/restic/chunker"
)

// Chunk sizes of ChunkRabin, in bytes.
const (
	// RabinMinBytes: every ChunkRabin chunk but a body's last is at least this long.
	RabinMinBytes = 1 << 20
	// RabinAvgBytes: the nominal average chunk length, 2^rabinAverageBits: past a chunk's
	// first RabinMinBytes, a cut comes every RabinAvgBytes on average. The mean chunk is thus
	// RabinMinBytes + RabinAvgBytes·(1 − e^−(ChunkMaxBytes−RabinMinBytes)/RabinAvgBytes) ≈ 4.9 MiB
	// (4.7 MiB measured over 2 GiB of random bytes).
	RabinAvgBytes = 4 << 20
)

// ChunkPolynomial is the Rabin polynomial (irreducible, degree 53) of ChunkRabin. It is
// fixed forever: a different one cuts the same bytes elsewhere and silently defeats dedupe
// against every blob already stored (docs/architecture.md#the-write-path). It was drawn once with
// chunker.RandomPolynomial.
const ChunkPolynomial chunker.Pol = 0x2d566fc01bd237

// rabinAverageBits: a cut is made where the low bits of the rolling hash are all zero,
// which happens every 2^bits bytes on average.
const rabinAverageBits = 22

// rabinSplitter cuts ChunkRabin chunks with restic/chunker, which copies each chunk from
// its own read buffer into the segment buffer.
type rabinSplitter struct{ ch *chunker.Chunker }

func newRabinSplitter(head []byte, r io.Reader) *rabinSplitter {
	// io.MultiReader drops head once it is consumed, which bounds memory.
	ch := chunker.NewWithBoundaries(io.MultiReader(bytes.NewReader(head), strictReader{r}),
		ChunkPolynomial, RabinMinBytes, ChunkMaxBytes)
	ch.SetAverageBits(rabinAverageBits)
	return &rabinSplitter{ch: ch}
}

func (s *rabinSplitter) next(alloc func(int) []byte) ([]byte, error) {
	// restic/chunker appends the chunk to the buffer it is given, which holds the longest.
	c, err := s.ch.Next(alloc(ChunkMaxBytes)[:0])
	if err != nil {
		var re *readError
		if errors.As(err, &re) {
			err = re.err
		}
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
