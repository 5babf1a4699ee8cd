package workbench

import (
	"bytes"
	"context"
	"crypto/sha256"

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

// CompactOnce runs one compaction pass over up to maxFiles candidates (DESIGN.md §5): for
// each, it reads the first run of at least two small segments (each under
// meta.CompactSmallSegmentBytes, at most compactionRunBytes together), stores it as one
// segment (inline when within the inline threshold, else one blob), and proposes the
// conditional replacement. A compaction never changes a file's digest, size or
// generation, and a file that changed meanwhile is skipped (Conflicts). Run it on the
// leader.
func (s *Service) CompactOnce(ctx context.Context, maxFiles int) (CompactReport, error) {
	var rep CompactReport
	views, err := s.leaderViews(ctx)
	if err != nil {
		return rep, AsError(err)
	}
	var cands []meta.CompactionCandidate
	for _, view := range views {
		c, _ := view.CompactionCandidates("", maxFiles-len(cands))
		cands = append(cands, c...)
		if len(cands) >= maxFiles {
			break
		}
	}
	for _, c := range cands {
		rep.Candidates++
		start, end := smallRun(c.Entry.Segments)
		if end-start < 2 {
			continue
		}
		n, err := s.compactRange(ctx, c, start, end)
		if err != nil {
			if we := AsError(err); we.Code == CodeConflict || we.Code == CodeNotFound || we.Code == CodeInvalidState || we.Code == CodeObjectUnavailable {
				rep.Conflicts++
				continue
			}
			return rep, err
		}
		rep.Compacted++
		rep.SegmentsBefore += end - start
		rep.SegmentsAfter += n
	}
	return rep, nil
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

func (s *Service) compactRange(ctx context.Context, c meta.CompactionCandidate, start, end int) (int, error) {
	release, err := admit(ctx, s.loads)
	if err != nil {
		return 0, AsError(err)
	}
	defer release()
	run := c.Entry.Segments[start:end]
	var buf bytes.Buffer
	for _, sg := range run {
		data, free, werr := s.loadSegment(ctx, c.Agent, sg, 0, sg.Size)
		if werr != nil {
			return 0, werr
		}
		buf.Write(data)
		free()
	}
	data := buf.Bytes()
	seg := meta.Segment{Digest: sha256.Sum256(data), Size: int64(len(data))}
	var fence uint64
	if int64(len(data)) <= s.cfg.InlineMaxBytes {
		seg.Inline = bytes.Clone(data)
	} else {
		uid, err := s.rootUID(ctx, c.Agent)
		if err != nil {
			return 0, AsError(err)
		}
		// Every blob deletion recorded up to this view happened before the upload below.
		view, err := s.readView(ctx, c.Agent)
		if err != nil {
			return 0, AsError(err)
		}
		fence = view.AppliedVersion()
		if _, err := s.blobs.Put(ctx, blob.Key{Root: uid, Digest: blob.Digest(seg.Digest)}, blob.Hash(data)); err != nil {
			return 0, AsError(err)
		}
	}
	_, werr := s.propose(ctx, meta.Header{UploadFence: fence}, meta.Compact{Agent: c.Agent, Workspace: c.Workspace, Path: c.Path,
		Start: start, End: end, RangeDigest: meta.SegmentsDigest(run), Replacement: []meta.Segment{seg}})
	if werr != nil {
		return 0, werr
	}
	return 1, nil
}
