package dir

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/cairnstore/cairn/blob"
)

// File header, HeaderBytes long:
//
//	[0:4]   magic "CRNB"
//	[4]     format version (formatVersion)
//	[5]     encoding (blob.Encoding)
//	[6:8]   zero
//	[8:16]  uncompressed size in bytes, big-endian uint64 (at most math.MaxInt64)
//
// The payload follows immediately and runs to the end of the file.
const HeaderBytes = 16

const (
	magic         = "CRNB"
	formatVersion = 1
)

type header struct {
	enc  blob.Encoding
	size int64
}

func (h header) marshal() [HeaderBytes]byte {
	var b [HeaderBytes]byte
	copy(b[0:4], magic)
	b[4] = formatVersion
	b[5] = byte(h.enc)
	binary.BigEndian.PutUint64(b[8:16], uint64(h.size))
	return b
}

// readHeader reads and checks the header of a blob file of fileBytes bytes and returns it
// with the payload length. Every defect wraps blob.ErrCorrupt; I/O errors are returned as
// they are.
func readHeader(r io.ReaderAt, fileBytes int64) (header, int64, error) {
	if fileBytes < HeaderBytes {
		return header{}, 0, fmt.Errorf("file of %d bytes is shorter than the %d-byte header: %w", fileBytes, HeaderBytes, blob.ErrCorrupt)
	}
	var b [HeaderBytes]byte
	if _, err := r.ReadAt(b[:], 0); err != nil {
		if err == io.EOF {
			return header{}, 0, fmt.Errorf("file truncated while reading its header: %w", blob.ErrCorrupt)
		}
		return header{}, 0, err
	}
	if string(b[0:4]) != magic {
		return header{}, 0, fmt.Errorf("bad magic %q: %w", b[0:4], blob.ErrCorrupt)
	}
	if b[4] != formatVersion {
		return header{}, 0, fmt.Errorf("unknown format version %d: %w", b[4], blob.ErrCorrupt)
	}
	h := header{enc: blob.Encoding(b[5])}
	if !h.enc.Valid() {
		return header{}, 0, fmt.Errorf("unknown encoding %d: %w", b[5], blob.ErrCorrupt)
	}
	if b[6] != 0 || b[7] != 0 {
		return header{}, 0, fmt.Errorf("reserved header bytes are not zero: %w", blob.ErrCorrupt)
	}
	size := binary.BigEndian.Uint64(b[8:16])
	if size > math.MaxInt64 {
		return header{}, 0, fmt.Errorf("size %d out of range: %w", size, blob.ErrCorrupt)
	}
	h.size = int64(size)
	payload := fileBytes - HeaderBytes
	if h.enc == blob.EncodingIdentity && payload != h.size {
		return header{}, 0, fmt.Errorf("identity payload of %d bytes, header says %d: %w", payload, h.size, blob.ErrCorrupt)
	}
	return h, payload, nil
}
