package worker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
)

// CompactReport says what one compaction pass did.
type CompactReport struct {
	// Candidates is the number of files examined; Compacted how many were rewritten;
	// SegmentsBefore and SegmentsAfter count the segments of the ranges replaced.
	Candidates, Compacted         int
	SegmentsBefore, SegmentsAfter int
	// Conflicts counts compactions that lost to a concurrent change (harmless).
	Conflicts int
}

// compactionRunBytes bounds the bytes one compaction reads and writes: the replacement is
// always a single segment.
const compactionRunBytes = blob.SingleSegmentMaxBytes

// compactionConcurrency is how many compaction runs of a node (all its led shards) hold
// their bytes in memory at once: each holds one run, at most compactionRunBytes.
const compactionConcurrency = 1

// Compact runs one compaction pass over up to maxFiles candidates of the shards this Set
// leads now, in shard order (docs/architecture.md#the-write-path): for each, it reads the first run of at least
// two small segments (each under meta.CompactSmallSegmentBytes, at most
// compactionRunBytes together), verified against their digests, stores it as one segment
// (inline within Config.InlineMaxBytes, else one blob uploaded under the upload fence of
// a view read before), and proposes the conditional replacement. A compaction never
// changes a file's digest, size or generation, and a file that changed meanwhile is
// skipped (Conflicts). The workers of a led shard run it every CompactionInterval.
//
// Errors: one matching outcome.ErrUnavailable when this node leads no shard or a shard
// stopped serving; one wrapping blob.ErrCorrupt (naming the segment's digest) or
// blob.ErrNotFound when a stored segment is damaged or missing; the core's other errors.
// The pass stops at the first; the report covers what was done before.
func (s *Set) Compact(ctx context.Context, maxFiles int) (CompactReport, error) {
	var total CompactReport
	led := s.ledCores()
	if len(led) == 0 {
		return total, errNoLeader
	}
	for _, l := range led {
		if total.Candidates >= maxFiles {
			break
		}
		rep, err := s.compactCore(ctx, l.core, maxFiles-total.Candidates)
		total.Candidates += rep.Candidates
		total.Compacted += rep.Compacted
		total.SegmentsBefore += rep.SegmentsBefore
		total.SegmentsAfter += rep.SegmentsAfter
		total.Conflicts += rep.Conflicts
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// compactCore runs one compaction pass over up to maxFiles candidates of c and counts it
// in the metrics.
func (s *Set) compactCore(ctx context.Context, c Core, maxFiles int) (CompactReport, error) {
	rep, err := s.compactPass(ctx, c, maxFiles)
	s.metrics.observeCompaction(rep)
	return rep, err
}

func (s *Set) compactPass(ctx context.Context, c Core, maxFiles int) (CompactReport, error) {
	var rep CompactReport
	view, err := c.ReadView(ctx)
	if err != nil {
		return rep, err
	}
	cands, _ := view.Shard().CompactionCandidates("", maxFiles)
	for _, cand := range cands {
		rep.Candidates++
		start, end := smallRun(cand.Entry.Segments)
		if end-start < 2 {
			continue
		}
		root, ok := view.Root(cand.Agent)
		if !ok {
			rep.Conflicts++ // cannot happen: a candidate's root is in the view it came from
			continue
		}
		err := s.compactRange(ctx, c, root.UID, cand, start, end)
		if lostRace(err) {
			rep.Conflicts++
			continue
		}
		if err != nil {
			return rep, err
		}
		rep.Compacted++
		rep.SegmentsBefore += end - start
		rep.SegmentsAfter++
	}
	return rep, nil
}

// lostRace reports whether a compaction failed harmlessly: the file changed or went
// meanwhile (Conflict, NotFound, InvalidState), the replacement's blob is being collected
// (BlobDeleting), or the object store is away for now; the next pass tries again.
func lostRace(err error) bool {
	var me *meta.Error
	if errors.As(err, &me) {
		switch me.Code {
		case meta.CodeConflict, meta.CodeNotFound, meta.CodeInvalidState, meta.CodeBlobDeleting:
			return true
		}
		return false
	}
	return errors.Is(err, blob.ErrUnavailable)
}

// smallRun returns the first run [start, end) of consecutive small segments, bounded by
// compactionRunBytes.
func smallRun(segs []meta.Segment) (start, end int) {
	for start < len(segs) && segs[start].Size >= meta.CompactSmallSegmentBytes {
		start++
	}
	var total int64
	end = start
	for end < len(segs) && segs[end].Size < meta.CompactSmallSegmentBytes && total+segs[end].Size <= compactionRunBytes {
		total += segs[end].Size
		end++
	}
	return start, end
}

// compactRange replaces segments [start, end) of cand, whose root's blob namespace is
// uid, with one segment holding their verified bytes.
func (s *Set) compactRange(ctx context.Context, c Core, uid string, cand meta.CompactionCandidate, start, end int) error {
	select {
	case s.compacting <- struct{}{}:
		defer func() { <-s.compacting }()
	case <-ctx.Done():
		return ctx.Err()
	}
	run := cand.Entry.Segments[start:end]
	var size int64
	for _, sg := range run {
		size += sg.Size
	}
	data := make([]byte, size)
	off := int64(0)
	for _, sg := range run {
		if err := s.loadSegment(ctx, uid, sg, data[off:off+sg.Size]); err != nil {
			return err
		}
		off += sg.Size
	}
	hashed := blob.Hash(data)
	seg := meta.Segment{Digest: meta.Digest(hashed.Digest()), Size: size}
	var fence uint64
	if size <= s.cfg.InlineMaxBytes {
		seg.Inline = data
	} else {
		// Reads verify the merged blob by the BLAKE3 taken in the same pass as its
		// SHA-256, as they verify the write path's segments (meta.Segment.Blake3).
		seg.Blake3 = meta.Blake3(hashed.Blake3())
		// Every blob deletion recorded up to this view happened before the upload below.
		view, err := c.ReadView(ctx)
		if err != nil {
			return err
		}
		fence = view.AppliedVersion()
		if _, err := s.cfg.Blobs.Put(ctx, blob.Key{Root: uid, Digest: blob.Digest(seg.Digest)}, hashed); err != nil {
			return err
		}
	}
	res, err := c.Propose(ctx, meta.Header{UploadFence: fence}, meta.Compact{Agent: cand.Agent, Workspace: cand.Workspace,
		Path: cand.Path, Start: start, End: end, RangeDigest: meta.SegmentsDigest(run), Replacement: []meta.Segment{seg}})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	return nil
}

// loadSegment fills dst (sg.Size bytes) with sg's bytes, verified against its digest: an
// inline segment is hashed, an object-store one read to the blob's end (blob.ReadVerified).
func (s *Set) loadSegment(ctx context.Context, uid string, sg meta.Segment, dst []byte) error {
	if sg.IsInline() {
		if int64(len(sg.Inline)) != sg.Size || sha256.Sum256(sg.Inline) != [32]byte(sg.Digest) {
			return fmt.Errorf("inline segment %s: %w", blob.Digest(sg.Digest).URI(), blob.ErrCorrupt)
		}
		copy(dst, sg.Inline)
		return nil
	}
	rc, err := s.cfg.Blobs.Get(ctx, blob.Key{Root: uid, Digest: blob.Digest(sg.Digest)}, 0, sg.Size)
	if err != nil {
		return fmt.Errorf("segment %s: %w", blob.Digest(sg.Digest).URI(), err)
	}
	defer rc.Close()
	if err := blob.ReadVerified(rc, dst); err != nil {
		return fmt.Errorf("segment %s: %w", blob.Digest(sg.Digest).URI(), err)
	}
	return nil
}
