package workbench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
)

// Garbage collection of blobs, the sweeper's half (DESIGN.md §8; the FSM's rules are in
// meta/gc.go). One sweep, per agent root:
//
//  1. Plan, reading only: the root's zero-count digests past the grace period and its
//     leftover intents old enough to take over (from a linearizable view), their stored
//     sizes (Stat), and the orphans: objects the store lists (List) that have no
//     reference record and were stored longer ago than the grace period. Any read error
//     aborts the sweep before anything is deleted (fail closed).
//  2. GCIntent: the FSM re-checks every candidate and puts the ones that still qualify
//     under delete intent. From then on no publish can reference them.
//  3. Delete the accepted objects, within half of IntentTimeout of proposing the intent:
//     after IntentTimeout another sweep (a new leader's) may take the intents over, and by
//     then none of this sweep's deletes may still land.
//  4. GCDeleted: the FSM removes the records still under this sweep's intent.
//
// A crash or error between 2 and 4 leaves intents behind; a later sweep takes them over
// once IntentTimeout has passed and finishes them (Delete is idempotent). Sweeps of one
// Service never overlap.

// Garbage-collection defaults.
const (
	// DefaultGCGrace is how long a blob must have been unreferenced (or, for an orphan,
	// stored) before it is collected: longer than the longest read or upload stream
	// (DESIGN.md §6).
	DefaultGCGrace = time.Hour
	// DefaultGCMaxBatch bounds the blobs one sweep collects per agent root.
	DefaultGCMaxBatch = 1000
	// DefaultGCIntentTimeout is how long an intent belongs to the sweep that set it.
	DefaultGCIntentTimeout = 2 * time.Minute
)

// gcDeleteConcurrency is how many objects a sweep deletes at once.
const gcDeleteConcurrency = 4

// GCOptions tune one CollectGarbage call. Zero values take the defaults.
type GCOptions struct {
	// Grace is how long a digest must have had no reference (command time), or an orphan
	// must have been stored (object modification time), before it goes. ≤ 0: the
	// service's Config.GCGrace.
	Grace time.Duration
	// DryRun reports what would go and deletes nothing.
	DryRun bool
	// MaxBatch bounds the blobs collected per agent root (1..meta.MaxGCBatch); ≤ 0:
	// DefaultGCMaxBatch. A root with more reports More.
	MaxBatch int
	// Agent limits the sweep to one agent root ("" = every root).
	Agent string
	// IntentTimeout is how long an intent belongs to the sweep that set it before
	// another sweep may take it over; this sweep stops deleting after half of it. ≤ 0:
	// DefaultGCIntentTimeout.
	IntentTimeout time.Duration
}

// GCBlob is one blob a sweep collects (or, in a dry run, would collect).
type GCBlob struct {
	Digest meta.Digest
	// StoredBytes is the object's stored size (compressed when it is); 0 when the object
	// is already gone.
	StoredBytes int64
	// Orphan: uploaded and never published (no reference record).
	Orphan bool
	// TakenOver: a leftover intent of an earlier sweep that this one finishes.
	TakenOver bool
}

// GCRootReport says what a sweep did in one agent root.
type GCRootReport struct {
	Agent string
	// Candidates are the blobs the sweep planned to collect.
	Candidates []GCBlob
	// Intents counts the candidates the FSM put under intent (not in a dry run).
	Intents int
	// Deleted counts the blobs whose deletion was recorded, DeletedBytes their stored
	// bytes and Orphans how many of them were orphans.
	Deleted      int
	DeletedBytes int64
	Orphans      int
	// More: the root has more candidates than MaxBatch; a later sweep takes them.
	More bool
}

// GCReport says what one CollectGarbage call did (or would do, DryRun), per agent root
// with candidates.
type GCReport struct {
	DryRun bool
	Roots  []GCRootReport
	// Candidates and CandidateBytes total the planned blobs; Intents, Deleted,
	// DeletedBytes and Orphans total the roots' figures.
	Candidates     int
	CandidateBytes int64
	Intents        int
	Deleted        int
	DeletedBytes   int64
	Orphans        int
	// More: some root has more candidates than MaxBatch.
	More bool
}

// gcState is the Service's garbage-collection state.
type gcState struct {
	mu      sync.Mutex // one sweep at a time
	metrics atomic.Pointer[gcMetrics]
}

type gcMetrics struct {
	runs           *prometheus.CounterVec
	intents        prometheus.Counter
	deleted        prometheus.Counter
	deletedBytes   prometheus.Counter
	orphans        prometheus.Counter
	publishRetries prometheus.Counter
}

// InstrumentGC registers the cairn_gc_* metrics of this service's sweeps and write-path
// retries on reg. Call it once, before the first sweep.
func (s *Service) InstrumentGC(reg prometheus.Registerer) error {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "gc", Name: name, Help: help})
	}
	m := &gcMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "gc", Name: "runs_total",
			Help: "Garbage-collection sweeps by result (ok, error, dry_run)."}, []string{"result"}),
		intents:        counter("intents_total", "Blobs put under delete intent."),
		deleted:        counter("blobs_deleted_total", "Blobs deleted and recorded as deleted."),
		deletedBytes:   counter("bytes_deleted_total", "Stored bytes of the deleted blobs."),
		orphans:        counter("orphans_deleted_total", "Deleted blobs that were orphans (uploaded, never published)."),
		publishRetries: counter("publish_retries_total", "Writes whose publish met a blob under delete intent (or deleted after upload) and uploaded again."),
	}
	for _, c := range []prometheus.Collector{m.runs, m.intents, m.deleted, m.deletedBytes, m.orphans, m.publishRetries} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("workbench: gc metrics: %w", err)
		}
	}
	s.gc.metrics.Store(m)
	return nil
}

func (s *Service) observeGC(rep GCReport, err error) {
	m := s.gc.metrics.Load()
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
	m.runs.WithLabelValues(result).Inc()
	m.intents.Add(float64(rep.Intents))
	m.deleted.Add(float64(rep.Deleted))
	m.deletedBytes.Add(float64(rep.DeletedBytes))
	m.orphans.Add(float64(rep.Orphans))
}

// CollectGarbage runs one garbage-collection sweep over every agent root (or
// opts.Agent's): see the comment at the top of gc.go. Run it on the shard leader;
// elsewhere it fails with RoutingUnavailable. Calls are serialized.
//
// Errors: RoutingUnavailable (not the leader), ObjectUnavailable (the blob store failed a read or
// a delete: the sweep stopped, fail closed), InvalidArguments (opts). The report covers
// what was done before an error.
func (s *Service) CollectGarbage(ctx context.Context, opts GCOptions) (GCReport, error) {
	if opts.Grace <= 0 {
		opts.Grace = s.cfg.GCGrace
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultGCMaxBatch
	}
	if opts.MaxBatch > meta.MaxGCBatch {
		return GCReport{}, invalidArgument("max_batch", "must be at most %d", meta.MaxGCBatch)
	}
	if opts.IntentTimeout <= 0 {
		opts.IntentTimeout = DefaultGCIntentTimeout
	}
	if opts.Agent != "" {
		if err := meta.ValidateName("agent", opts.Agent); err != nil {
			return GCReport{}, AsError(err)
		}
	}
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	rep := GCReport{DryRun: opts.DryRun}
	err := s.collect(ctx, opts, &rep)
	s.observeGC(rep, err)
	if err != nil {
		return rep, AsError(err)
	}
	return rep, nil
}

func (s *Service) collect(ctx context.Context, opts GCOptions, rep *GCReport) error {
	var agents []string
	if opts.Agent != "" {
		agents = append(agents, opts.Agent)
	} else {
		views, err := s.leaderViews(ctx)
		if err != nil {
			return err
		}
		for _, view := range views {
			view.Roots(func(r *meta.Root) bool {
				agents = append(agents, r.Agent)
				return true
			})
		}
	}
	for _, agent := range agents {
		// Earlier roots took time; plan each root on a fresh view of its shard.
		view, err := s.readView(ctx, agent)
		if err != nil {
			return err
		}
		root, ok := view.Root(agent)
		if !ok {
			continue
		}
		plan, err := s.planRoot(ctx, view, root, opts)
		if err != nil {
			return err
		}
		if len(plan.cands) == 0 {
			continue
		}
		rr := &plan.report
		rep.Candidates += len(rr.Candidates)
		for _, b := range rr.Candidates {
			rep.CandidateBytes += b.StoredBytes
		}
		rep.More = rep.More || rr.More
		if !opts.DryRun {
			err = s.sweepRoot(ctx, plan, opts)
			rep.Intents += rr.Intents
			rep.Deleted += rr.Deleted
			rep.DeletedBytes += rr.DeletedBytes
			rep.Orphans += rr.Orphans
		}
		rep.Roots = append(rep.Roots, *rr)
		if err != nil {
			return err
		}
	}
	return nil
}

// gcPlan is what a sweep collects in one root.
type gcPlan struct {
	agent, uid string
	cands      []meta.GCCandidate
	blobs      map[meta.Digest]GCBlob
	report     GCRootReport
}

// errBatchFull stops a listing once a root's batch is full; it is not a failure.
var errBatchFull = errors.New("gc batch full")

// planRoot finds up to opts.MaxBatch blobs of root to collect, reading only.
func (s *Service) planRoot(ctx context.Context, view *meta.View, root *meta.Root, opts GCOptions) (*gcPlan, error) {
	p := &gcPlan{agent: root.Agent, uid: root.UID, blobs: map[meta.Digest]GCBlob{}, report: GCRootReport{Agent: root.Agent}}
	add := func(c meta.GCCandidate, b GCBlob) bool {
		if len(p.cands) == opts.MaxBatch {
			p.report.More = true
			return false
		}
		p.cands = append(p.cands, c)
		p.blobs[b.Digest] = b
		return true
	}
	// The view's command time stands still on an idle shard; the leader's clock, which
	// stamps the intent, does not. The FSM re-checks with the intent's command time.
	now := max(view.NowMs(), time.Now().UnixMilli())
	graceMs, takeOverMs := opts.Grace.Milliseconds(), opts.IntentTimeout.Milliseconds()
	view.Blobs(root.UID, func(b meta.BlobRef) bool {
		switch {
		case b.Intent && b.IntentAtMs+takeOverMs <= now:
			return add(meta.GCCandidate{Digest: b.Digest, TakeOverVersion: b.IntentVersion}, GCBlob{Digest: b.Digest, TakenOver: true})
		case !b.Intent && b.Count == 0 && b.ZeroSinceMs+graceMs <= now:
			return add(meta.GCCandidate{Digest: b.Digest}, GCBlob{Digest: b.Digest})
		}
		return true
	})
	for _, c := range p.cands {
		info, err := s.blobs.Stat(ctx, blob.Key{Root: root.UID, Digest: blob.Digest(c.Digest)})
		switch {
		case errors.Is(err, blob.ErrNotFound):
			// Already gone (a crashed sweep deleted it): the record still goes.
		case err != nil:
			return nil, err
		default:
			b := p.blobs[c.Digest]
			b.StoredBytes = info.StoredBytes
			p.blobs[c.Digest] = b
		}
	}
	// Orphans: stored objects with no reference record, older than the grace period. A
	// writer may publish one right after this view: then the FSM has a record when the
	// intent arrives and does not accept it.
	cutoff := time.Now().Add(-opts.Grace)
	err := s.blobs.List(ctx, root.UID, func(k blob.Key, info blob.Info) error {
		d := meta.Digest(k.Digest)
		if _, ok := view.Blob(root.UID, d); ok || info.ModTime.After(cutoff) {
			return nil
		}
		if !add(meta.GCCandidate{Digest: d, Orphan: true}, GCBlob{Digest: d, StoredBytes: info.StoredBytes, Orphan: true}) {
			return errBatchFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errBatchFull) {
		return nil, err
	}
	for _, c := range p.cands {
		p.report.Candidates = append(p.report.Candidates, p.blobs[c.Digest])
	}
	return p, nil
}

// sweepRoot puts the plan's candidates under intent, deletes what the FSM accepted and
// records the deletions.
func (s *Service) sweepRoot(ctx context.Context, p *gcPlan, opts GCOptions) error {
	start := time.Now()
	res, err := s.proposeRaw(ctx, meta.Header{}, meta.GCIntent{Agent: p.agent, GraceMs: opts.Grace.Milliseconds(),
		TakeOverAfterMs: opts.IntentTimeout.Milliseconds(), Candidates: p.cands})
	if err != nil {
		return err // outcome unknown: intents it may have set are taken over later
	}
	if res.Err != nil {
		return res.Err
	}
	if res.GC == nil || len(res.GC.Accepted) == 0 {
		return nil
	}
	p.report.Intents = len(res.GC.Accepted)
	// No delete of this sweep may land after another sweep could take the intents over.
	dctx, cancel := context.WithDeadline(ctx, start.Add(opts.IntentTimeout/2))
	defer cancel()
	var (
		mu   sync.Mutex
		done []meta.GCBlob
	)
	g, gctx := errgroup.WithContext(dctx)
	g.SetLimit(gcDeleteConcurrency)
	for _, d := range res.GC.Accepted {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := s.blobs.Delete(gctx, blob.Key{Root: p.uid, Digest: blob.Digest(d)}); err != nil {
				return err
			}
			mu.Lock()
			done = append(done, meta.GCBlob{Digest: d, IntentVersion: res.GC.IntentVersion})
			mu.Unlock()
			return nil
		})
	}
	delErr := g.Wait()
	if delErr == nil && dctx.Err() != nil {
		delErr = dctx.Err()
	}
	if len(done) == 0 {
		return delErr
	}
	rec, err := s.proposeRaw(ctx, meta.Header{}, meta.GCDeleted{Agent: p.agent, Blobs: done})
	if err == nil && rec.Err != nil {
		err = rec.Err
	}
	if err != nil {
		return errors.Join(delErr, err)
	}
	for _, d := range rec.GC.Accepted {
		b := p.blobs[d]
		p.report.Deleted++
		p.report.DeletedBytes += b.StoredBytes
		if b.Orphan {
			p.report.Orphans++
		}
	}
	return delErr
}

// Write-path side: a publish fenced against collection.

const (
	// maxBlobPublishAttempts bounds how often a write re-uploads its blobs after its
	// publish met the garbage collector.
	maxBlobPublishAttempts = 8
	// gcIntentWait bounds how long a write waits for the collector to finish with a blob
	// it references before it gives up with a retryable error.
	gcIntentWait = 30 * time.Second
	// maxRetainedBytes: a body up to this size (one segment) keeps its bytes until its
	// publish, so that it can upload them again if the collector deletes them meanwhile.
	// Larger bodies stream as ever and rely on their objects still being stored; when one
	// is gone they fail retryably and the caller sends the body again.
	maxRetainedBytes = blob.SingleSegmentMaxBytes
)

// gcGaveUp is the answer of a write whose blobs the collector kept deleting.
func gcGaveUp() *Error {
	return &Error{Code: CodeObjectUnavailable, Retryable: true, Details: map[string]any{},
		Message: "the garbage collector is deleting data this body shares with older files; retry the request"}
}

// gcDeletedBody is the answer of a write whose uploaded blob the collector deleted before
// the publish, when the body was too large to keep for another upload.
func gcDeletedBody() *Error {
	return &Error{Code: CodeObjectUnavailable, Retryable: true, Details: map[string]any{},
		Message: "the garbage collector deleted data of this body before the write could publish it (the body is too large to keep for another upload); nothing was written: send the body again"}
}

// retain keeps the bytes of a one-segment body for an upload again, within
// maxRetainedBytes; a larger body keeps nothing.
func (b *ingested) retain(data blob.Hashed) {
	if int64(data.Len()) > maxRetainedBytes {
		return
	}
	if b.retained == nil {
		b.retained = map[meta.Digest]blob.Hashed{}
	}
	b.retained[meta.Digest(data.Digest())] = data
}

// proposeBlobs proposes b, which references the segments of body, fenced against garbage
// collection: the command carries the upload fence body's ingest read before uploading.
// When the FSM rejects it with BlobDeleting, it waits until none of body's blobs is under
// delete intent, makes sure each is stored (uploading it again from the retained bytes),
// and retries with a new fence. It gives up with a retryable ObjectUnavailable.
func (s *Service) proposeBlobs(ctx context.Context, h meta.Header, b meta.Body, body *ingested) (meta.Result, *Error) {
	for attempt := 1; ; attempt++ {
		h.UploadFence = body.fence
		res, err := s.proposeRaw(ctx, h, b)
		if err != nil {
			return res, AsError(err)
		}
		if res.Err == nil {
			return res, nil
		}
		if res.Err.Code != meta.CodeBlobDeleting {
			return res, AsError(res.Err)
		}
		if m := s.gc.metrics.Load(); m != nil {
			m.publishRetries.Inc()
		}
		if attempt == maxBlobPublishAttempts {
			return res, gcGaveUp()
		}
		if werr := s.reupload(ctx, body); werr != nil {
			return res, werr
		}
	}
}

// reupload waits until no blob of body is under delete intent, then makes sure every blob
// without a reference record is stored, and moves body's fence to the view it checked.
func (s *Service) reupload(ctx context.Context, body *ingested) *Error {
	deadline := time.Now().Add(gcIntentWait)
	for attempt := 1; ; attempt++ {
		view, err := s.readView(ctx, body.agent)
		if err != nil {
			return AsError(err)
		}
		busy := false
		for _, sg := range body.segments {
			if r, ok := view.Blob(body.rootUID, sg.Digest); ok && r.Intent && !sg.IsInline() {
				busy = true
				break
			}
		}
		if busy {
			if time.Now().After(deadline) {
				return gcGaveUp()
			}
			if err := backoff(ctx, attempt); err != nil {
				return AsError(err)
			}
			continue
		}
		seen := map[meta.Digest]bool{}
		for _, sg := range body.segments {
			if sg.IsInline() || seen[sg.Digest] {
				continue
			}
			seen[sg.Digest] = true
			if _, ok := view.Blob(body.rootUID, sg.Digest); ok {
				continue // a record not under intent names a stored object
			}
			key := blob.Key{Root: body.rootUID, Digest: blob.Digest(sg.Digest)}
			if data, ok := body.retained[sg.Digest]; ok {
				if _, err := s.blobs.Put(ctx, key, data); err != nil {
					return AsError(err)
				}
				continue
			}
			if _, err := s.blobs.Stat(ctx, key); errors.Is(err, blob.ErrNotFound) {
				return gcDeletedBody() // deleted, and this body is too large to keep: the caller sends it again
			} else if err != nil {
				return AsError(err)
			}
		}
		body.fence = view.AppliedVersion()
		return nil
	}
}
