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
