package blob

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
)

// Chunk sizes of ChunkGear, in bytes. A cut is tested after every byte from GearMinBytes
// on: below GearNormalBytes it needs the top gearSmallBits bits of the rolling hash to be
// zero (1 in 32 MiB), from there on the top gearLargeBits (1 in 2 MiB), and a chunk that
// reaches ChunkMaxBytes is cut there. So chunks cluster just above GearNormalBytes
// (FastCDC's normalized chunking): mean ≈ 9.5 MiB, 12% below GearNormalBytes, 2% at the
// maximum (over random bytes).
const (
	GearMinBytes    = 4 << 20
	GearNormalBytes = 8 << 20
	gearSmallBits   = 25
	gearLargeBits   = 21
	// gearWindow: the hash after a byte depends on that byte and the 63 before it alone
	// (each step shifts the hash left by one bit), so hashing starts 64 bytes before the
	// first position tested and a cut depends on nothing but the bytes around it.
	gearWindow = 64
	// gearReadBytes bounds how far the Splitter reads past the last position it tested:
	// the bytes read past a cut (moved to the head of the next segment) are at most this.
	gearReadBytes = 256 << 10
)

const (
	gearSmallMask = uint64(1<<gearSmallBits-1) << (64 - gearSmallBits)
	gearLargeMask = uint64(1<<gearLargeBits-1) << (64 - gearLargeBits)
)

// gearTable maps each byte value to a pseudo-random 64-bit number: the first 8 bytes
// (big-endian) of SHA-256("cairn gear chunking, format 1" || b). Derived, not drawn, so
// anyone can recompute it; fixed forever with ChunkGear (TestGearCutsAreStable).
var gearTable = func() (t [256]uint64) {
	for i := range t {
		sum := sha256.Sum256(append([]byte("cairn gear chunking, format 1"), byte(i)))
		t[i] = binary.BigEndian.Uint64(sum[:8])
	}
	return t
}()

// gearScan is the state of the cut search over one chunk: hash after the bytes before
// pos, the next position to hash.
type gearScan struct {
	hash uint64
	pos  int
}

func newGearScan() gearScan { return gearScan{pos: GearMinBytes - gearWindow} }

// cut hashes data[g.pos:] (data is the chunk so far, from its first byte) and returns the
// chunk's length if its end lies in data, else 0 (having hashed all of data). A chunk of
// ChunkMaxBytes is cut there.
func (g *gearScan) cut(data []byte) int {
	h, p := g.hash, g.pos
	// Warm-up: the window before the first position tested.
	for end := min(len(data), GearMinBytes-1); p < end; p++ {
		h = h<<1 + gearTable[data[p]]
	}
	// A chunk may end after byte p (length p+1) when the hash after it matches the mask.
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

// nextGear returns the next ChunkGear chunk. The bytes are read straight into the
// segment's buffer and cut there; only the bytes read past the cut (≤ gearReadBytes) are
// copied, to the head of the next segment. buf, when not nil, is the first segment's
// buffer (len ChunkMaxBytes) holding n bytes of the body already.
func (s *Splitter) nextGear(buf []byte, n int) ([]byte, error) {
	if buf == nil {
		if s.eof && len(s.carry) == 0 {
			return nil, io.EOF
		}
		buf = s.alloc(ChunkMaxBytes)[:ChunkMaxBytes]
		n = copy(buf, s.carry)
		s.carry = s.carry[:0]
	}
	scan := newGearScan()
	empty := 0
	for {
		if l := scan.cut(buf[:n]); l > 0 {
			if s.carry == nil {
				s.carry = make([]byte, 0, gearReadBytes)
			}
			s.carry = append(s.carry[:0], buf[l:n]...)
			return buf[:l], nil
		}
		if s.eof {
			if n == 0 {
				return nil, io.EOF
			}
			return buf[:n], nil
		}
		m, err := s.r.Read(buf[n:min(len(buf), max(scan.pos, GearMinBytes)+gearReadBytes)])
		n += m
		switch {
		case err == io.EOF:
			s.eof = true
		case err != nil:
			return nil, err
		case m == 0:
			if empty++; empty == maxEmptyReads {
				return nil, io.ErrNoProgress
			}
		default:
			empty = 0
		}
	}
}
