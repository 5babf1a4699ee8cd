package blob_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/zeebo/xxh3"

	"github.com/cairnstore/cairn/blob"
)

// formats are the chunk formats every splitter test runs in, with each format's minimum
// chunk length.
var formats = []struct {
	format blob.ChunkFormat
	min    int
}{{blob.ChunkRabin, blob.RabinMinBytes}, {blob.ChunkGear, blob.GearMinBytes}}

// split returns copies of every segment of r, cut in format.
func split(t *testing.T, format blob.ChunkFormat, r io.Reader) [][]byte {
	t.Helper()
	return drain(t, blob.NewSplitter(r, 0, format, nil), bytes.Clone)
}

// drain calls s.Next until io.EOF and returns every segment as keep returns it (a copy,
// when s reuses its buffer). It fails the test on an error, on an empty segment, and when
// a Next after io.EOF does not return io.EOF again.
func drain(t *testing.T, s *blob.Splitter, keep func([]byte) []byte) [][]byte {
	t.Helper()
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
		segs = append(segs, keep(seg))
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
	if blob.RabinMinBytes >= blob.RabinAvgBytes || blob.RabinAvgBytes >= blob.ChunkMaxBytes ||
		blob.RabinAvgBytes&(blob.RabinAvgBytes-1) != 0 || blob.SingleSegmentMaxBytes < blob.RabinMinBytes {
		t.Errorf("Rabin segment sizes out of order, or the average is not a power of two")
	}
	if blob.GearMinBytes >= blob.GearNormalBytes || blob.GearNormalBytes >= blob.ChunkMaxBytes ||
		blob.SingleSegmentMaxBytes < blob.GearMinBytes {
		t.Errorf("gear segment sizes out of order")
	}
	if !blob.CurrentChunkFormat.Known() || blob.ChunkFormat(2).Known() {
		t.Errorf("Known: the current format must be known, format 2 not")
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
	for _, f := range formats {
		for _, tc := range cases {
			t.Run(f.format.String()+"/"+tc.name, func(t *testing.T) {
				body := randomBytes(uint64(tc.n), tc.n)
				segs := split(t, f.format, iotest.HalfReader(bytes.NewReader(body)))
				if len(segs) != 1 {
					t.Fatalf("a %d-byte body gave %d segments %v, want 1", tc.n, len(segs), lengths(segs))
				}
				checkConcat(t, segs, body)
			})
		}
		t.Run(f.format.String()+"/an empty body has no segments", func(t *testing.T) {
			if segs := split(t, f.format, bytes.NewReader(nil)); len(segs) != 0 {
				t.Errorf("an empty body gave %d segments", len(segs))
			}
		})
		t.Run(f.format.String()+"/one byte more than SingleSegmentMaxBytes is chunked", func(t *testing.T) {
			body := randomBytes(9, blob.SingleSegmentMaxBytes+1)
			segs := split(t, f.format, bytes.NewReader(body))
			checkConcat(t, segs, body)
			for i, s := range segs[:len(segs)-1] {
				if len(s) < f.min {
					t.Errorf("segment %d of %d is %d bytes, under the minimum %d", i, len(segs), len(s), f.min)
				}
			}
		})
	}
}

func TestLargeBodiesAreChunkedWithinBounds(t *testing.T) {
	body := randomBytes(40, 64<<20)
	for _, f := range formats {
		segs := split(t, f.format, bytes.NewReader(body))
		checkConcat(t, segs, body)
		if len(segs) < 3 {
			t.Fatalf("%s: a 64 MiB body gave %d segments %v; want several", f.format, len(segs), lengths(segs))
		}
		for i, s := range segs {
			last := i == len(segs)-1
			if len(s) > blob.ChunkMaxBytes || (!last && len(s) < f.min) {
				t.Errorf("%s: segment %d of %d is %d bytes, outside [%d, ChunkMaxBytes]", f.format, i, len(segs), len(s), f.min)
			}
		}
		t.Logf("%s: segment lengths: %v", f.format, lengths(segs))
	}
}

// A body of zeros (a sparse file) is cut the same in every chunk, so its chunks dedupe.
func TestARunOfZerosIsCutIntoEqualChunks(t *testing.T) {
	body := make([]byte, 40<<20)
	for _, f := range formats {
		if got := digests(split(t, f.format, bytes.NewReader(body))); len(got) > 2 {
			t.Errorf("%s: 40 MiB of zeros cut into %d distinct chunks, want at most 2 (equal ones and a last)", f.format, len(got))
		}
	}
}

func TestCutsAreDeterministic(t *testing.T) {
	body := randomBytes(41, 40<<20)
	for _, f := range formats {
		a := lengths(split(t, f.format, bytes.NewReader(body)))
		// Different read sizes must not move the cuts.
		for _, r := range []io.Reader{iotest.HalfReader(bytes.NewReader(body)), iotest.DataErrReader(bytes.NewReader(body)),
			&shortReads{r: bytes.NewReader(body)}} {
			if b := lengths(split(t, f.format, r)); !equalInts(a, b) {
				t.Errorf("%s: the same body was cut as %v and as %v", f.format, a, b)
			}
		}
	}
}

// shortReads returns at most 4093 bytes a call, with a (0, nil) read between calls.
type shortReads struct {
	r    io.Reader
	turn bool
}

func (s *shortReads) Read(p []byte) (int, error) {
	if s.turn = !s.turn; !s.turn {
		return 0, nil
	}
	return s.r.Read(p[:min(len(p), 4093)])
}

// TestCutsAreStable pins where one fixed body is cut in each format. If it fails, the
// chunking of a format changed: every body stored in it before the change will no longer
// dedupe (docs/architecture.md#the-write-path). A new way of cutting is a new ChunkFormat.
func TestCutsAreStable(t *testing.T) {
	body := randomBytes(42, 48<<20)
	for _, f := range formats {
		got := lengths(split(t, f.format, bytes.NewReader(body)))
		if want := goldenCuts[f.format]; !equalInts(got, want) {
			t.Errorf("%s: a fixed 48 MiB body is now cut as %#v, was %#v", f.format, got, want)
		}
	}
}

var goldenCuts = map[blob.ChunkFormat][]int{
	// The first five are those of the 24 MiB body this test cut before formats existed.
	blob.ChunkRabin: {4228742, 5159805, 6682158, 5267209, 2533694, 5037030, 6071234, 3589069, 8391605, 3258323, 112779},
	blob.ChunkGear:  {4598746, 9869035, 8990389, 4553850, 9189006, 4770754, 8359868},
}

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
	for _, f := range formats {
		added, removed := changed(digests(split(t, f.format, bytes.NewReader(body))), digests(split(t, f.format, bytes.NewReader(edited))))
		if added > 3 || removed > 3 {
			t.Errorf("%s: inserting 1 MiB into a %d MiB body added %d and removed %d segments; want at most 3 each",
				f.format, n>>20, added, removed)
		}
	}
}

// The property docs/architecture.md#the-write-path promises, in the current format, at full size: 1 MiB
// overwritten in the middle of a 1 GiB file stores at most 3 new objects. The bodies are
// generated as they are read, never held. Under the race detector (make test), where
// the full size takes minutes, and with -short, the body is 256 MiB (27 segments).
func TestOverwritingOneMiBOfAGiBStoresAtMostThreeNewSegments(t *testing.T) {
	n := int64(1 << 30)
	if testing.Short() || raceDetector {
		n = 256 << 20
	}
	off := n/2 + 12344
	before := set(splitStream(t, blob.CurrentChunkFormat, &generated{seed: 45, n: n}))
	after := set(splitStream(t, blob.CurrentChunkFormat, &generated{seed: 45, n: n, editOff: off, editLen: 1 << 20}))
	added, removed := changed(before, after)
	if added > 3 || removed > 3 {
		t.Errorf("overwriting 1 MiB of a %d MiB body added %d and removed %d of %d segments; want at most 3 each",
			n>>20, added, removed, len(before))
	}
	t.Logf("%d MiB in %d segments; 1 MiB overwritten: %d new, %d gone", n>>20, len(before), added, removed)
}

// splitStream returns an identity (XXH3-128, cheaper than the SHA-256 the write path
// computes, as good for telling segments apart here) of every segment of r, cut in format,
// reusing one segment buffer.
func splitStream(t *testing.T, format blob.ChunkFormat, r io.Reader) []xxh3.Uint128 {
	t.Helper()
	buf := make([]byte, blob.ChunkMaxBytes)
	s := blob.NewSplitter(r, 0, format, func(n int) []byte { return buf[:n] })
	var out []xxh3.Uint128
	for {
		seg, err := s.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, xxh3.Hash128(seg))
	}
}

// generated is an n-byte pseudo-random body (splitmix64 from seed) made as it is read,
// with bytes [editOff, editOff+editLen) replaced by others (both multiples of 8).
type generated struct {
	seed             uint64
	n, pos           int64
	editOff, editLen int64
}

func (g *generated) Read(p []byte) (int, error) {
	if g.pos == g.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.n-g.pos)]
	i := 0
	for ; i < len(p); i++ { // bytes up to a word boundary, and of a last partial word
		at := g.pos + int64(i)
		if at%8 == 0 && i+8 <= len(p) {
			break
		}
		p[i] = byte(g.wordAt(at&^7) >> (8 * (at % 8)))
	}
	for ; i+8 <= len(p); i += 8 {
		binary.LittleEndian.PutUint64(p[i:], g.wordAt(g.pos+int64(i)))
	}
	for ; i < len(p); i++ {
		at := g.pos + int64(i)
		p[i] = byte(g.wordAt(at&^7) >> (8 * (at % 8)))
	}
	g.pos += int64(len(p))
	return len(p), nil
}

// wordAt is the body's 8 bytes at offset at (a multiple of 8): splitmix64 of the offset
// and seed, so any word can be made on its own.
func (g *generated) wordAt(at int64) uint64 {
	x := uint64(at) + g.seed<<56
	if at >= g.editOff && at < g.editOff+g.editLen {
		x ^= 1 << 55
	}
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func changed[K comparable](before, after map[K]bool) (added, removed int) {
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
	return added, removed
}

func digests(segs [][]byte) map[blob.Digest]bool {
	m := make(map[blob.Digest]bool, len(segs))
	for _, s := range segs {
		m[blob.DigestOf(s)] = true
	}
	return m
}

func set[K comparable](ks []K) map[K]bool {
	m := make(map[K]bool, len(ks))
	for _, k := range ks {
		m[k] = true
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

func TestSplitterRefusesAnUnknownFormat(t *testing.T) {
	s := blob.NewSplitter(bytes.NewReader([]byte("x")), 1, blob.ChunkFormat(9), nil)
	if _, err := s.Next(); !errors.Is(err, blob.ErrChunkFormat) {
		t.Errorf("format 9: %v, want ErrChunkFormat", err)
	}
}

func TestSplitterReturnsReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	for _, f := range formats {
		for _, n := range []int{0, 1000, 20 << 20} {
			s := blob.NewSplitter(errAfter(randomBytes(uint64(n), n), boom), 0, f.format, nil)
			var err error
			for err == nil {
				_, err = s.Next()
			}
			if err != boom {
				t.Errorf("%s, after %d bytes: Next failed with %v, want the reader's error unchanged", f.format, n, err)
			}
			if _, again := s.Next(); again != boom {
				t.Errorf("%s: Next after a failure: %v, want the same error", f.format, again)
			}
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
	for _, f := range formats {
		for _, n := range []int{100, blob.SingleSegmentMaxBytes + 1, 3*blob.ChunkMaxBytes + 5} {
			for _, hint := range []int64{0, int64(n)} {
				s := blob.NewSplitter(&truncatedBody{left: n}, hint, f.format, nil)
				var err error
				for i := 0; i < 100 && err == nil; i++ {
					_, err = s.Next()
				}
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("%s: %d-byte truncated body, size hint %d: %v, want io.ErrUnexpectedEOF", f.format, n, hint, err)
				}
			}
		}
	}
}

// The size hint only sizes buffers: whatever it says, right or wrong, a body is cut into
// the same segments as without it, and Single tells a one-segment body from a chunked one.
func TestSplitterCutsTheSameWhateverTheSizeHint(t *testing.T) {
	for _, f := range formats {
		for _, n := range []int{1, 1000, blob.SingleSegmentMaxBytes, blob.SingleSegmentMaxBytes + 1, 20 << 20} {
			body := randomBytes(uint64(n), n)
			want := lengths(split(t, f.format, bytes.NewReader(body)))
			for _, hint := range []int64{int64(n), int64(n) / 2, 2 * int64(n), 1, -1} {
				var allocs int
				s := blob.NewSplitter(bytes.NewReader(body), hint, f.format, func(n int) []byte { allocs++; return make([]byte, n) })
				// Each segment is the caller's, from alloc: later calls must not touch it.
				segs := drain(t, s, func(seg []byte) []byte { return seg })
				checkConcat(t, segs, body)
				if got := lengths(segs); !equalInts(got, want) {
					t.Errorf("%s: %d-byte body, size hint %d: segments %v, want %v as without a hint", f.format, n, hint, got, want)
				}
				if s.Single() != (len(want) == 1 && n <= blob.SingleSegmentMaxBytes) {
					t.Errorf("%s: %d-byte body, size hint %d: Single() = %v with %d segments", f.format, n, hint, s.Single(), len(want))
				}
				if hint == int64(n) && allocs == 0 {
					t.Errorf("%s: %d-byte body, exact size hint: no segment memory came from alloc", f.format, n)
				}
			}
		}
	}
}

func TestGeneratedBodiesReadTheSameInAnyPieces(t *testing.T) {
	want, err := io.ReadAll(&generated{seed: 1, n: 1000, editOff: 96, editLen: 56})
	if err != nil || len(want) != 1000 {
		t.Fatalf("read %d bytes, %v", len(want), err)
	}
	got, err := io.ReadAll(iotest.OneByteReader(&generated{seed: 1, n: 1000, editOff: 96, editLen: 56}))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("one byte at a time: %v, or other bytes", err)
	}
	plain, _ := io.ReadAll(&generated{seed: 1, n: 1000})
	if !bytes.Equal(plain[:96], want[:96]) || bytes.Equal(plain[96:152], want[96:152]) || !bytes.Equal(plain[152:], want[152:]) {
		t.Errorf("the edit changed other bytes than [96, 152), or not those")
	}
}
