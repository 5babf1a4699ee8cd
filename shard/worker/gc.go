package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
)

// Garbage collection of blobs, the sweeper's half (docs/architecture.md#blob-storage-and-garbage-collection; the FSM's rules are in
// meta/gc.go; the writer's half, a publish that meets an intent and uploads again, is in
// workbench). One sweep of a shard, per agent root:
//
//  1. Plan, reading only: the root's zero-count digests past the grace period that no
//     backup hold keeps (meta/backup.go), and its
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
// shard in one Set never overlap.

// Garbage-collection defaults.
const (
	// DefaultGCGrace is how long a blob must have been unreferenced (or, for an orphan,
	// stored) before it is collected: longer than the longest read or upload stream
	// (docs/architecture.md#the-read-path).
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
	// must have been stored (object modification time), before it goes. ≤ 0: the Set's
	// Config.GCGrace.
	Grace time.Duration
	// DryRun reports what would go and deletes nothing.
	DryRun bool
	// MaxBatch bounds the blobs collected per agent root (1..meta.MaxGCBatch); ≤ 0:
	// DefaultGCMaxBatch. A root with more reports More.
	MaxBatch int
	// Agent limits the sweep to one agent root ("" = every root of every led shard).
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

// gcOptions returns opts with the defaults filled in.
func (c Config) gcOptions(opts GCOptions) GCOptions {
	if opts.Grace <= 0 {
		opts.Grace = c.GCGrace
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultGCMaxBatch
	}
	if opts.IntentTimeout <= 0 {
		opts.IntentTimeout = DefaultGCIntentTimeout
	}
	return opts
}

// validate checks the options a caller may get wrong: a *meta.Error (InvalidArguments)
// naming the field.
func (o GCOptions) validate() error {
	if o.MaxBatch > meta.MaxGCBatch {
		return &meta.Error{Code: meta.CodeInvalidArguments, Field: "max_batch", Message: fmt.Sprintf("must be at most %d", meta.MaxGCBatch)}
	}
	if o.Agent != "" {
		if err := meta.ValidateName("agent", o.Agent); err != nil {
			return err
		}
	}
	return nil
}

// CollectGarbage runs one garbage-collection sweep of every shard this Set leads now (or,
// with opts.Agent, of the led shard that holds that root; a root no led shard holds is
// not swept and not reported): see the comment at the top of gc.go. A sweep of a shard
// waits for the one running there (its worker's or another call's) to finish.
//
// Errors: a *meta.Error (InvalidArguments) for opts, naming the field; one matching
// outcome.ErrUnavailable when this node leads no shard or a shard stopped serving; one
// wrapping a blob error (blob.ErrUnavailable, …) when the object store failed a read or a
// delete (the sweep stopped, fail closed). The report covers what was done before an
// error.
func (s *Set) CollectGarbage(ctx context.Context, opts GCOptions) (GCReport, error) {
	opts = s.cfg.gcOptions(opts)
	rep := GCReport{DryRun: opts.DryRun}
	if err := opts.validate(); err != nil {
		return rep, err
	}
	led := s.ledCores()
	if len(led) == 0 {
		return rep, errNoLeader
	}
	for _, l := range led {
		if err := s.sweep(ctx, l.core, l.st, opts, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// sweep runs one sweep of the shard of c, holding its sweep lock, adds its figures to rep
// and counts it in the metrics.
func (s *Set) sweep(ctx context.Context, c Core, st *shardState, opts GCOptions, rep *GCReport) error {
	st.sweep.Lock()
	defer st.sweep.Unlock()
	var own GCReport
	own.DryRun = opts.DryRun
	err := s.collect(ctx, c, opts, &own)
	s.metrics.observeGC(own, err)
	rep.Roots = append(rep.Roots, own.Roots...)
	rep.Candidates += own.Candidates
	rep.CandidateBytes += own.CandidateBytes
	rep.Intents += own.Intents
	rep.Deleted += own.Deleted
	rep.DeletedBytes += own.DeletedBytes
	rep.Orphans += own.Orphans
	rep.More = rep.More || own.More
	return err
}

// collect sweeps every root of c (or opts.Agent's), each planned on a fresh view.
func (s *Set) collect(ctx context.Context, c Core, opts GCOptions, rep *GCReport) error {
	view, err := c.ReadView(ctx)
	if err != nil {
		return err
	}
	var agents []string
	if opts.Agent != "" {
		agents = append(agents, opts.Agent)
	} else {
		view.Shard().Roots(func(r *meta.Root) bool {
			agents = append(agents, r.Agent)
			return true
		})
	}
	for i, agent := range agents {
		if i > 0 {
			// Earlier roots took time; plan each root on a fresh view.
			if view, err = c.ReadView(ctx); err != nil {
				return err
			}
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
			err = s.sweepRoot(ctx, c, plan, opts)
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
func (s *Set) planRoot(ctx context.Context, view *meta.View, root *meta.Root, opts GCOptions) (*gcPlan, error) {
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
	view.Shard().Blobs(root.UID, func(b meta.BlobRef) bool {
		switch {
		case b.Intent && b.IntentAtMs+takeOverMs <= now:
			return add(meta.GCCandidate{Digest: b.Digest, TakeOverVersion: b.IntentVersion}, GCBlob{Digest: b.Digest, TakenOver: true})
		case !b.Intent && b.Count == 0 && b.ZeroSinceMs+graceMs <= now && !view.Shard().BackupHeld(b.ZeroSinceMs):
			return add(meta.GCCandidate{Digest: b.Digest}, GCBlob{Digest: b.Digest})
		}
		return true
	})
	for _, c := range p.cands {
		info, err := s.cfg.Blobs.Stat(ctx, blob.Key{Root: root.UID, Digest: blob.Digest(c.Digest)})
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
	err := s.cfg.Blobs.List(ctx, root.UID, func(k blob.Key, info blob.Info) error {
		d := meta.Digest(k.Digest)
		if _, ok := view.Shard().Blob(root.UID, d); ok || info.ModTime.After(cutoff) {
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
func (s *Set) sweepRoot(ctx context.Context, c Core, p *gcPlan, opts GCOptions) error {
	start := time.Now()
	res, err := c.Propose(ctx, meta.Header{}, meta.GCIntent{Agent: p.agent, GraceMs: opts.Grace.Milliseconds(),
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
			if err := s.cfg.Blobs.Delete(gctx, blob.Key{Root: p.uid, Digest: blob.Digest(d)}); err != nil {
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
	rec, err := c.Propose(ctx, meta.Header{}, meta.GCDeleted{Agent: p.agent, Blobs: done})
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
