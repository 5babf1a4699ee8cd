package workbench

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
// node's CPU was mostly idle). Waiters are served first come, first served
// (semaphore.Weighted), so a body that weighs a slot is not starved by small ones.
//
// A body's length is a hint (REST's Content-Length, where net/http holds the body to it;
// an S3 part's size). A body that brings more bytes than its hint weighs a slot from then
// on (gatedBody re-queues for it), so the bound holds whatever a caller says.
type ingestBudget struct {
	sem   *semaphore.Weighted
	slot  int64
	total int64
	inUse atomic.Int64
	// metrics, once Instrument registered them (cairn_ingest_budget_*).
	metrics atomic.Pointer[ingestMetrics]
}

type ingestMetrics struct {
	wait      prometheus.Histogram
	abandoned prometheus.Counter
}

func newIngestBudget(slots, uploadConcurrency int) *ingestBudget {
	slot := int64(blob.SingleSegmentMaxBytes) + int64(1+uploadConcurrency)*blob.ChunkMaxBytes + 2*ingestPieceBytes
	return &ingestBudget{sem: semaphore.NewWeighted(int64(slots) * slot), slot: slot, total: int64(slots) * slot}
}

// weight is what a body of sizeHint bytes (0 or less: unknown) holds while it ingests:
// its length, the extra byte the splitter reads to see its end and the two pieces of its
// gatedBody; a slot for a body of unknown length or longer than one segment.
func (b *ingestBudget) weight(sizeHint int64) int64 {
	if sizeHint <= 0 || sizeHint > blob.SingleSegmentMaxBytes {
		return b.slot
	}
	return min(b.slot, sizeHint+1+2*ingestPieceBytes)
}

// within is how many bytes of its body a body holding weight w may read before it must
// hold a slot instead.
func (b *ingestBudget) within(w int64) int64 {
	if w >= b.slot {
		return math.MaxInt64
	}
	return w - 2*ingestPieceBytes
}

// acquire holds weight w (at most a slot) of the budget, waiting its turn, or fails with
// ctx's error. Every admission's wait is observed, 0 when the weight was free at once.
func (b *ingestBudget) acquire(ctx context.Context, w int64) error {
	var waited time.Duration
	if !b.sem.TryAcquire(w) {
		start := time.Now()
		if err := b.sem.Acquire(ctx, w); err != nil {
			if m := b.metrics.Load(); m != nil {
				m.abandoned.Inc()
			}
			return err
		}
		waited = time.Since(start)
	}
	b.inUse.Add(w)
	if m := b.metrics.Load(); m != nil {
		m.wait.Observe(waited.Seconds())
	}
	return nil
}

// release gives back weight w that acquire held.
func (b *ingestBudget) release(w int64) {
	b.inUse.Add(-w)
	b.sem.Release(w)
}

// admit holds weight w of the budget until release is called, or fails with ctx's error.
func (b *ingestBudget) admit(ctx context.Context, w int64) (release func(), err error) {
	if err := b.acquire(ctx, w); err != nil {
		return nil, err
	}
	return func() { b.release(w) }, nil
}

// instrument registers the cairn_ingest_budget_* metrics on reg: the gauges
// cairn_ingest_budget_bytes and cairn_ingest_budget_in_use_bytes, the histogram
// cairn_ingest_budget_wait_seconds of every admission's wait, and the counter
// cairn_ingest_budget_abandoned_total of waits that ended without one (the request's
// context ended: its client went away or its deadline passed). Call it once.
func (b *ingestBudget) instrument(reg prometheus.Registerer) error {
	m := &ingestMetrics{
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "cairn", Subsystem: "ingest_budget", Name: "wait_seconds",
			Help:    "How long each upload above the inline limit waited for its weight of the node's ingest budget (0: free at once).",
			Buckets: []float64{0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 60}}),
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "ingest_budget", Name: "abandoned_total",
			Help: "Uploads whose wait for the ingest budget ended without it (the client went away or the request's deadline passed)."}),
	}
	total := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "ingest_budget", Name: "bytes",
		Help: "The node's ingest budget: MaxConcurrentIngests slots, each what the longest body holds at once."},
		func() float64 { return float64(b.total) })
	inUse := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "ingest_budget", Name: "in_use_bytes",
		Help: "Bytes of the ingest budget held by uploads whose bytes flow."},
		func() float64 { return float64(b.inUse.Load()) })
	for _, c := range []prometheus.Collector{m.wait, m.abandoned, total, inUse} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("workbench: ingest budget metrics: %w", err)
		}
	}
	b.metrics.Store(m)
	return nil
}
