package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/outcome"
)

// Core is what the workers need of one shard's metadata core: *shard.Shard implements it.
// Its errors that are not the FSM's (*meta.Error) match package outcome's values with
// errors.Is.
//
// It is an alias of an interface literal, not a defined type, so that any package that
// declares the same alias (workbench does) has the identical type: a method of
// *workbench.Service that takes a workbench.Core satisfies Restorer.
type Core = interface {
	// Propose replicates a command and returns its applied result.
	Propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error)
	// ReadView returns a linearizable view of the state.
	ReadView(ctx context.Context) (*meta.View, error)
}

// Restorer drives the restore operations a crash or a leader change left copying, on one
// core (*workbench.Service implements it: the driver builds the contract's restore
// manifest, so it lives with the Workbench adapter).
type Restorer interface {
	// ResumeRestores drives every restore of c still copying to completion; it returns the
	// first error and is called again on the next tick.
	ResumeRestores(ctx context.Context, c Core) error
}

// Defaults of Config.
const (
	DefaultGCInterval         = 10 * time.Minute
	DefaultCompactionInterval = 5 * time.Second
	DefaultCompactionBatch    = 64
	DefaultRestoreInterval    = 2 * time.Second
)

// maxGCSweepsPerTick bounds the sweeps one GC tick runs back to back while a sweep reports
// More (a root with more candidates than one batch).
const maxGCSweepsPerTick = 10

// Config tunes a Set. Zero durations and counts take the defaults.
type Config struct {
	// Blobs is the object store the sweeper deletes from and the compactor reads and
	// writes. Required.
	Blobs blob.Store
	// GCInterval is the time between garbage-collection ticks of a led shard; a tick runs
	// a sweep and, while it reports More, up to 9 follow-ups at once. Default
	// DefaultGCInterval (10m).
	GCInterval time.Duration
	// GCGrace is how long a blob must have had no reference (or an orphan must have been
	// stored) before a sweep takes it, unless GCOptions.Grace says otherwise. It must be
	// longer than the longest read or upload stream (docs/architecture.md#the-read-path; workbench bounds
	// uploads below its own Config.GCGrace, which must be this one). Default
	// DefaultGCGrace (1h).
	GCGrace time.Duration
	// GCMaxBatch bounds the blobs a scheduled sweep collects per agent root
	// (1..meta.MaxGCBatch); a root with more is swept again at once (the follow-ups).
	// Default DefaultGCMaxBatch.
	GCMaxBatch int
	// CompactionInterval is the time between compaction passes of a led shard; each pass
	// rewrites at most CompactionBatch files. Defaults DefaultCompactionInterval (5s) and
	// DefaultCompactionBatch (64).
	CompactionInterval time.Duration
	CompactionBatch    int
	// InlineMaxBytes: a compacted run of at most this many bytes is stored in the metadata
	// record, a longer one as one blob. 0 stores every run in the object store; at most
	// meta.MaxInlineSegmentBytes. Use the Workbench adapter's value.
	InlineMaxBytes int64
	// RestoreInterval is the time between looks for restores left copying, per led shard
	// (the first look runs when the shard is led). Default DefaultRestoreInterval (2s).
	RestoreInterval time.Duration
	// Restorer resumes restores. Nil: no restore resumer runs.
	Restorer Restorer
	// Registerer receives the cairn_gc_* and cairn_compaction_* metrics, registered once
	// by New. Nil: no metrics.
	Registerer prometheus.Registerer
	// Logger receives the workers' reports. Default slog.Default().
	Logger *slog.Logger
}

// positiveOr sets *v to d when *v is not positive: a setting left zero (or negative, which
// means nothing) takes its default.
func positiveOr[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// setDefaults fills the zero fields.
func (c *Config) setDefaults() {
	positiveOr(&c.GCInterval, DefaultGCInterval)
	positiveOr(&c.GCGrace, DefaultGCGrace)
	positiveOr(&c.GCMaxBatch, DefaultGCMaxBatch)
	positiveOr(&c.CompactionInterval, DefaultCompactionInterval)
	positiveOr(&c.CompactionBatch, DefaultCompactionBatch)
	positiveOr(&c.RestoreInterval, DefaultRestoreInterval)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports the first field that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Blobs == nil:
		return errors.New("worker: Config.Blobs is required")
	case c.GCMaxBatch > meta.MaxGCBatch:
		return fmt.Errorf("worker: Config.GCMaxBatch %d out of range 1..%d", c.GCMaxBatch, meta.MaxGCBatch)
	case c.InlineMaxBytes < 0 || c.InlineMaxBytes > meta.MaxInlineSegmentBytes:
		return fmt.Errorf("worker: Config.InlineMaxBytes %d out of range 0..%d", c.InlineMaxBytes, meta.MaxInlineSegmentBytes)
	}
	return nil
}

// Set runs the leader-only workers of the shards a node leads: per led shard a garbage
// collector (with its orphan sweep), a compactor and a restore resumer. It is safe for
// concurrent use.
type Set struct {
	cfg     Config
	metrics *metrics // nil without Config.Registerer
	// scrubbing serializes Scrub calls; scrubMetrics is nil without Config.Registerer.
	scrubbing    sync.Mutex
	scrubMetrics *scrubMetrics
	// compacting bounds the compaction runs of the node held in memory at once (each up to
	// compactionRunBytes).
	compacting chan struct{}
	// gcTicks, when set (tests), replaces the garbage collector's ticker.
	gcTicks <-chan time.Time

	mu     sync.Mutex
	closed bool
	shards map[int]*shardState
	wg     sync.WaitGroup // every worker goroutine
}

// shardState is what a Set keeps of one shard, led or not: it outlives a lead, so that
// the sweeps of a shard never overlap, not even across a quick Unlead and Lead.
type shardState struct {
	sweep sync.Mutex // held by each sweep of the shard
	// lead is the current lead (nil while the shard is not led).
	lead *lead
	// last is the latest lead's done channel: a new lead's workers wait for it, so the
	// workers of two leads never run at once.
	last chan struct{}
}

// lead is one period of leadership of a shard.
type lead struct {
	core   Core
	cancel context.CancelFunc
	done   chan struct{} // closed once the lead's workers stopped
}

// New returns a Set that leads no shard yet; cfg's zero fields take the defaults. It
// registers the workers' metrics on cfg.Registerer (an error if they are registered
// there already).
func New(cfg Config) (*Set, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Set{cfg: cfg, shards: map[int]*shardState{}, compacting: make(chan struct{}, compactionConcurrency)}
	if cfg.Registerer != nil {
		m, err := newMetrics(cfg.Registerer)
		if err != nil {
			return nil, err
		}
		s.metrics = m
		if s.scrubMetrics, err = newScrubMetrics(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Lead starts the workers of shard on c, the shard's replica that just became a ready
// leader (call it from shard.Config.OnReady). It returns at once: the workers wait for
// those of the shard's previous lead to stop before they act. Leading a shard that is led
// on the same core does nothing; on another core, the old lead stops first. After Close,
// Lead does nothing.
func (s *Set) Lead(shard int, c Core) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	st := s.state(shard)
	if st.lead != nil {
		if st.lead.core == c {
			return
		}
		st.lead.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &lead{core: c, cancel: cancel, done: make(chan struct{})}
	prev := st.last
	st.lead, st.last = l, l.done
	log := s.cfg.Logger.With("shard", shard)
	var workers sync.WaitGroup
	run := func(fn func(context.Context, Core, *shardState, *slog.Logger)) {
		workers.Add(1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer workers.Done()
			select {
			case <-prev:
			case <-ctx.Done():
				return
			}
			fn(ctx, c, st, log)
		}()
	}
	run(s.collectGarbage)
	run(s.compactSegments)
	if s.cfg.Restorer != nil {
		run(s.resumeRestores)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		workers.Wait()
		close(l.done)
	}()
}

// Unlead stops the workers of shard (call it from shard.Config.OnReady when the replica
// stops being a ready leader, and before a replica closes). It returns at once, with a
// channel closed once they have stopped (closed already when shard was not led). A sweep
// cut off between its intent and its recorded deletion leaves intents that a later sweep
// takes over (gc.go).
func (s *Set) Unlead(shard int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.shards[shard]
	if !ok || st.lead == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	l := st.lead
	st.lead = nil
	l.cancel()
	return l.done
}

// Led returns the shards led now, in increasing order.
func (s *Set) Led() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for id, st := range s.shards {
		if st.lead != nil {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Close stops every worker and waits until all have returned. Lead does nothing after it.
func (s *Set) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, st := range s.shards {
		if st.lead != nil {
			st.lead.cancel()
			st.lead = nil
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// state returns shard's state, creating it. s.mu must be held.
func (s *Set) state(shard int) *shardState {
	st, ok := s.shards[shard]
	if !ok {
		st = &shardState{last: make(chan struct{})}
		close(st.last) // no earlier lead to wait for
		s.shards[shard] = st
	}
	return st
}

// ledCores returns the shards led now with their cores and states, by shard id.
func (s *Set) ledCores() []ledCore {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ledCore
	for id, st := range s.shards {
		if st.lead != nil {
			out = append(out, ledCore{shard: id, core: st.lead.core, st: st})
		}
	}
	slices.SortFunc(out, func(a, b ledCore) int { return a.shard - b.shard })
	return out
}

type ledCore struct {
	shard int
	core  Core
	st    *shardState
}

// errNoLeader answers a call that needs a led shard on a node that leads none.
var errNoLeader = fmt.Errorf("worker: this node leads no shard: %w", outcome.ErrUnavailable)

// collectGarbage runs a sweep of the shard every GCInterval, followed at once by another
// while one reports More, up to maxGCSweepsPerTick in a row.
func (s *Set) collectGarbage(ctx context.Context, c Core, st *shardState, log *slog.Logger) {
	t := time.NewTicker(s.cfg.GCInterval)
	defer t.Stop()
	ticks := t.C
	if s.gcTicks != nil {
		ticks = s.gcTicks
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		for i := 0; i < maxGCSweepsPerTick && ctx.Err() == nil; i++ {
			if i > 0 {
				s.metrics.observeFollowUp()
			}
			var rep GCReport
			err := s.sweep(ctx, c, st, s.cfg.gcOptions(GCOptions{MaxBatch: s.cfg.GCMaxBatch}), &rep)
			if err != nil {
				report(ctx, log, "garbage collection", err, "deleted", rep.Deleted)
				break
			}
			if rep.Deleted > 0 {
				log.Info("garbage collection", "deleted", rep.Deleted, "deleted_bytes", rep.DeletedBytes, "orphans", rep.Orphans)
			}
			if !rep.More {
				break
			}
		}
	}
}

// compactSegments runs a compaction pass of the shard every CompactionInterval.
func (s *Set) compactSegments(ctx context.Context, c Core, _ *shardState, log *slog.Logger) {
	t := time.NewTicker(s.cfg.CompactionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.compactCore(ctx, c, s.cfg.CompactionBatch); err != nil {
			report(ctx, log, "compaction", err)
		}
	}
}

// resumeRestores asks the Restorer to resume the shard's restores at once and then every
// RestoreInterval.
func (s *Set) resumeRestores(ctx context.Context, c Core, _ *shardState, log *slog.Logger) {
	t := time.NewTicker(s.cfg.RestoreInterval)
	defer t.Stop()
	for {
		if err := s.cfg.Restorer.ResumeRestores(ctx, c); err != nil {
			report(ctx, log, "resuming restores", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// report logs a worker's failure: nothing once its lead ended, at debug level when the
// replica stopped serving (deposed, its Unlead on the way), else as a warning.
func report(ctx context.Context, log *slog.Logger, what string, err error, args ...any) {
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, outcome.ErrUnavailable):
		log.Debug(what, append(args, "err", err)...)
	default:
		log.Warn(what, append(args, "err", err)...)
	}
}
