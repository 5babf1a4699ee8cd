package bench

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
)

// payload returns size bytes of pseudo-random data determined by (nonce, seq). Bodies must
// differ from one operation and one run to the next: Cairn stores bodies by content
// digest and splits large ones into content-defined chunks, so repeating the same bytes
// would measure deduplication instead of writing.
func payload(nonce, seq uint64, size int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8(seed(nonce, seq)), size)
}

// payloadBytes is payload read into memory, for small bodies sent with a known length.
func payloadBytes(nonce, seq uint64, size int64) []byte {
	b := make([]byte, size)
	rand.NewChaCha8(seed(nonce, seq)).Read(b)
	return b
}

func seed(nonce, seq uint64) [32]byte {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[0:], nonce)
	binary.LittleEndian.PutUint64(s[8:], seq)
	return s
}

// mix is SplitMix64's finaliser: a cheap, well-spread hash of seq, so that an Op can pick
// keys and read/write choices from its sequence number alone.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unitFloat maps x to [0, 1) uniformly.
func unitFloat(x uint64) float64 { return float64(x>>11) / (1 << 53) }
