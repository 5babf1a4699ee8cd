package s3

import (
	"cmp"
	"context"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Removing expired multipart uploads (multipart.go, doc.go).

// reclaimBucket removes at most limit of the bucket's uploads that expired (started more
// than the upload deadline ago) or have no record (the parts a crashed completion or
// abort left), and settles the stale claims of Completes a crash cut off (settleStale).
// It returns how many it removed.
func (m *multipart) reclaimBucket(ctx context.Context, agent, bucket string, limit int) (int, error) {
	view, ws, _, err := m.svc.Reads.ViewAt(ctx, agent, UploadsWorkbench, workbench.At{})
	if err != nil {
		if isNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	var dead []string
	after := ""
	for len(dead) < limit {
		entries, more, err := view.List(ws, bucket, after, listPage)
		if meta.CodeOf(err) == meta.CodeNotFound {
			return 0, nil
		}
		if err != nil {
			return 0, workbench.AsError(err)
		}
		for _, c := range entries {
			after = c.Name
			if c.Kind != meta.KindDirectory || len(dead) == limit {
				continue
			}
			u, err := m.readUpload(ctx, agent, view, ws, bucket, c.Name)
			switch {
			case codeOf(err) == CodeNoSuchUpload:
				dead = append(dead, bucket+"/"+c.Name)
			case err != nil:
				return 0, err
			case m.expired(u) || u.orphaned(view, agent, bucket):
				dead = append(dead, u.dir)
			case u.rec.Completing != nil && !m.claimHeld(u.rec.Completing):
				gone, err := m.settleStale(ctx, agent, bucket, u)
				if err != nil {
					return 0, err
				}
				if gone {
					dead = append(dead, u.dir)
				}
			}
		}
		if !more {
			break
		}
	}
	for i, dir := range dead {
		if err := m.removeUpload(ctx, agent, dir); err != nil {
			return i, err
		}
	}
	return len(dead), nil
}

// settleStale settles upload u of bucket, whose claim no longer holds (claimHeld: its
// Complete died): if the Complete published, the upload is recorded as completed and its
// parts removed (finish); if it cannot be told whether it did (publishedIn: not found,
// not covered), gone says to remove the upload; else the claim stays for a Complete sent
// again to take over, until the upload expires.
func (m *multipart) settleStale(ctx context.Context, agent, bucket string, u upload) (gone bool, err error) {
	view, ws, _, err := m.svc.Reads.ViewAt(ctx, agent, bucket, workbench.At{})
	if err != nil {
		return false, err
	}
	done, found, covered, err := m.publishedIn(view, ws, bucket, u, u.rec.Key)
	switch {
	case err != nil:
		return false, err
	case found:
		done.Parts = u.rec.Completing.Parts
		m.finish(ctx, agent, u, done)
		return false, nil
	}
	return !covered, nil
}

// remember notes a root that keeps uploads, for the sweep.
func (m *multipart) remember(agent string) { m.roots.Store(agent, struct{}{}) }

// reclaim runs one sweep round: in every root this gateway served a multipart request
// of since it started, it removes expired uploads and leftover parts (at most
// reclaimPerRound per bucket). It acts as the node (no principal), through the S3
// surface. It returns how many uploads it removed.
func (m *multipart) reclaim(ctx context.Context) (int, error) {
	ctx = workbench.WithSurface(ctx, Surface+"/Reclaim")
	total := 0
	var first error
	m.roots.Range(func(k, _ any) bool {
		agent := k.(string)
		view, ws, _, err := m.svc.Reads.ViewAt(ctx, agent, UploadsWorkbench, workbench.At{})
		if err != nil {
			if !isNotFound(err) {
				first = cmp.Or(first, err)
			}
			return ctx.Err() == nil
		}
		after := ""
		for {
			entries, more, err := view.List(ws, "", after, listPage)
			if err != nil {
				first = cmp.Or(first, error(workbench.AsError(err)))
				break
			}
			for _, c := range entries {
				after = c.Name
				if c.Kind != meta.KindDirectory {
					continue
				}
				n, err := m.reclaimBucket(ctx, agent, c.Name, reclaimPerRound)
				total += n
				first = cmp.Or(first, err)
			}
			if !more {
				break
			}
		}
		return ctx.Err() == nil
	})
	return total, first
}

// RunReclaim sweeps for expired uploads every Config.ReclaimInterval until ctx ends
// (multipart.runReclaim).
func (h *Handler) RunReclaim(ctx context.Context) { h.multipart.runReclaim(ctx) }

// runReclaim runs a sweep round (reclaim) every reclaimEvery until ctx ends.
func (m *multipart) runReclaim(ctx context.Context) {
	t := time.NewTicker(m.reclaimEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := m.reclaim(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("s3: reclaiming expired uploads", "removed", n, "err", err)
		}
	}
}
