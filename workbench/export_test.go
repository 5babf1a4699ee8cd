package workbench

import (
	"context"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
)

// HoldQueryBudget takes n bytes of the node's query budget, as queries in flight would,
// until the returned release is called (tests of admission).
func (s *Service) HoldQueryBudget(n int64) (release func()) {
	if err := s.base.queries.Acquire(context.Background(), n); err != nil {
		panic(err) // a background context never ends
	}
	return func() { s.base.queries.Release(n) }
}

// SetClock replaces the clock uploads are timed by (Config.MaxUploadDuration).
func (s *Service) SetClock(now func() time.Time) { s.base.now = now }

// SetChunkFormat makes ingest cut bodies in f (tests of data written by older releases).
func (s *Service) SetChunkFormat(f blob.ChunkFormat) { s.base.chunkFormat = f }

// SegmentFormats returns the chunk format of each segment of the file at path.
func (s *Service) SegmentFormats(ctx context.Context, agent, id, path string) ([]blob.ChunkFormat, error) {
	f, err := s.Reads.Open(ctx, agent, id, path)
	if err != nil {
		return nil, err
	}
	var out []blob.ChunkFormat
	for _, sg := range f.entry.Segments {
		out = append(out, blob.ChunkFormat(sg.Chunking))
	}
	return out, nil
}

// FileSegments returns the segments of the file at path, as its entry records them.
func (s *Service) FileSegments(ctx context.Context, agent, id, path string) ([]meta.Segment, error) {
	f, err := s.Reads.Open(ctx, agent, id, path)
	if err != nil {
		return nil, err
	}
	return f.entry.Segments, nil
}
