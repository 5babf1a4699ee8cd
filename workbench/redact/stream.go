package redact

import (
	"io"
	"slices"
)

// Streaming bounds, in bytes.
const (
	// StreamWindowBytes is the input a stream holds back undecided: the longest candidate
	// (a PEM block, MaxPEMBytes) and what deciding it looks at past its end (a marker and
	// two bytes). A candidate starting this far before the end of what was read is known
	// whole, with all that decides it.
	StreamWindowBytes = MaxPEMBytes + maxMarkerBytes + 2
	// StreamChunkBytes is how much a stream decides at a time beyond the window.
	StreamChunkBytes = 64 << 10
	// StreamMaxRunBytes bounds the run of overlapping candidates a stream decides whole:
	// a longer one (only a pathological body has one) is decided in pieces, each replaced
	// by its own marker. A stream holds at most StreamWindowBytes + StreamChunkBytes +
	// StreamMaxRunBytes of input.
	StreamMaxRunBytes = 3 * StreamWindowBytes
	// contextBytes of input already given out are kept before the undecided ones: what
	// a candidate's boundary check looks at before its start (a marker).
	contextBytes = maxMarkerBytes + 1
)

// NewReader returns a reader of src redacted for the tenant: the bytes Redact would give
// for all of src (but where a run of overlapping candidates is longer than
// StreamMaxRunBytes), holding at most StreamWindowBytes + StreamChunkBytes +
// StreamMaxRunBytes of src at once. An error of src is returned as it is; no undecided
// byte is given out before it.
func (r *Redactor) NewReader(tenant string, src io.Reader) io.Reader {
	return &reader{t: r.tenant(tenant), src: src, chunk: StreamChunkBytes}
}

type reader struct {
	t     *tenant
	src   io.Reader
	chunk int // StreamChunkBytes (tests decide less at a time)
	// buf[:keep] is context already given out, buf[keep:] input not yet decided.
	buf  []byte
	keep int
	// out is redacted output not yet read; outBuf its storage.
	out, outBuf []byte
	cands       []candidate
	// extra is how much more than a chunk step reads, while a run of candidates spans
	// the window's start (at most StreamMaxRunBytes).
	extra int
	eof   bool  // src is exhausted
	err   error // returned once out is drained: io.EOF or src's error
}

func (z *reader) Read(p []byte) (int, error) {
	for len(z.out) == 0 {
		if z.err != nil {
			return 0, z.err
		}
		z.step()
	}
	n := copy(p, z.out)
	z.out = z.out[n:]
	return n, nil
}

// step reads until a chunk beyond the window is held (or src ends) and decides what it
// can: up to a point that no candidate crosses.
func (z *reader) step() {
	target := z.keep + StreamWindowBytes + z.chunk + z.extra
	if cap(z.buf) < target {
		z.buf = slices.Grow(z.buf, target-len(z.buf))
	}
	for !z.eof && len(z.buf) < target {
		n, err := z.src.Read(z.buf[len(z.buf):target])
		z.buf = z.buf[:len(z.buf)+n]
		switch {
		case err == io.EOF:
			z.eof = true
		case err != nil:
			z.err = err
			return
		}
	}
	end := len(z.buf)
	if z.eof {
		z.cands = z.t.candidates(z.cands[:0], z.buf, z.keep, end)
		z.emit(end, choose(z.cands))
		z.err = io.EOF
		return
	}
	trusted := end - StreamWindowBytes
	z.cands = z.t.candidates(z.cands[:0], z.buf, z.keep, trusted)
	cut := cutBefore(z.cands, trusted)
	var chosen []candidate
	switch {
	case cut > z.keep:
		kept := z.cands[:0]
		for _, c := range z.cands {
			if c.start < cut {
				kept = append(kept, c)
			}
		}
		chosen = choose(kept)
	case z.extra < StreamMaxRunBytes:
		// A run of overlapping candidates from keep past the window: read on, it likely
		// ends soon.
		z.extra += StreamWindowBytes
		return
	default:
		// The run is longer than StreamMaxRunBytes: replace what is known of it, up to
		// the end of its last candidate starting before the window.
		chosen = choose(z.cands)
		cut = max(trusted, chosen[len(chosen)-1].end)
	}
	z.extra = 0
	z.emit(cut, chosen)
}

// cutBefore returns trusted, or the start of the run of overlapping candidates that
// spans it (cands start before trusted).
func cutBefore(cands []candidate, trusted int) int {
	slices.SortFunc(cands, func(a, b candidate) int { return a.start - b.start })
	runStart, runEnd := 0, -1
	for _, c := range cands {
		if c.start >= runEnd {
			runStart, runEnd = c.start, c.end
		} else {
			runEnd = max(runEnd, c.end)
		}
	}
	if runStart < trusted && runEnd > trusted {
		return runStart
	}
	return trusted
}

// emit gives out buf[keep:cut] with chosen replaced, and keeps contextBytes before cut.
func (z *reader) emit(cut int, chosen []candidate) {
	z.outBuf = z.t.render(z.outBuf[:0], z.buf, z.keep, cut, chosen)
	z.out = z.outBuf
	drop := max(0, cut-contextBytes)
	n := copy(z.buf, z.buf[drop:])
	z.buf = z.buf[:n]
	z.keep = cut - drop
}
