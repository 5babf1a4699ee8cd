package blob

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Compression rule of Encode (DESIGN.md §5: "compressed with zstd when that pays").
const (
	// CompressMinBytes: blobs shorter than this are always stored identity; a zstd frame's
	// overhead and a decoder round trip cost more than they could save.
	CompressMinBytes = 512
	// The compressed form is kept only if it is at most CompressKeepNum/CompressKeepDen of
	// the original size, so already-compressed data (images, archives) is stored as is and
	// costs no decompression on read.
	CompressKeepNum = 7
	CompressKeepDen = 8
)

// maxDecoderWindowBytes bounds the memory one decoder may allocate for a frame's window. The
// shared encoder never uses a window above 8 MiB; a header asking for more is corrupt.
const maxDecoderWindowBytes = 64 << 20

// encoder is shared by every Put in the process: EncodeAll is safe for concurrent use and
// runs at most GOMAXPROCS encodes at once. SpeedFastest keeps compression off the critical
// path of uploads (DESIGN.md §12 targets ≥ 90% of raw object-store throughput).
var encoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		panic(fmt.Sprintf("blob: zstd encoder with static options: %v", err))
	}
	return e
})

// decoders pools streaming decoders. With concurrency 1 a zstd.Decoder decodes synchronously
// in the caller's goroutine and starts none of its own, so a pooled decoder that the GC drops
// leaks nothing.
var decoders sync.Pool

func getDecoder() (*zstd.Decoder, error) {
	if d, ok := decoders.Get().(*zstd.Decoder); ok {
		return d, nil
	}
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxDecoderWindowBytes))
}

func putDecoder(d *zstd.Decoder) {
	// Reset(nil) drops the reference to the payload reader; the decoder stays reusable.
	if err := d.Reset(nil); err != nil {
		d.Close()
		return
	}
	decoders.Put(d)
}

// Encode chooses the stored form of data. Under CompressMinBytes, or when zstd does not
// shrink data to at most 7/8 of its length, it returns data itself and EncodingIdentity.
// Otherwise it returns one zstd frame appended to dst[:0] (dst may be nil; pass a buffer to
// reuse its memory) and EncodingZstd. Backends call Encode in Put; the caller keeps
// ownership of data, which may be the result. The compressed bytes may differ between
// library versions; nothing depends on them but the reader (digests are of the
// uncompressed bytes).
func Encode(dst, data []byte) (payload []byte, enc Encoding) {
	if len(data) < CompressMinBytes {
		return data, EncodingIdentity
	}
	limit := len(data) / CompressKeepDen * CompressKeepNum
	if cap(dst) < limit {
		dst = make([]byte, 0, len(data))
	}
	out := encoder().EncodeAll(data, dst[:0])
	if int64(len(out))*CompressKeepDen > int64(len(data))*CompressKeepNum {
		return data, EncodingIdentity
	}
	return out, EncodingZstd
}
