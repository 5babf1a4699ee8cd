package worker

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
)

// Scrub (issue 17, `cairn admin scrub`): read every referenced blob of the shards this
// node leads back from the object store, verify it against its digest, and report the
// missing and corrupt ones. A referenced blob is one with a reference record of positive
// count (meta.BlobRef): inline segments live in the metadata and are checked by Raft's own
// CRCs. The read goes through the same verifying reader as the read path (blob.Store.Get),
// so "corrupt" means exactly what a client read would fail on.
//
// A scrub call visits the led shards in id order, their roots in agent order and each
// root's blobs in digest order, and stops at its budget (ScrubOptions.MaxDuration,
// MaxBlobs) with a Position the next call resumes strictly after, so a scrub of a large
// store runs as a sequence of bounded calls that a restart of the caller does not
// repeat. The order is that of the live state, so blobs published after the scrub passed
// their place are checked by the next full scrub, not this one.

// Scrub defaults.
const (
	// DefaultScrubMaxDuration bounds one Scrub call when ScrubOptions.MaxDuration is 0.
	DefaultScrubMaxDuration = 20 * time.Second
	// scrubBurstBytes bounds the rate limiter's bucket: the most bytes read at once.
	scrubBurstBytes = 256 << 10
	// maxScrubDamage bounds the damaged blobs one report lists (counts go on).
	maxScrubDamage = 1000
)

// ScrubPosition is where a scrub stopped: the last blob it checked. The zero value is the
// start.
type ScrubPosition struct {
	Shard  int
	Agent  string
	Digest meta.Digest
}

// IsZero reports whether p is the start.
func (p ScrubPosition) IsZero() bool { return p == ScrubPosition{} }

// String encodes p as "shard/agent/hex digest" ("" for the start); ParseScrubPosition
// reads it back.
func (p ScrubPosition) String() string {
	if p.IsZero() {
		return ""
	}
	return strconv.Itoa(p.Shard) + "/" + p.Agent + "/" + hex.EncodeToString(p.Digest[:])
}

// ParseScrubPosition decodes ScrubPosition.String's form; "" is the start. A malformed
// position is a *meta.Error (InvalidArguments) naming field "after".
func ParseScrubPosition(s string) (ScrubPosition, error) {
	if s == "" {
		return ScrubPosition{}, nil
	}
	bad := &meta.Error{Code: meta.CodeInvalidArguments, Field: "after", Message: "must be a position a scrub returned (shard/agent/digest)"}
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return ScrubPosition{}, bad
	}
	id, err := strconv.Atoi(parts[0])
	if err != nil || id < 0 {
		return ScrubPosition{}, bad
	}
	var d meta.Digest
	if b, err := hex.DecodeString(parts[2]); err != nil || len(b) != len(d) {
		return ScrubPosition{}, bad
	} else {
		copy(d[:], b)
	}
	if meta.ValidateName("agent", parts[1]) != nil {
		return ScrubPosition{}, bad
	}
	return ScrubPosition{Shard: id, Agent: parts[1], Digest: d}, nil
}

// ScrubOptions tune one Scrub call.
type ScrubOptions struct {
	// Agent limits the scrub to one agent root ("" = every root of every led shard).
	Agent string
	// After resumes strictly after this position (the zero value starts at the top).
	After ScrubPosition
	// BytesPerSecond bounds the stored bytes read per second (≤ 0: unbounded).
	BytesPerSecond int64
	// MaxDuration bounds the call: it stops at the first blob boundary past it and
	// reports the position. ≤ 0: DefaultScrubMaxDuration.
	MaxDuration time.Duration
	// MaxBlobs bounds the blobs checked by the call (≤ 0: no bound).
	MaxBlobs int
}

// ScrubDamage is one referenced blob that is missing or does not match its digest.
type ScrubDamage struct {
	Shard  int
	Agent  string
	Digest meta.Digest
	// Kind is "missing" (the object store does not have it) or "corrupt" (its bytes do
	// not verify: digest, size or encoding).
	Kind string
	// References is the blob's reference count: how many kept file versions use it.
	References int64
	// Detail is the verifying reader's error.
	Detail string
}

// ScrubReport says what one Scrub call checked.
type ScrubReport struct {
	// Blobs and Bytes count the blobs checked and their uncompressed bytes read.
	Blobs int
	Bytes int64
	// Missing and Corrupt count the damaged blobs; Damage lists them (at most
	// maxScrubDamage).
	Missing, Corrupt int
	Damage           []ScrubDamage
	// Done: every led shard (or the agent's root) was scrubbed to the end. Otherwise Next
	// is where to resume.
	Done bool
	Next ScrubPosition
}

// Scrub checks referenced blobs of the shards this node leads (see the comment at the top
// of scrub.go). Damage is reported, not an error. Errors: a *meta.Error
// (InvalidArguments) for opts, naming the field; one matching outcome.ErrUnavailable when
// this node leads no shard or a shard stopped serving; one wrapping blob.ErrUnavailable
// when the object store failed (the report covers what was checked before, Next included,
// so the caller can resume).
func (s *Set) Scrub(ctx context.Context, opts ScrubOptions) (ScrubReport, error) {
	var rep ScrubReport
	if opts.Agent != "" {
		if err := meta.ValidateName("agent", opts.Agent); err != nil {
			return rep, err
		}
	}
	if opts.MaxDuration <= 0 {
		opts.MaxDuration = DefaultScrubMaxDuration
	}
	led := s.ledCores()
	if len(led) == 0 {
		return rep, errNoLeader
	}
	s.scrubbing.Lock() // one scrub at a time: the rate bound is the node's
	defer s.scrubbing.Unlock()
	sc := &scrub{set: s, opts: opts, rep: &rep, deadline: time.Now().Add(opts.MaxDuration)}
	if opts.BytesPerSecond > 0 {
		// The bucket holds at most a second's worth: a limit is a limit from the start.
		sc.limit = rate.NewLimiter(rate.Limit(opts.BytesPerSecond), int(min(opts.BytesPerSecond, scrubBurstBytes)))
	}
	s.scrubMetrics.begin(opts.After.IsZero())
	err := sc.run(ctx, led)
	s.scrubMetrics.observe(rep, err)
	return rep, err
}

// scrub is one Scrub call in progress.
type scrub struct {
	set      *Set
	opts     ScrubOptions
	rep      *ScrubReport
	limit    *rate.Limiter
	deadline time.Time
	checked  int
}

// errScrubBudget stops a scrub at its budget; it is not a failure.
var errScrubBudget = errors.New("scrub budget spent")

func (sc *scrub) run(ctx context.Context, led []ledCore) error {
	after := sc.opts.After
	for _, l := range led {
		if l.shard < after.Shard {
			continue
		}
		view, err := l.core.ReadView(ctx)
		if err != nil {
			return err
		}
		var roots []*meta.Root
		view.Shard().Roots(func(r *meta.Root) bool {
			if (sc.opts.Agent == "" || r.Agent == sc.opts.Agent) && (l.shard > after.Shard || r.Agent >= after.Agent) {
				roots = append(roots, r)
			}
			return true
		})
		for _, root := range roots {
			var from *meta.Digest
			if l.shard == after.Shard && root.Agent == after.Agent {
				from = &after.Digest
			}
			if err := sc.root(ctx, l.shard, view, root, from); err != nil {
				if errors.Is(err, errScrubBudget) {
					return nil
				}
				return err
			}
		}
	}
	sc.rep.Done = true
	sc.rep.Next = ScrubPosition{}
	return nil
}

// root checks the referenced blobs of root strictly after digest from (nil: all).
func (sc *scrub) root(ctx context.Context, shard int, view *meta.View, root *meta.Root, from *meta.Digest) error {
	var refs []meta.BlobRef
	view.Shard().Blobs(root.UID, func(b meta.BlobRef) bool {
		if b.Count > 0 && (from == nil || string(b.Digest[:]) > string(from[:])) {
			refs = append(refs, b)
		}
		return true
	})
	for _, b := range refs {
		if sc.spent() {
			return errScrubBudget
		}
		if err := sc.check(ctx, shard, root, b); err != nil {
			return err
		}
		sc.rep.Next = ScrubPosition{Shard: shard, Agent: root.Agent, Digest: b.Digest}
	}
	return nil
}

func (sc *scrub) spent() bool {
	return sc.checked > 0 && (time.Now().After(sc.deadline) || sc.opts.MaxBlobs > 0 && sc.checked >= sc.opts.MaxBlobs)
}

// check reads one blob to its end through the verifying reader.
func (sc *scrub) check(ctx context.Context, shard int, root *meta.Root, b meta.BlobRef) error {
	sc.checked++
	sc.rep.Blobs++
	key := blob.Key{Root: root.UID, Digest: blob.Digest(b.Digest)}
	damage := func(kind string, err error) {
		if kind == "missing" {
			sc.rep.Missing++
		} else {
			sc.rep.Corrupt++
		}
		if len(sc.rep.Damage) < maxScrubDamage {
			sc.rep.Damage = append(sc.rep.Damage, ScrubDamage{Shard: shard, Agent: root.Agent, Digest: b.Digest,
				Kind: kind, References: b.Count, Detail: err.Error()})
		}
	}
	rc, err := sc.set.cfg.Blobs.Get(ctx, key, 0, -1)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		damage("missing", err)
		return nil
	case errors.Is(err, blob.ErrCorrupt):
		damage("corrupt", err)
		return nil
	case err != nil:
		return err
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, &limitedReader{ctx: ctx, r: rc, limit: sc.limit})
	sc.rep.Bytes += n
	switch {
	case err == nil:
		return nil
	case errors.Is(err, blob.ErrCorrupt):
		damage("corrupt", err)
		return nil
	case errors.Is(err, blob.ErrNotFound): // deleted between open and read
		damage("missing", err)
		return nil
	}
	return fmt.Errorf("scrub %s of agent %q: %w", hex.EncodeToString(b.Digest[:]), root.Agent, err)
}

// limitedReader waits on limit (nil: none) for every read's bytes.
type limitedReader struct {
	ctx   context.Context
	r     io.Reader
	limit *rate.Limiter
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.limit != nil && len(p) > l.limit.Burst() {
		p = p[:l.limit.Burst()]
	}
	n, err := l.r.Read(p)
	if n > 0 && l.limit != nil {
		if werr := l.limit.WaitN(l.ctx, n); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

// scrubMetrics are the cairn_scrub_* metrics.
type scrubMetrics struct {
	runs    *prometheus.CounterVec
	blobs   *prometheus.CounterVec
	bytes   prometheus.Counter
	damaged *prometheus.GaugeVec
}

func newScrubMetrics(reg prometheus.Registerer) (*scrubMetrics, error) {
	m := &scrubMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "scrub", Name: "runs_total",
			Help: "Scrub calls by result: done (reached the end), partial (stopped at its budget; resume after its position), error."}, []string{"result"}),
		blobs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "scrub", Name: "blobs_total",
			Help: "Referenced blobs the scrub checked, by result: ok, missing, corrupt."}, []string{"result"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "scrub", Name: "bytes_total",
			Help: "Uncompressed bytes the scrub read and verified."}),
		damaged: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "scrub", Name: "damaged_blobs",
			Help: "Damaged blobs (kind: missing, corrupt) found since the last scrub pass began at the top: non-zero means data loss to repair."}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.runs, m.blobs, m.bytes, m.damaged} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("worker: metrics: %w", err)
		}
	}
	m.damaged.WithLabelValues("missing")
	m.damaged.WithLabelValues("corrupt")
	return m, nil
}

// begin resets the damage gauges when a scrub pass starts at the top. A nil m does
// nothing.
func (m *scrubMetrics) begin(fromTop bool) {
	if m != nil && fromTop {
		m.damaged.WithLabelValues("missing").Set(0)
		m.damaged.WithLabelValues("corrupt").Set(0)
	}
}

// observe counts one Scrub call. A nil m counts nothing.
func (m *scrubMetrics) observe(rep ScrubReport, err error) {
	if m == nil {
		return
	}
	result := "partial"
	switch {
	case err != nil:
		result = "error"
	case rep.Done:
		result = "done"
	}
	m.runs.WithLabelValues(result).Inc()
	m.blobs.WithLabelValues("ok").Add(float64(rep.Blobs - rep.Missing - rep.Corrupt))
	m.blobs.WithLabelValues("missing").Add(float64(rep.Missing))
	m.blobs.WithLabelValues("corrupt").Add(float64(rep.Corrupt))
	m.bytes.Add(float64(rep.Bytes))
	m.damaged.WithLabelValues("missing").Add(float64(rep.Missing))
	m.damaged.WithLabelValues("corrupt").Add(float64(rep.Corrupt))
}
