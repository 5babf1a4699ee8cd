package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Op performs one operation against the system under test. seq numbers the operations
// of a run from 0 (in the open loop, seq is the operation's slot on the schedule); an Op
// derives whatever it varies per call (path, body, read or write) from seq, so it needs
// no shared random state. Do must be safe for concurrent use and must return when ctx is
// done. A non-nil error is counted under ErrorClass(err).
type Op interface {
	Do(ctx context.Context, seq uint64) error
}

// OpFunc adapts a function to Op.
type OpFunc func(ctx context.Context, seq uint64) error

// Do calls f(ctx, seq).
func (f OpFunc) Do(ctx context.Context, seq uint64) error { return f(ctx, seq) }

// Labeler is implemented by an Op whose operations are of several kinds (MCP tools, reads
// and writes). RunLoad records every operation under its label too, and the phase
// reports each label's count, errors and latency (Phase.Breakdown). Label must be a
// function of seq alone, cheap, and safe for concurrent use.
type Labeler interface {
	Label(seq uint64) string
}

// labeledOp is an Op with a Labeler.
type labeledOp struct {
	op    Op
	label func(seq uint64) string
}

func (l labeledOp) Do(ctx context.Context, seq uint64) error { return l.op.Do(ctx, seq) }
func (l labeledOp) Label(seq uint64) string                  { return l.label(seq) }

// Load is how a phase offers load: a closed loop when Rate is 0, an open loop otherwise.
type Load struct {
	// Concurrency is the number of closed-loop workers, each issuing its next operation
	// as soon as the previous one returns. Used when Rate is 0; must be ≥ 1 then.
	Concurrency int
	// Rate is the open-loop arrival rate in operations per second: operation i is due at
	// start + i/Rate whatever happened to the operations before it. 0 selects the closed
	// loop.
	Rate float64
	// MaxInFlight bounds the open loop's operations in flight (its worker count). An
	// operation due while all are busy is sent when one frees up, and its latency still
	// counts from its due time. Must be ≥ 1 in the open loop.
	MaxInFlight int
	// Duration is how long operations are issued (closed loop) or scheduled (open loop).
	// Must be > 0.
	Duration time.Duration
	// DrainTimeout is how long after Duration the open loop keeps sending operations
	// that were due before Duration but not yet sent. Those still unsent then are recorded
	// as "not sent", with the latency from their due time to the end of the drain.
	// 0 means no drain.
	DrainTimeout time.Duration
	// OpTimeout bounds each operation (its context's deadline); 0 means no bound beyond
	// the run's context.
	OpTimeout time.Duration
}

// Validate reports the first field that breaks its rule.
func (l Load) Validate() error {
	switch {
	case l.Duration <= 0:
		return fmt.Errorf("duration %v: must be > 0", l.Duration)
	case l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0):
		return fmt.Errorf("rate %v: must be a finite number ≥ 0 (0 = closed loop)", l.Rate)
	case l.Rate == 0 && l.Concurrency < 1:
		return fmt.Errorf("concurrency %d: the closed loop needs ≥ 1 worker", l.Concurrency)
	case l.Rate > 0 && l.MaxInFlight < 1:
		return fmt.Errorf("max in flight %d: the open loop needs ≥ 1", l.MaxInFlight)
	case l.DrainTimeout < 0:
		return fmt.Errorf("drain timeout %v: must be ≥ 0", l.DrainTimeout)
	case l.OpTimeout < 0:
		return fmt.Errorf("op timeout %v: must be ≥ 0", l.OpTimeout)
	}
	return nil
}

// Mode returns "open" for an open loop (Rate > 0) and "closed" otherwise.
func (l Load) Mode() string {
	if l.Rate > 0 {
		return ModeOpen
	}
	return ModeClosed
}

// Load modes, as Phase.Mode reports them.
const (
	ModeClosed = "closed"
	ModeOpen   = "open"
)

// Live is a run's running tally, updated as operations complete, for a progress display.
// The zero value is ready; read it from any goroutine.
type Live struct {
	ok, failed, inFlight atomic.Int64
}

// OK returns the number of operations that have succeeded.
func (l *Live) OK() int64 { return l.ok.Load() }

// Failed returns the number of operations that have failed (including "not sent").
func (l *Live) Failed() int64 { return l.failed.Load() }

// InFlight returns the number of operations currently being performed.
func (l *Live) InFlight() int64 { return l.inFlight.Load() }

// RunLoad drives op with load, reading time only from clk, and returns the phase's
// measurements (Phase.Name is left for the caller). live, if not nil, is updated as
// operations complete.
//
// Closed loop: Concurrency workers each time one operation after another until
// Duration has passed since the start; latency is from the call to its return.
// Open loop: operation i is due at start + i/Rate; MaxInFlight workers take the due
// operations in order, each sleeping until its due time if it is early; latency is from
// the due time (not the send time) to the return, so a stalled server shows up in the
// tail instead of merely slowing the generator down (coordinated omission).
//
// Operations in flight when the schedule ends are allowed to finish. If ctx is done
// early, in-flight operations see it, the phase is marked Aborted and RunLoad returns it
// with ctx's error. Every worker goroutine has returned when RunLoad returns.
func RunLoad(ctx context.Context, op Op, load Load, clk Clock, live *Live) (*Phase, error) {
	if err := load.Validate(); err != nil {
		return nil, err
	}
	if live == nil {
		live = &Live{}
	}
	start := clk.Now()
	rec := newRecorder(start, live)
	r := &runner{ctx: ctx, op: op, load: load, clk: clk, rec: rec, start: start, end: start.Add(load.Duration)}
	r.labeler, _ = op.(Labeler)
	workers := load.Concurrency
	work := r.closedWorker
	if load.Rate > 0 {
		workers = load.MaxInFlight
		work = r.openWorker
		r.total = scheduleLen(load.Rate, load.Duration)
		r.drainDeadline = r.end.Add(load.DrainTimeout)
	}
	tracker, _ := clk.(WorkerTracker)
	if tracker != nil {
		// Register every worker before any starts, so a simulated clock cannot advance
		// while the later ones are still being started.
		for range workers {
			tracker.WorkerStarted()
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			if tracker != nil {
				defer tracker.WorkerStopped()
			}
			work()
		})
	}
	wg.Wait()
	stop := clk.Now()
	if load.Rate > 0 {
		r.recordUnsent(stop)
	}
	p := rec.phase(load, stop)
	if err := ctx.Err(); err != nil {
		p.Aborted = true
		return p, err
	}
	return p, nil
}

// runner is the state one RunLoad shares among its workers.
type runner struct {
	ctx     context.Context
	op      Op
	labeler Labeler // nil when op has a single kind of operation
	load    Load
	clk     Clock
	rec     *recorder
	start   time.Time
	end     time.Time
	// next is the next sequence number (closed loop) or schedule slot (open loop).
	next atomic.Uint64
	// total is the open loop's number of slots due before end.
	total         uint64
	drainDeadline time.Time
}

func (r *runner) closedWorker() {
	for r.ctx.Err() == nil {
		begin := r.clk.Now()
		if !begin.Before(r.end) {
			return
		}
		r.do(r.next.Add(1)-1, begin, begin)
	}
}

func (r *runner) openWorker() {
	for r.ctx.Err() == nil {
		if !r.clk.Now().Before(r.drainDeadline) {
			return
		}
		seq := r.next.Add(1) - 1
		if seq >= r.total {
			return
		}
		due := r.start.Add(slotOffset(seq, r.load.Rate))
		if err := r.clk.SleepUntil(r.ctx, due); err != nil {
			// Aborted while waiting: the slot was never sent. If it was already due, it
			// is still a measurement (from its due time to now).
			if now := r.clk.Now(); now.After(due) {
				r.rec.record(r.label(seq), due, now, now, errNotSent)
			}
			return
		}
		r.do(seq, due, r.clk.Now())
	}
}

// do performs operation seq, sent at sent and due at due, and records it.
func (r *runner) do(seq uint64, due, sent time.Time) {
	ctx := r.ctx
	if r.load.OpTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.load.OpTimeout)
		defer cancel()
	}
	r.rec.live.inFlight.Add(1)
	err := r.op.Do(ctx, seq)
	r.rec.live.inFlight.Add(-1)
	r.rec.record(r.label(seq), due, sent, r.clk.Now(), err)
}

// label returns operation seq's label, "" without a Labeler.
func (r *runner) label(seq uint64) string {
	if r.labeler == nil {
		return ""
	}
	return r.labeler.Label(seq)
}

// recordUnsent records every open-loop slot due before stop that no worker took, as
// "not sent" with the latency from its due time to stop.
func (r *runner) recordUnsent(stop time.Time) {
	for seq := min(r.next.Load(), r.total); seq < r.total; seq++ {
		due := r.start.Add(slotOffset(seq, r.load.Rate))
		if !due.Before(stop) {
			break
		}
		r.rec.record(r.label(seq), due, stop, stop, errNotSent)
	}
}

// errNotSent marks an open-loop operation that was due but never sent.
var errNotSent = errors.New("not sent: due but no worker free before the run ended")

// slotOffset is the due time of open-loop slot seq, relative to the start.
func slotOffset(seq uint64, rate float64) time.Duration {
	return time.Duration(math.Round(float64(seq) * float64(time.Second) / rate))
}

// scheduleLen is the number of open-loop slots due strictly before d.
func scheduleLen(rate float64, d time.Duration) uint64 {
	n := uint64(math.Ceil(d.Seconds() * rate))
	for n > 0 && slotOffset(n-1, rate) >= d {
		n--
	}
	for slotOffset(n, rate) < d {
		n++
	}
	return n
}
