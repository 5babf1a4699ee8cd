package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/api/workbench"
)

// restoreResumeInterval is how often the node looks for restores left copying by a crash
// or a leader change and drives them to completion.
const restoreResumeInterval = 2 * time.Second

// compactionInterval is how often the leader rolls up small segments of long segment
// lists (DESIGN.md §5); compactionBatch bounds the files one pass rewrites.
const (
	compactionInterval = 5 * time.Second
	compactionBatch    = 64
)

// gcFollowUps bounds the sweeps that follow one another at once while a sweep leaves more
// behind (a root over the batch bound).
const gcFollowUps = 10

// startWorkers starts the leader-only background workers, the same in both modes; each
// acts only while a local replica leads.
func (n *Node) startWorkers(ctx context.Context) {
	runs := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "compaction", Name: "runs_total",
		Help: "Compaction passes run by this node's leader."})
	files := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "compaction", Name: "files_total",
		Help: "Files whose segment runs were rolled up."})
	removed := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "compaction", Name: "segments_removed_total",
		Help: "Segments removed from segment lists by compaction."})
	n.registry.MustRegister(runs, files, removed)
	leads := func() bool { return len(n.host.Leaders()) > 0 }
	n.every(ctx, restoreResumeInterval, func() {
		if leads() {
			if err := n.svc.ResumeRestores(ctx); err != nil && ctx.Err() == nil {
				n.log.Warn("resuming restores", "err", err)
			}
		}
	})
	n.every(ctx, compactionInterval, func() {
		if !leads() {
			return
		}
		rep, err := n.svc.CompactOnce(ctx, compactionBatch)
		runs.Inc()
		files.Add(float64(rep.Compacted))
		removed.Add(float64(rep.SegmentsBefore - rep.SegmentsAfter))
		if err != nil && ctx.Err() == nil {
			n.log.Warn("compaction", "err", err)
		}
	})
	n.every(ctx, n.cfg.GCInterval, func() {
		for i := 0; i < gcFollowUps && leads() && ctx.Err() == nil; i++ {
			rep, err := n.svc.CollectGarbage(ctx, workbench.GCOptions{})
			if err != nil {
				if ctx.Err() == nil {
					n.log.Warn("garbage collection", "err", err, "deleted", rep.Deleted)
				}
				return
			}
			if rep.Deleted > 0 {
				n.log.Info("garbage collection", "deleted", rep.Deleted, "deleted_bytes", rep.DeletedBytes, "orphans", rep.Orphans)
			}
			if !rep.More {
				return
			}
		}
	})
}

// every runs f every interval until ctx ends, as one of the node's workers.
func (n *Node) every(ctx context.Context, interval time.Duration, f func()) {
	n.workers.Add(1)
	go func() {
		defer n.workers.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			f()
		}
	}()
}
