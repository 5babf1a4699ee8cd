package blob

import (
	"math/rand/v2"
	"testing"
)

func TestAverageBitsMatchRabinAvgBytes(t *testing.T) {
	if 1<<rabinAverageBits != RabinAvgBytes {
		t.Errorf("the chunker cuts every 2^%d bytes on average, RabinAvgBytes is %d", rabinAverageBits, RabinAvgBytes)
	}
}

// The cut search may be handed a chunk in any number of growing prefixes (the Splitter
// scans as bytes arrive): it finds the same cut as over the whole chunk at once.
func TestGearScanResumesAcrossPrefixes(t *testing.T) {
	data := make([]byte, ChunkMaxBytes)
	rand.NewChaCha8([32]byte{7}).Read(data)
	whole := newGearScan()
	want := whole.cut(data)
	if want < GearMinBytes || want > ChunkMaxBytes {
		t.Fatalf("cut at %d, outside [GearMinBytes, ChunkMaxBytes]", want)
	}
	for _, step := range []int{1 << 20, 4093, 64 << 10} {
		g := newGearScan()
		got := 0
		for n := step; got == 0; n += step {
			got = g.cut(data[:min(n, len(data))])
		}
		if got != want {
			t.Errorf("scanned in prefixes growing by %d bytes: cut at %d, over the whole chunk at %d", step, got, want)
		}
	}
}

// A chunk that never matches the mask is cut at ChunkMaxBytes (a body of zeros does).
func TestGearCutsARunOfEqualBytesAtTheMaximum(t *testing.T) {
	g := newGearScan()
	if got := g.cut(make([]byte, ChunkMaxBytes)); got != ChunkMaxBytes {
		t.Errorf("16 MiB of zeros cut at %d, want ChunkMaxBytes", got)
	}
}

// BenchmarkGearCut measures the cut search alone: one ChunkGear chunk searched in a
// 16 MiB buffer of random bytes, from the first hashed byte to its cut (what
// Splitter.nextGear spends on hashing besides reading).
func BenchmarkGearCut(b *testing.B) {
	data := make([]byte, ChunkMaxBytes)
	rand.NewChaCha8([32]byte{9}).Read(data)
	g := newGearScan()
	n := g.cut(data)
	b.SetBytes(int64(n - (GearMinBytes - gearWindow)))
	for b.Loop() {
		g := newGearScan()
		if g.cut(data) != n {
			b.Fatal("the cut moved")
		}
	}
}

// gearCutByteLoop is gearScan.cut as ChunkGear was first written, one byte and one test a
// loop: the definition the faster cut must match, cut for cut.
func gearCutByteLoop(g *gearScan, data []byte) int {
	h, p := g.hash, g.pos
	for end := min(len(data), GearMinBytes-1); p < end; p++ {
		h = h<<1 + gearTable[data[p]]
	}
	for end := min(len(data), GearNormalBytes-1); p < end; p++ {
		h = h<<1 + gearTable[data[p]]
		if h&gearSmallMask == 0 {
			return p + 1
		}
	}
	for end := min(len(data), ChunkMaxBytes); p < end; p++ {
		h = h<<1 + gearTable[data[p]]
		if h&gearLargeMask == 0 || p+1 == ChunkMaxBytes {
			return p + 1
		}
	}
	g.hash, g.pos = h, p
	return 0
}

// gearSearch finds the first match of any mask at any offset, from any start, as the
// byte loop does: masks of a few bits match every few bytes, so every unrolled test and
// the tail loop are taken.
func TestGearSearchMatchesTheByteLoop(t *testing.T) {
	data := make([]byte, 4096)
	rand.NewChaCha8([32]byte{3}).Read(data)
	for bits := 1; bits <= 8; bits++ {
		mask := uint64(1<<bits-1) << (64 - bits)
		for start := 0; start < 24; start++ {
			for end := start; end < start+200 && end <= len(data); end += 7 {
				for _, h0 := range []uint64{0, 0x9e3779b97f4a7c15, ^uint64(0)} {
					wh, wp, wn := h0, start, 0
					for ; wp < end; wp++ {
						if wh = wh<<1 + gearTable[data[wp]]; wh&mask == 0 {
							wn = wp + 1
							break
						}
					}
					h, p, n := gearSearch(data, h0, start, end, mask)
					if n != wn || n == 0 && (h != wh || p != wp) {
						t.Fatalf("bits %d, data[%d:%d], h %#x: got (%#x, %d, %d), the byte loop (%#x, %d, %d)", bits, start, end, h0, h, p, n, wh, wp, wn)
					}
				}
			}
		}
	}
}

// cut finds the chunk the byte loop finds, in random, low-entropy and constant bytes
// handed over whole or in growing prefixes of odd sizes.
func TestGearCutMatchesTheByteLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, ChunkMaxBytes)
	for round := range 24 {
		switch round % 4 {
		case 0, 1:
			rand.NewChaCha8([32]byte{byte(round)}).Read(data)
		case 2: // a few symbols: long runs of repeating hashes
			for i := range data {
				data[i] = byte(rng.IntN(3))
			}
		case 3: // zeros with sparse noise: cut at the maximum, or near it
			clear(data)
			for range 1000 {
				data[rng.IntN(len(data))] = byte(rng.Uint32())
			}
		}
		ref := newGearScan()
		want := gearCutByteLoop(&ref, data)
		whole := newGearScan()
		if got := whole.cut(data); got != want {
			t.Fatalf("round %d: cut at %d, the byte loop at %d", round, got, want)
		}
		step := 1 + rng.IntN(3<<20)
		a, b := newGearScan(), newGearScan()
		for n := step; ; n += step {
			prefix := data[:min(n, len(data))]
			got, wantP := a.cut(prefix), gearCutByteLoop(&b, prefix)
			if got != wantP || a != b {
				t.Fatalf("round %d, prefixes of %d: cut %d at state %+v, the byte loop %d at %+v", round, step, got, a, wantP, b)
			}
			if got != 0 {
				if got != want {
					t.Fatalf("round %d, prefixes of %d: cut at %d, over the whole chunk at %d", round, step, got, want)
				}
				break
			}
		}
	}
}

// BenchmarkGearCutByteLoop is BenchmarkGearCut for the byte loop, to compare in one run.
func BenchmarkGearCutByteLoop(b *testing.B) {
	data := make([]byte, ChunkMaxBytes)
	rand.NewChaCha8([32]byte{9}).Read(data)
	g := newGearScan()
	n := gearCutByteLoop(&g, data)
	b.SetBytes(int64(n - (GearMinBytes - gearWindow)))
	for b.Loop() {
		g := newGearScan()
		if gearCutByteLoop(&g, data) != n {
			b.Fatal("the cut moved")
		}
	}
}
