package blob

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Compression rule of Encode (docs/architecture.md#the-write-path: "compressed with zstd when that pays").
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
// path of uploads (BENCHMARKS.md targets ≥ 90% of raw object-store throughput).
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

// Encode chooses the stored form of data. Under CompressMinBytes, when a sample of data
// does not compress (worthCompressing), or when zstd does not shrink data to at most 7/8
// of its length, it returns data itself and EncodingIdentity.
// Otherwise it returns one zstd frame appended to dst[:0] (dst may be nil; pass a buffer to
// reuse its memory) and EncodingZstd. Backends call Encode in Put; the caller keeps
// ownership of data, which may be the result. The compressed bytes may differ between
// library versions; nothing depends on them but the reader (digests are of the
// uncompressed bytes).
func Encode(dst, data []byte) (payload []byte, enc Encoding) {
	if len(data) < CompressMinBytes || !worthCompressing(data) {
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

// EncodeBuffers pools the buffers a backend's Puts encode into (Encode's dst), so a Put
// does not allocate one per blob. The zero value is ready to use.
type EncodeBuffers struct{ pool sync.Pool } // of *[]byte

// Encode is Encode into a pooled buffer. payload is valid until release, which hands the
// buffer back (grown, when zstd needed more room).
func (b *EncodeBuffers) Encode(data []byte) (payload []byte, enc Encoding, release func()) {
	bp, _ := b.pool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	payload, enc = Encode(*bp, data)
	return payload, enc, func() {
		if enc == EncodingZstd {
			*bp = payload[:0]
		}
		b.pool.Put(bp)
	}
}

// The entropy probe of Encode: data of probeMinBytes or more is compressed whole only if
// probeSamples slices of probeSampleBytes, spread evenly over it, compress to at most
// 7/8 together. Already-compressed data (images, archives, model weights) fails the probe
// at the cost of compressing 32 KiB, where compressing the whole segment would cost
// ~1 ms/MiB only to be thrown away. A body whose samples happen to miss its compressible
// parts is stored identity: a little space, never correctness.
const (
	probeMinBytes    = 256 << 10
	probeSampleBytes = 8 << 10
	probeSamples     = 4
)

// probeBufs pools the sample (probeSamples·probeSampleBytes) and its compressed form
// (as long, plus room for the frame's overhead on incompressible bytes).
var probeBufs = sync.Pool{New: func() any { b := make([]byte, 2*probeSamples*probeSampleBytes+1<<10); return &b }}

// worthCompressing runs the probe; data shorter than probeMinBytes always passes.
func worthCompressing(data []byte) bool {
	if len(data) < probeMinBytes {
		return true
	}
	bp := probeBufs.Get().(*[]byte)
	defer probeBufs.Put(bp)
	sample, out := (*bp)[:0], (*bp)[probeSamples*probeSampleBytes:]
	stride := (len(data) - probeSampleBytes) / (probeSamples - 1)
	for i := range probeSamples {
		sample = append(sample, data[i*stride:i*stride+probeSampleBytes]...)
	}
	out = encoder().EncodeAll(sample, out[:0])
	return int64(len(out))*CompressKeepDen <= int64(len(sample))*CompressKeepNum
}
