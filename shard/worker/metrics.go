package worker

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the workers' counters, the same whichever shard (and node type) ran them.
// The write path's cairn_gc_publish_retries_total is workbench's.
type metrics struct {
	gcRuns         *prometheus.CounterVec
	gcIntents      prometheus.Counter
	gcDeleted      prometheus.Counter
	gcDeletedBytes prometheus.Counter
	gcOrphans      prometheus.Counter
	gcFollowUps    prometheus.Counter

	compactionRuns    prometheus.Counter
	compactionFiles   prometheus.Counter
	compactionRemoved prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(subsystem, name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: subsystem, Name: name, Help: help})
	}
	m := &metrics{
		gcRuns: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "gc", Name: "runs_total",
			Help: "Garbage-collection sweeps (one per led shard swept) by result (ok, error, dry_run)."}, []string{"result"}),
		gcIntents:      counter("gc", "intents_total", "Blobs put under delete intent."),
		gcDeleted:      counter("gc", "blobs_deleted_total", "Blobs deleted and recorded as deleted."),
		gcDeletedBytes: counter("gc", "bytes_deleted_total", "Stored bytes of the deleted blobs."),
		gcOrphans:      counter("gc", "orphans_deleted_total", "Deleted blobs that were orphans (uploaded, never published)."),
		gcFollowUps:    counter("gc", "follow_up_sweeps_total", "Sweeps run at once after one that left more behind (a root over the batch bound): garbage collection is behind."),

		compactionRuns:    counter("compaction", "runs_total", "Compaction passes run by this node's leaders (one per led shard)."),
		compactionFiles:   counter("compaction", "files_total", "Files whose segment runs were rolled up."),
		compactionRemoved: counter("compaction", "segments_removed_total", "Segments removed from segment lists by compaction."),
	}
	for _, c := range []prometheus.Collector{m.gcRuns, m.gcIntents, m.gcDeleted, m.gcDeletedBytes, m.gcOrphans, m.gcFollowUps,
		m.compactionRuns, m.compactionFiles, m.compactionRemoved} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("worker: metrics: %w", err)
		}
	}
	return m, nil
}

// observeGC counts one sweep of one shard. A nil m counts nothing.
func (m *metrics) observeGC(rep GCReport, err error) {
	if m == nil {
		return
	}
	result := "ok"
	switch {
	case err != nil:
		result = "error"
	case rep.DryRun:
		result = "dry_run"
	}
	m.gcRuns.WithLabelValues(result).Inc()
	m.gcIntents.Add(float64(rep.Intents))
	m.gcDeleted.Add(float64(rep.Deleted))
	m.gcDeletedBytes.Add(float64(rep.DeletedBytes))
	m.gcOrphans.Add(float64(rep.Orphans))
}

// observeCompaction counts one compaction pass of one shard. A nil m counts nothing.
func (m *metrics) observeCompaction(rep CompactReport) {
	if m == nil {
		return
	}
	m.compactionRuns.Inc()
	m.compactionFiles.Add(float64(rep.Compacted))
	m.compactionRemoved.Add(float64(rep.SegmentsBefore - rep.SegmentsAfter))
}

// observeFollowUp counts a sweep that follows one that reported More. A nil m counts
// nothing.
func (m *metrics) observeFollowUp() {
	if m != nil {
		m.gcFollowUps.Inc()
	}
}
