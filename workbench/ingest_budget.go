package workbench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/cairnstore/cairn/blob"
)

// ingestBudget bounds the memory of the bodies being cut, hashed and uploaded at once,
// node-wide (Config.MaxConcurrentIngests). It counts bytes, not bodies: a body weighs what
// its ingest holds, so the memory of the old four slots holds three bodies of any length
// beside many small ones, or many more small ones (issue 29: with 16 clients writing 1 MiB
// bodies, 12 of them queued for the 4 slots while the node's CPU was mostly idle).
// Waiters are served first come, first served (semaphore.Weighted), so a body that weighs
// a slot is not starved by small ones, and each waits at most Config.IngestQueueTimeout.
//
// What a body weighs (need), from what blob.Splitter allocates for it:
//   - declared length at most blob.SingleSegmentMaxBytes: the buffer its length and one
//     byte more are read into, from the segment pool's power-of-two classes (segBufCap:
//     2 MiB for a 1 MiB body, 16 MiB for an 8 MiB one);
//   - unknown length, or longer than one segment: a slot, the most one body holds at once
//     (a head of SingleSegmentMaxBytes, a segment being cut and UploadConcurrency segments
//     uploading, each up to blob.ChunkMaxBytes);
//
// each plus what its gatedBody and the inline peek hold (overhead). A body takes its
// weight before the ingest allocates its buffers and gives it back only when its ingest
// ends, so the bytes the budget admits bound what the node's uploads hold; a body waiting
// for its weight holds only its gatedBody's pieces and the inline peek. The weight is
// fixed when it is taken, so no body waits while it holds part of the budget, and waiters
// cannot deadlock. The one exception is a body that brings more bytes than it declared
// (net/http holds REST bodies to their Content-Length and the S3 gateway refuses such a
// body, so only a caller's mistake does it): it gives its weight back and queues for a
// slot, holding meanwhile the buffer of its declared length.
//
// Bodies that weigh a slot may hold at most MaxConcurrentIngests - 1 slots together (at
// least one): the rest of the budget stays for bodies of declared length, so a few slow
// uploads of unknown length, which keep the minimum body rate and so their slots for as
// long as they last, cannot make every small upload of the node wait (issue 29, a
// tester's finding: four chunked uploads at 70 KB/s made 1 MiB uploads wait 98 s).
type ingestBudget struct {
	sem          *semaphore.Weighted
	large        *semaphore.Weighted // bodies that weigh a slot: MaxConcurrentIngests - 1, at least 1
	slot         int64
	total        int64
	overhead     int64 // the two pieces of a gatedBody and the inline peek
	queueTimeout time.Duration
	inUse        atomic.Int64
	// metrics, once Instrument registered them (cairn_ingest_budget_*).
	metrics atomic.Pointer[ingestMetrics]
}

type ingestMetrics struct {
	wait  prometheus.Histogram
	ended *prometheus.CounterVec
}

// newIngestBudget returns the budget of cfg (defaulted): MaxConcurrentIngests slots.
func newIngestBudget(cfg Config) *ingestBudget {
	overhead := 2*ingestPieceBytes + cfg.InlineMaxBytes + 1
	slot := int64(blob.SingleSegmentMaxBytes) + int64(1+cfg.UploadConcurrency)*blob.ChunkMaxBytes + overhead
	total := int64(cfg.MaxConcurrentIngests) * slot
	return &ingestBudget{sem: semaphore.NewWeighted(total), large: semaphore.NewWeighted(int64(max(1, cfg.MaxConcurrentIngests-1))),
		slot: slot, total: total, overhead: overhead, queueTimeout: cfg.IngestQueueTimeout}
}

// need is what a body of sizeHint bytes (0 or less: unknown) holds once it has brought
// seen bytes (see ingestBudget).
func (b *ingestBudget) need(sizeHint, seen int64) int64 {
	if sizeHint <= 0 || sizeHint > blob.SingleSegmentMaxBytes || seen > sizeHint {
		return b.slot
	}
	return min(b.slot, segBufCap(sizeHint+1)+b.overhead)
}

// acquire holds w bytes of the budget (and, for a slot, one of the large bodies' places),
// waiting its turn at most queueTimeout. It fails with ctx's error when ctx ends first,
// and with a retryable ResourceExhausted (details.limit LimitIngestBudget) when the wait
// times out. Every admission's wait is observed, 0 when the bytes were free at once.
func (b *ingestBudget) acquire(ctx context.Context, w int64) error {
	large := w >= b.slot
	var waited time.Duration
	if !b.tryAcquire(w, large) {
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, b.queueTimeout)
		err := b.wait(wctx, w, large)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				b.ended("request_ended")
				return ctx.Err()
			}
			b.ended("queue_timeout")
			e := exhausted(LimitIngestBudget, uploadRetryAfter, "the node's ingest budget of %d bytes stayed held by other uploads for %s; retry later",
				b.total, b.queueTimeout)
			e.Details["queue_timeout_ms"] = b.queueTimeout.Milliseconds()
			return e
		}
		waited = time.Since(start)
	}
	b.inUse.Add(w)
	if m := b.metrics.Load(); m != nil {
		m.wait.Observe(waited.Seconds())
	}
	return nil
}

func (b *ingestBudget) tryAcquire(w int64, large bool) bool {
	if large && !b.large.TryAcquire(1) {
		return false
	}
	if !b.sem.TryAcquire(w) {
		if large {
			b.large.Release(1)
		}
		return false
	}
	return true
}

// wait takes a large body's place first, then the bytes; it holds nothing when it fails.
func (b *ingestBudget) wait(ctx context.Context, w int64, large bool) error {
	if large {
		if err := b.large.Acquire(ctx, 1); err != nil {
			return err
		}
	}
	if err := b.sem.Acquire(ctx, w); err != nil {
		if large {
			b.large.Release(1)
		}
		return err
	}
	return nil
}

func (b *ingestBudget) ended(reason string) {
	if m := b.metrics.Load(); m != nil {
		m.ended.WithLabelValues(reason).Inc()
	}
}

// release gives back w bytes that acquire held (and a large body's place with a slot).
func (b *ingestBudget) release(w int64) {
	if w > 0 {
		b.inUse.Add(-w)
		b.sem.Release(w)
		if w >= b.slot {
			b.large.Release(1)
		}
	}
}

// admit holds the weight of a body already in memory, of n bytes, until release is called.
func (b *ingestBudget) admit(ctx context.Context, n int64) (release func(), err error) {
	w := b.need(n, n)
	if err := b.acquire(ctx, w); err != nil {
		return nil, err
	}
	return func() { b.release(w) }, nil
}

// instrument registers the cairn_ingest_budget_* metrics on reg: the gauges
// cairn_ingest_budget_bytes and cairn_ingest_budget_in_use_bytes, the histogram
// cairn_ingest_budget_wait_seconds of every admission's wait, and the counter
// cairn_ingest_budget_waits_ended_total{reason} of waits that ended without one
// (queue_timeout: answered ResourceExhausted; request_ended: the client went away or the
// request's deadline passed). Call it once.
func (b *ingestBudget) instrument(reg prometheus.Registerer) error {
	m := &ingestMetrics{
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "cairn", Subsystem: "ingest_budget", Name: "wait_seconds",
			Help:    "How long uploads above the inline limit waited for their weight of the node's ingest budget (0: free at once).",
			Buckets: []float64{0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 30}}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "ingest_budget", Name: "waits_ended_total",
			Help: "Waits for the ingest budget that ended without it: queue_timeout (answered ResourceExhausted after IngestQueueTimeout), request_ended (the client went away or the request's deadline passed)."},
			[]string{"reason"}),
	}
	total := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "ingest_budget", Name: "bytes",
		Help: "The node's ingest budget: MaxConcurrentIngests slots, each what the longest body holds at once."},
		func() float64 { return float64(b.total) })
	inUse := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "ingest_budget", Name: "in_use_bytes",
		Help: "Bytes of the ingest budget held by uploads being read, cut, hashed and uploaded."},
		func() float64 { return float64(b.inUse.Load()) })
	for _, reason := range []string{"queue_timeout", "request_ended"} {
		m.ended.WithLabelValues(reason) // every series from the start, for rate()
	}
	for _, c := range []prometheus.Collector{m.wait, m.ended, total, inUse} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("workbench: ingest budget metrics: %w", err)
		}
	}
	b.metrics.Store(m)
	return nil
}
