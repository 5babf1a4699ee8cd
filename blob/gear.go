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
	var n int
	if h, p, n = gearSearch(data, h, p, min(len(data), GearNormalBytes-1), gearSmallMask); n > 0 {
		return n
	}
	if h, p, n = gearSearch(data, h, p, min(len(data), ChunkMaxBytes-1), gearLargeMask); n > 0 {
		return n
	}
	if p == ChunkMaxBytes-1 && p < len(data) {
		return ChunkMaxBytes
	}
	g.hash, g.pos = h, p
	return 0
}

// gearSearch hashes data[p:end] after h, the hash of the bytes before p, testing the hash
// after each byte against mask. It returns the hash and position reached and the length of
// the chunk that ends at the first match (0: none in data[p:end], h being the hash of the
// bytes before end). It computes what the byte loop
//
//	for ; p < end; p++ {
//		h = h<<1 + gearTable[data[p]]
//		if h&mask == 0 {
//			return h, p, p + 1
//		}
//	}
//
// does, hash for hash and test for test (TestGearSearchMatchesTheByteLoop), faster: the
// byte loop waits on the hash of one byte before it adds the next (a shift and an add a
// byte, one after the other); here the hash after two bytes is the hash before them
// shifted by two plus their table entries combined beside it (h<<2 + (t0<<1 + t1)), and
// the hash between them is computed off that chain for its test. Eight bytes take one
// bounds check. BenchmarkGearCut: 1.75× the byte loop's throughput (0.31 against 0.54
// CPU-ns a byte).
func gearSearch(data []byte, h uint64, p, end int, mask uint64) (uint64, int, int) {
	var t0, t1, h1 uint64
	for ; p+8 <= end; p += 8 {
		b := (*[8]byte)(data[p : p+8])
		t0, t1 = gearTable[b[0]], gearTable[b[1]]
		h1 = h<<1 + t0
		h = h<<2 + (t0<<1 + t1)
		if h1&mask == 0 {
			return h1, p, p + 1
		}
		if h&mask == 0 {
			return h, p, p + 2
		}
		t0, t1 = gearTable[b[2]], gearTable[b[3]]
		h1 = h<<1 + t0
		h = h<<2 + (t0<<1 + t1)
		if h1&mask == 0 {
			return h1, p, p + 3
		}
		if h&mask == 0 {
			return h, p, p + 4
		}
		t0, t1 = gearTable[b[4]], gearTable[b[5]]
		h1 = h<<1 + t0
		h = h<<2 + (t0<<1 + t1)
		if h1&mask == 0 {
			return h1, p, p + 5
		}
		if h&mask == 0 {
			return h, p, p + 6
		}
		t0, t1 = gearTable[b[6]], gearTable[b[7]]
		h1 = h<<1 + t0
		h = h<<2 + (t0<<1 + t1)
		if h1&mask == 0 {
			return h1, p, p + 7
		}
		if h&mask == 0 {
			return h, p, p + 8
		}
	}
	for ; p < end; p++ {
		if h = h<<1 + gearTable[data[p]]; h&mask == 0 {
			return h, p, p + 1
		}
	}
	return h, p, 0
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
