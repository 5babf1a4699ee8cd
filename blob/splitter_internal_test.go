package blob

import "testing"

func TestAverageBitsMatchChunkAvgBytes(t *testing.T) {
	if 1<<chunkAverageBits != ChunkAvgBytes {
		t.Errorf("the chunker cuts every 2^%d bytes on average, ChunkAvgBytes is %d", chunkAverageBits, ChunkAvgBytes)
	}
}
