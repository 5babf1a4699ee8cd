package workbench

import (
	"context"
	"math"

	"golang.org/x/sync/semaphore"

	"github.com/cairnstore/cairn/blob"
)

// ingestBudget bounds the memory of the bodies being cut, hashed and uploaded at once,
// node-wide (Config.MaxConcurrentIngests). It counts bytes, not bodies: a body whose
// length is known and at most blob.SingleSegmentMaxBytes is read into one buffer of that
// length and weighs it; any other body weighs a slot, the most one body holds at once (a
// head of SingleSegmentMaxBytes, a segment being cut and UploadConcurrency segments
// uploading, each up to blob.ChunkMaxBytes). The budget is MaxConcurrentIngests slots: as
// many bodies of any length as before, or many more small ones in the same memory (issue
// 29: with 16 clients writing 1 MiB bodies, 12 of them queued for the 4 slots while the
// node's CPU was mostly idle).
//
// A body's length is a hint (REST's Content-Length, where net/http holds the body to it;
// an S3 part's size). A body that brings more bytes than its hint weighs a slot from then
// on (gatedBody re-queues for it), so the bound holds whatever a caller says.
type ingestBudget struct {
	sem  *semaphore.Weighted
	slot int64
}

func newIngestBudget(slots, uploadConcurrency int) ingestBudget {
	slot := int64(blob.SingleSegmentMaxBytes) + int64(1+uploadConcurrency)*blob.ChunkMaxBytes + 2*ingestPieceBytes
	return ingestBudget{sem: semaphore.NewWeighted(int64(slots) * slot), slot: slot}
}

// weight is what a body of sizeHint bytes (0 or less: unknown) holds while it ingests:
// its length, the extra byte the splitter reads to see its end and the two pieces of its
// gatedBody; a slot for a body of unknown length or longer than one segment.
func (b ingestBudget) weight(sizeHint int64) int64 {
	if sizeHint <= 0 || sizeHint > blob.SingleSegmentMaxBytes {
		return b.slot
	}
	return min(b.slot, sizeHint+1+2*ingestPieceBytes)
}

// within is how many bytes of its body a body holding weight w may read before it must
// hold a slot instead.
func (b ingestBudget) within(w int64) int64 {
	if w >= b.slot {
		return math.MaxInt64
	}
	return w - 2*ingestPieceBytes
}

// admit holds weight w of the budget until release is called, or fails with ctx's error.
func (b ingestBudget) admit(ctx context.Context, w int64) (release func(), err error) {
	if err := b.sem.Acquire(ctx, w); err != nil {
		return nil, err
	}
	return func() { b.sem.Release(w) }, nil
}
