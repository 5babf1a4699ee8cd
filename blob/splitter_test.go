package blob_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/cairnstore/cairn/blob"
)

// split returns copies of every segment of r.
func split(t *testing.T, r io.Reader) [][]byte {
	t.Helper()
	s := blob.NewSplitter(r, 0, nil)
	var segs [][]byte
	for {
		seg, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next after %d segments: %v", len(segs), err)
		}
		if len(seg) == 0 {
			t.Fatalf("Next returned an empty segment")
		}
		segs = append(segs, bytes.Clone(seg))
	}
	if _, err := s.Next(); err != io.EOF {
		t.Fatalf("Next after io.EOF: %v, want io.EOF again", err)
	}
	return segs
}

func lengths(segs [][]byte) []int {
	n := make([]int, len(segs))
	for i, s := range segs {
		n[i] = len(s)
	}
	return n
}

func checkConcat(t *testing.T, segs [][]byte, body []byte) {
	t.Helper()
	if got := bytes.Join(segs, nil); !bytes.Equal(got, body) {
		t.Fatalf("the %d segments join to %d bytes that differ from the %d-byte body", len(segs), len(got), len(body))
	}
}

func TestChunkingParameters(t *testing.T) {
	if !blob.ChunkPolynomial.Irreducible() || blob.ChunkPolynomial.Deg() != 53 {
		t.Errorf("ChunkPolynomial %v: irreducible %v, degree %d; want an irreducible polynomial of degree 53",
			blob.ChunkPolynomial, blob.ChunkPolynomial.Irreducible(), blob.ChunkPolynomial.Deg())
	}
	if blob.ChunkMinBytes >= blob.ChunkAvgBytes || blob.ChunkAvgBytes >= blob.ChunkMaxBytes ||
		blob.ChunkAvgBytes&(blob.ChunkAvgBytes-1) != 0 || blob.SingleSegmentMaxBytes < blob.ChunkMinBytes {
		t.Errorf("segment sizes out of order, or the average is not a power of two")
	}
}

func TestSmallBodiesAreOneSegment(t *testing.T) {
	cases := []struct {
		name string
		n    int
	}{
		{"one byte", 1},
		{"a few KiB", 5000},
		{"exactly SingleSegmentMaxBytes", blob.SingleSegmentMaxBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := randomBytes(uint64(tc.n), tc.n)
			segs := split(t, iotest.HalfReader(bytes.NewReader(body)))
			if len(segs) != 1 {
				t.Fatalf("a %d-byte body gave %d segments %v, want 1", tc.n, len(segs), lengths(segs))
			}
			checkConcat(t, segs, body)
		})
	}
	t.Run("an empty body has no segments", func(t *testing.T) {
		if segs := split(t, bytes.NewReader(nil)); len(segs) != 0 {
			t.Errorf("an empty body gave %d segments", len(segs))
		}
	})
	t.Run("one byte more than SingleSegmentMaxBytes is chunked", func(t *testing.T) {
		body := randomBytes(9, blob.SingleSegmentMaxBytes+1)
		segs := split(t, bytes.NewReader(body))
		checkConcat(t, segs, body)
		for i, s := range segs[:len(segs)-1] {
			if len(s) < blob.ChunkMinBytes {
				t.Errorf("segment %d of %d is %d bytes, under ChunkMinBytes", i, len(segs), len(s))
			}
		}
	})
}

func TestLargeBodiesAreChunkedWithinBounds(t *testing.T) {
	body := randomBytes(40, 40<<20)
	segs := split(t, bytes.NewReader(body))
	checkConcat(t, segs, body)
	if len(segs) < 3 {
		t.Fatalf("a 40 MiB body gave %d segments %v; want several", len(segs), lengths(segs))
	}
	for i, s := range segs {
		last := i == len(segs)-1
		if len(s) > blob.ChunkMaxBytes || (!last && len(s) < blob.ChunkMinBytes) {
			t.Errorf("segment %d of %d is %d bytes, outside [ChunkMinBytes, ChunkMaxBytes]", i, len(segs), len(s))
		}
	}
	t.Logf("segment lengths: %v", lengths(segs))
}

func TestCutsAreDeterministic(t *testing.T) {
	body := randomBytes(41, 40<<20)
	a := lengths(split(t, bytes.NewReader(body)))
	// Different read sizes must not move the cuts.
	b := lengths(split(t, iotest.HalfReader(bytes.NewReader(body))))
	if !equalInts(a, b) {
		t.Errorf("the same body was cut as %v and as %v", a, b)
	}
}

// TestCutsAreStable pins where one fixed body is cut. If it fails, the chunking parameters
// changed: every body stored before the change will no longer dedupe (DESIGN.md §5).
func TestCutsAreStable(t *testing.T) {
	body := randomBytes(42, 24<<20)
	got := lengths(split(t, bytes.NewReader(body)))
	want := goldenCuts
	if !equalInts(got, want) {
		t.Errorf("a fixed 24 MiB body is now cut as %v, was %v", got, want)
	}
}

var goldenCuts = []int{4228742, 5159805, 6682158, 5267209, 2533694, 1294216}

func TestAnInsertionChangesFewSegments(t *testing.T) {
	n := 64 << 20
	if testing.Short() {
		n = 32 << 20
	}
	body := randomBytes(43, n)
	edited := make([]byte, 0, n+1<<20)
	edited = append(edited, body[:n/2]...)
	edited = append(edited, randomBytes(44, 1<<20)...)
	edited = append(edited, body[n/2:]...)

	before := digests(split(t, bytes.NewReader(body)))
	after := digests(split(t, bytes.NewReader(edited)))
	added, removed := 0, 0
	for d := range after {
		if !before[d] {
			added++
		}
	}
	for d := range before {
		if !after[d] {
			removed++
		}
	}
	if added > 3 || removed > 3 {
		t.Errorf("inserting 1 MiB into a %d MiB body added %d and removed %d of %d segments; want at most 3 each",
			n>>20, added, removed, len(before))
	}
}

func digests(segs [][]byte) map[blob.Digest]bool {
	m := make(map[blob.Digest]bool, len(segs))
	for _, s := range segs {
		m[blob.DigestOf(s)] = true
	}
	return m
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSplitterReturnsReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	for _, n := range []int{0, 1000, 20 << 20} {
		s := blob.NewSplitter(errAfter(randomBytes(uint64(n), n), boom), 0, nil)
		var err error
		for err == nil {
			_, err = s.Next()
		}
		if err != boom {
			t.Errorf("after %d bytes: Next failed with %v, want the reader's error unchanged", n, err)
		}
		if _, again := s.Next(); again != boom {
			t.Errorf("Next after a failure: %v, want the same error", again)
		}
	}
}

// truncatedBody yields n bytes, then fails every read with io.ErrUnexpectedEOF, the way an
// HTTP request body cut off mid-stream does.
type truncatedBody struct{ left int }

func (b *truncatedBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := min(len(p), b.left)
	for i := range p[:n] {
		p[i] = byte(b.left - i)
	}
	b.left -= n
	return n, nil
}

func TestSplitterReportsATruncatedBodyInsteadOfAcceptingIt(t *testing.T) {
	for _, n := range []int{100, blob.SingleSegmentMaxBytes + 1, 3*blob.ChunkMaxBytes + 5} {
		for _, hint := range []int64{0, int64(n)} {
			s := blob.NewSplitter(&truncatedBody{left: n}, hint, nil)
			var err error
			for i := 0; i < 100 && err == nil; i++ {
				_, err = s.Next()
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%d-byte truncated body, size hint %d: %v, want io.ErrUnexpectedEOF", n, hint, err)
			}
		}
	}
}

// The size hint only sizes buffers: whatever it says, right or wrong, a body is cut into
// the same segments as without it, and Single tells a one-segment body from a chunked one.
func TestSplitterCutsTheSameWhateverTheSizeHint(t *testing.T) {
	for _, n := range []int{1, 1000, blob.SingleSegmentMaxBytes, blob.SingleSegmentMaxBytes + 1, 20 << 20} {
		body := randomBytes(uint64(n), n)
		want := lengths(split(t, bytes.NewReader(body)))
		for _, hint := range []int64{int64(n), int64(n) / 2, 2 * int64(n), 1, -1} {
			var allocs int
			s := blob.NewSplitter(bytes.NewReader(body), hint, func(n int) []byte { allocs++; return make([]byte, n) })
			var segs [][]byte
			for {
				seg, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				segs = append(segs, seg) // the caller's: later calls must not touch it
			}
			checkConcat(t, segs, body)
			if got := lengths(segs); !equalInts(got, want) {
				t.Errorf("%d-byte body, size hint %d: segments %v, want %v as without a hint", n, hint, got, want)
			}
			if s.Single() != (len(want) == 1 && n <= blob.SingleSegmentMaxBytes) {
				t.Errorf("%d-byte body, size hint %d: Single() = %v with %d segments", n, hint, s.Single(), len(want))
			}
			if hint == int64(n) && allocs == 0 {
				t.Errorf("%d-byte body, exact size hint: no segment memory came from alloc", n)
			}
		}
	}
}
