package workbench

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// PrincipalLimits caps what one principal may do on this node (issue 14, deliverable 6).
// Every cap is off at its zero value, which is the default. A request without a principal
// (the node's own work) is never limited. Limits are per node: a cluster of n nodes lets
// a principal do up to n times as much.
type PrincipalLimits struct {
	// RequestsPerSecond is the sustained rate of requests one principal may make (a token
	// bucket refilled at this rate; golang.org/x/time/rate). 0: no limit.
	RequestsPerSecond float64
	// RequestBurst is the bucket's size: how many requests may come at once after a quiet
	// period. Default (0) ceil(RequestsPerSecond), at least 1.
	RequestBurst int
	// MaxConcurrentUploads is how many body writes (Write, Append: REST PUT and POST
	// ?append, MCP workbench_put_file and workbench_append) one principal may have in
	// flight at once; one more is refused at once, not queued. 0: no limit.
	MaxConcurrentUploads int
	// MaxConcurrentAdmissions is how many shares of the node's memory budget
	// (admission.go: queries, greps, diffs, listings, histories, large MCP messages) one
	// principal may hold at once; one more is refused at once with a retryable
	// ResourceExhausted (details.limit principal_concurrent_admissions), not queued, so one
	// key cannot fill the budget's queue for every tenant. 0: no limit.
	MaxConcurrentAdmissions int
}

// validate checks the limits; the error names the field.
func (l PrincipalLimits) validate() error {
	switch {
	case l.RequestsPerSecond < 0 || math.IsNaN(l.RequestsPerSecond) || math.IsInf(l.RequestsPerSecond, 0):
		return fmt.Errorf("workbench: Limits.RequestsPerSecond %v must be a finite number ≥ 0", l.RequestsPerSecond)
	case l.RequestBurst < 0:
		return fmt.Errorf("workbench: Limits.RequestBurst %d must be ≥ 0", l.RequestBurst)
	case l.MaxConcurrentUploads < 0:
		return fmt.Errorf("workbench: Limits.MaxConcurrentUploads %d must be ≥ 0", l.MaxConcurrentUploads)
	case l.MaxConcurrentAdmissions < 0:
		return fmt.Errorf("workbench: Limits.MaxConcurrentAdmissions %d must be ≥ 0", l.MaxConcurrentAdmissions)
	}
	return nil
}

// Limit names, as details.limit of the ResourceExhausted answers.
const (
	LimitRequestRate       = "principal_request_rate"
	LimitConcurrentUploads = "principal_concurrent_uploads"
	LimitConcurrentAdmits  = "principal_concurrent_admissions"
	// LimitIngestBudget: an upload waited Config.IngestQueueTimeout for its weight of the
	// node's ingest budget (ingest_budget.go).
	LimitIngestBudget = "ingest_budget"
)

// uploadRetryAfter is the wait a refused upload is told to take: an upload in flight
// usually ends within it.
const uploadRetryAfter = time.Second

// maxIdleLimiters bounds the rate limiters kept for principals: past it, the limiters of
// principals whose bucket has refilled (which behave exactly like new ones) are dropped.
const maxIdleLimiters = 4096

// principalLimits holds the per-principal state of PrincipalLimits: memory is bounded by
// the principals active at once.
type principalLimits struct {
	cfg   PrincipalLimits
	burst int
	now   func() time.Time

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
	uploads  map[string]int
	admits   map[string]int
}

func newPrincipalLimits(cfg PrincipalLimits, now func() time.Time) *principalLimits {
	burst := cfg.RequestBurst
	if burst == 0 {
		burst = max(1, int(math.Ceil(cfg.RequestsPerSecond)))
	}
	return &principalLimits{cfg: cfg, burst: burst, now: now, limiters: map[string]*rate.Limiter{}, uploads: map[string]int{}, admits: map[string]int{}}
}

// AllowRequest counts one request of ctx's principal against its request rate. Beyond
// it, the answer is a retryable ResourceExhausted naming the limit, with
// details.retry_after_ms (REST: 429 with Retry-After); a refused request takes no token.
// The surfaces call it once per request, before they do anything else.
func (s *Service) AllowRequest(ctx context.Context) error {
	l := s.base.limits
	id := PrincipalID(ctx)
	if l.cfg.RequestsPerSecond == 0 || id == "" {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	lim, ok := l.limiters[id]
	if !ok {
		if len(l.limiters) >= maxIdleLimiters {
			l.dropRefilled(now)
		}
		lim = rate.NewLimiter(rate.Limit(l.cfg.RequestsPerSecond), l.burst)
		l.limiters[id] = lim
	}
	l.mu.Unlock()
	r := lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	if wait == 0 {
		return nil
	}
	r.CancelAt(now)
	e := exhausted(LimitRequestRate, wait, "principal %q is over its request rate of %g per second (burst %d), the per-principal request rate limit; retry in %s",
		id, l.cfg.RequestsPerSecond, l.burst, wait.Round(time.Millisecond))
	e.Details["requests_per_second"] = l.cfg.RequestsPerSecond
	e.Details["burst"] = l.burst
	return e
}

// dropRefilled forgets the limiters whose bucket is full again. l.mu is held.
func (l *principalLimits) dropRefilled(now time.Time) {
	for id, lim := range l.limiters {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.limiters, id)
		}
	}
}

// admitPrincipal takes one of ctx's principal's shares of the memory budget; release gives
// it back. Past MaxConcurrentAdmissions the answer is a retryable ResourceExhausted
// naming the limit.
func (s *base) admitPrincipal(ctx context.Context) (release func(), err *Error) {
	l := s.limits
	return l.admit(ctx, l.admits, l.cfg.MaxConcurrentAdmissions, LimitConcurrentAdmits, "max_concurrent_admissions",
		"large requests (listings, diffs, queries) in flight, the per-principal limit")
}

// admitUpload takes one of ctx's principal's upload slots; release gives it back. Past
// MaxConcurrentUploads the answer is a retryable ResourceExhausted naming the limit.
func (s *base) admitUpload(ctx context.Context) (release func(), err *Error) {
	l := s.limits
	return l.admit(ctx, l.uploads, l.cfg.MaxConcurrentUploads, LimitConcurrentUploads, "max_concurrent_uploads",
		"uploads in flight, the per-principal limit of concurrent uploads")
}

// admit takes one of ctx's principal's slots in held, of which it may have most (take).
// Past most the answer is a retryable ResourceExhausted whose details name the limit
// (details.limit) and carry most under detail; inFlight says what the principal has in
// flight, and past which limit, in the message.
func (l *principalLimits) admit(ctx context.Context, held map[string]int, most int, limit, detail, inFlight string) (release func(), err *Error) {
	id := PrincipalID(ctx)
	release, n := l.take(held, id, most)
	if release == nil {
		e := exhausted(limit, uploadRetryAfter, "principal %q has %d %s; retry once one has finished", id, n, inFlight)
		e.Details[detail] = most
		return nil, e
	}
	return release, nil
}

// take counts one more in flight for principal id in held (l.admits or l.uploads) and
// returns the release that counts it out again (once, however often it is called). When
// id already has limit in flight it takes nothing and returns a nil release and that
// count. A limit of 0 or a request without a principal is never refused, nor counted.
func (l *principalLimits) take(held map[string]int, id string, limit int) (release func(), n int) {
	if limit == 0 || id == "" {
		return func() {}, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := held[id]; n >= limit {
		return nil, n
	}
	held[id]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if held[id]--; held[id] <= 0 {
				delete(held, id)
			}
		})
	}, 0
}

// exhausted is a retryable ResourceExhausted of a per-principal limit: details.limit
// names it, details.retry_after_ms says when to retry.
func exhausted(limit string, after time.Duration, format string, args ...any) *Error {
	e := newError(CodeResourceExhausted, format, args...)
	e.Retryable = true
	e.Details["limit"] = limit
	e.Details["retry_after_ms"] = max(1, int64(math.Ceil(float64(after)/float64(time.Millisecond))))
	return e
}
