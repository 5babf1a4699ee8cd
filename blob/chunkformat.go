package blob

import "fmt"

// ChunkFormat names how a Splitter cuts a body longer than SingleSegmentMaxBytes into
// content-defined chunks. Each format is fixed forever: the same bytes are always cut at
// the same places by the same format, so a re-upload dedupes against what that format
// stored before. A body of at most SingleSegmentMaxBytes is one segment under every
// format.
//
// The write path records the format of every segment it cuts (meta.Segment.Chunking), so
// a file's segment list may mix formats (an old file appended to by a newer node) and
// readers never need to know it: a segment is a byte range whatever cut it. What a format
// change costs is dedupe across it, once: a body stored under ChunkRabin and uploaded
// again under ChunkGear shares no chunk with its old copy (its cuts fall elsewhere) and is
// stored again whole; from then on edits of it dedupe as before. Bodies of at most
// SingleSegmentMaxBytes are not cut and keep deduping across the change.
type ChunkFormat uint8

const (
	// ChunkRabin (format 0): Rabin fingerprints over a 64-byte window (restic/chunker,
	// ChunkPolynomial), chunks of RabinMinBytes to ChunkMaxBytes, ~4.7 MiB mean. Every
	// segment recorded before chunk formats existed was cut by it.
	ChunkRabin ChunkFormat = 0
	// ChunkGear (format 1): a gear rolling hash with normalized chunking (FastCDC's
	// scheme, gear.go), chunks of GearMinBytes to ChunkMaxBytes, ~9.5 MiB mean, cut in
	// place in the segment buffer the bytes were read into. About 5.7× the throughput of
	// ChunkRabin (BenchmarkSplit, 64 MiB: 2.76 GB/s against 0.48 GB/s on 2 cores, one run
	// side by side, 2026-12-07).
	ChunkGear ChunkFormat = 1
)

// CurrentChunkFormat is the format new writes use.
const CurrentChunkFormat = ChunkGear

// Known reports whether this build can cut bodies in format f.
func (f ChunkFormat) Known() bool { return f == ChunkRabin || f == ChunkGear }

func (f ChunkFormat) String() string {
	switch f {
	case ChunkRabin:
		return "rabin"
	case ChunkGear:
		return "gear"
	}
	return fmt.Sprintf("format-%d", uint8(f))
}
