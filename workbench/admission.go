package workbench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/cairnstore/cairn/meta"
)

// Memory admission (issue 10: one aggregate with group_by on a 200k-file root held 330
// MB, twelve at once 5.1 GB; issue 25: 80 parallel proposal listings of 1000 held 2.3 GB,
// twelve 16 MiB MCP writes 465 MB, twenty 15 MB diffs 435 MB). Every request whose answer
// or working set grows with its input holds its estimated memory, in bytes, of one
// node-wide budget (Config.QueryBudgetBytes) while it runs: the metadata queries (search,
// aggregate, catalog) and greps, file diffs, file listings, histories and state-diff pages
// (pages.go), proposal and judgment listings, and through AdmitMemory the surfaces' own
// large bodies and answers (MCP messages, api/mcp; OpenWOP proposal pages and file
// listings, api/openwop) and backups (api/server). The estimate is computed before the
// answer is built, from what the request will touch (a query's files in scope, from
// directory counters; a diff's two body sizes; a listing page's stored sizes; a state-diff
// page's limit and path bound; a backup's constant working set), so it bounds what the
// request can allocate. A request waits for its share at
// most Config.QueryQueueTimeout, then is answered ResourceExhausted (retryable, details
// budget_bytes, estimated_bytes, queue_timeout_ms, retry_after_ms; REST 429); one whose estimate exceeds
// the whole budget is answered ResourceExhausted at once, not retryable, naming the bound.
//
// A surface that encodes the answer after the Service returns it wraps the request in
// HoldAdmissions: the shares the Service takes for that request are then kept until the
// surface's release, after the answer is written, so the encoding is inside the budget too.
// Without it (in-process callers) a share is given back when the call returns.
//
// One principal may hold at most PrincipalLimits.MaxConcurrentAdmissions shares at once
// (limits.go): one read key alone cannot queue the whole node behind its requests.
//
// Per-file costs, in bytes, sized from the heap profiles behind the figures
// (FieldValue is 48 bytes; a map entry adds its key again and a pointer).
const (
	// queryBaseBytes is a query's fixed part: compiled predicates, the page, the answer.
	queryBaseBytes = 64 << 10
	// queryMatchBytes: a file in scope, scanned and kept as a match.
	queryMatchBytes = 64
	// facetValueBytes: one facet's counter of a distinct value (a file may bring one).
	facetValueBytes = 128
	// groupBytes: with group_by, one group (its key in the map and in the group, the
	// result row); a file may make its own group, up to meta.MaxAggregateGroups.
	groupBytes = 1024
	// groupMeasureBytes: one measure's accumulator and result value in one group.
	groupMeasureBytes = 320
	// catalogFieldBytes: catalog's per-file bookkeeping without facets.
	catalogFieldBytes = 16
	// catalogFacetBytes: with include_facets, the value counters of one file's fields (16
	// catalogs at once on 200k files held 2.6 GB: about 800 bytes per file each).
	catalogFacetBytes = 1024
	// grepQueryBytes: a grep call, bounded by its own limits (GrepMaxScanBytes is read
	// through one buffer; at most MaxGrepLimit snippets are kept).
	grepQueryBytes = 1 << 20
)

// searchCost, aggregateCost and catalogCost estimate a query's memory from the files in
// its scope.
func searchCost(files int64, facets int) int64 {
	return queryBaseBytes + files*(queryMatchBytes+int64(facets)*facetValueBytes)
}

func aggregateCost(files int64, groupBy, measures int) int64 {
	cost := queryBaseBytes + files*queryMatchBytes
	if groupBy > 0 { // at most one group per file, and at most meta.MaxAggregateGroups
		cost += min(files, meta.MaxAggregateGroups) * (groupBytes + int64(measures)*groupMeasureBytes)
	}
	return cost
}

func catalogCost(files int64, facets bool) int64 {
	per := int64(catalogFieldBytes)
	if facets {
		per += catalogFacetBytes
	}
	return queryBaseBytes + files*per
}

// admitQuery sizes a query over scope with cost (files in scope → bytes) and takes its
// share of the node's query budget, waiting at most Config.QueryQueueTimeout. The caller
// runs the query, then calls release.
func (s *base) admitQuery(ctx context.Context, view *meta.View, scope meta.Scope, cost func(files int64) int64) (release func(), err *Error) {
	files, merr := view.Queries().ScopeFiles(scope)
	if merr != nil {
		return nil, AsError(merr)
	}
	return s.admitBytes(ctx, cost(files), files)
}

// AdmitMemory takes n bytes of the node's memory budget for a request of ctx (what
// names it in the refusal, e.g. "the MCP message"), waiting at most
// Config.QueryQueueTimeout; the caller builds its answer, then calls release. The refusals
// are AdmitMemory's *Error: ResourceExhausted, retryable when the budget stayed taken or
// the principal holds MaxConcurrentAdmissions shares, not retryable when n exceeds the
// whole budget.
func (s *Service) AdmitMemory(ctx context.Context, n int64, what string) (release func(), err error) {
	release, werr := s.base.admit(ctx, n, what, -1)
	if werr != nil {
		return nil, werr
	}
	return release, nil
}

// admitBytes takes n bytes of the budget for a query; files (-1: not a metadata query) is
// reported in the refusal.
func (s *base) admitBytes(ctx context.Context, n, files int64) (release func(), err *Error) {
	return s.admit(ctx, n, "the query", files)
}

// admit is AdmitMemory and admitBytes: the principal's slot, then n bytes of the budget,
// kept by ctx's admissionHold when it has one.
func (s *base) admit(ctx context.Context, n int64, what string, files int64) (release func(), err *Error) {
	budget := s.cfg.QueryBudgetBytes
	if n > budget {
		e := newError(CodeResourceExhausted, "%s would hold about %d bytes, more than the node's memory budget of %d bytes; narrow it to one workbench or a path", what, n, budget)
		e.Details["estimated_bytes"] = n
		e.Details["budget_bytes"] = budget
		s.observeAdmission("too_large")
		if files >= 0 {
			e.Message = fmt.Sprintf("%s would hold about %d bytes for the %d files in its scope, more than the node's memory budget of %d bytes; narrow it to one workbench or a path", what, n, files, budget)
			e.Details["files_in_scope"] = files
		}
		return nil, e
	}
	h := heldBy(ctx)
	if h != nil && h.owner != s {
		h = nil
	}
	// A request counts once against its principal's cap, however many shares it takes
	// (a large MCP message whose tool then diffs).
	principal := func() {}
	if h == nil || !h.counted() {
		p, perr := s.admitPrincipal(ctx)
		if perr != nil {
			s.observeAdmission("principal_limit")
			return nil, perr
		}
		principal = p
	}
	if werr := acquire(ctx, s.queries, n, s.cfg.QueryQueueTimeout); werr != nil {
		principal()
		if ctx.Err() != nil {
			return nil, AsError(ctx.Err())
		}
		s.observeAdmission("queue_timeout")
		e := newError(CodeResourceExhausted, "the node's memory budget of %d bytes stayed taken by other requests for %s (%s needs about %d bytes); retry later", budget, s.cfg.QueryQueueTimeout, what, n)
		e.Retryable = true
		e.Details["estimated_bytes"] = n
		e.Details["budget_bytes"] = budget
		e.Details["queue_timeout_ms"] = s.cfg.QueryQueueTimeout.Milliseconds()
		e.Details["retry_after_ms"] = max(1, s.cfg.QueryQueueTimeout.Milliseconds()) // REST Retry-After, OpenWOP retryAfter
		return nil, e
	}
	s.observeAdmission("admitted")
	s.query.hold(n)
	var once sync.Once
	give := func() {
		once.Do(func() { s.query.inUse.Add(-n); s.queries.Release(n); principal() })
	}
	if h != nil && h.keep(give) {
		return func() {}, nil
	}
	return give, nil
}

// acquire takes n bytes of budget, waiting for them at most timeout (first come, first
// served). Bytes free at once need no timer to wait with.
func acquire(ctx context.Context, budget *semaphore.Weighted, n int64, timeout time.Duration) error {
	if ctx.Err() == nil && budget.TryAcquire(n) {
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return budget.Acquire(wait, n)
}

// HoldAdmissions marks ctx as one request of a surface that writes the answer after the
// Service returns it: the memory shares the Service takes for a call with the returned
// context are kept until release, which the surface calls once the answer is written (and
// which is idempotent). A ctx that already holds admissions of s is returned as is, with a
// release that does nothing.
func (s *Service) HoldAdmissions(ctx context.Context) (context.Context, func()) {
	if s == nil {
		return ctx, func() {}
	}
	if h := heldBy(ctx); h != nil && h.owner == s.base {
		return ctx, func() {}
	}
	h := &admissionHold{owner: s.base}
	return context.WithValue(ctx, admissionHoldKey{}, h), h.release
}

type admissionHoldKey struct{}

// admissionHold is one request's kept shares (HoldAdmissions).
type admissionHold struct {
	owner    *base
	mu       sync.Mutex
	gives    []func()
	kept     bool // a share was kept (the first holds the request's principal slot)
	released bool
}

func heldBy(ctx context.Context) *admissionHold {
	h, _ := ctx.Value(admissionHoldKey{}).(*admissionHold)
	return h
}

// keep adds a share to give back at release; false once the request was released (work
// that outlives its request gives its share back itself).
func (h *admissionHold) keep(give func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return false
	}
	h.gives = append(h.gives, give)
	h.kept = true
	return true
}

// counted reports whether the request already holds a share, and so a principal slot.
func (h *admissionHold) counted() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.kept
}

func (h *admissionHold) release() {
	h.mu.Lock()
	gives := h.gives
	h.gives, h.released = nil, true
	h.mu.Unlock()
	for _, g := range gives {
		g()
	}
}

func newQueryBudget(bytes int64) *semaphore.Weighted { return semaphore.NewWeighted(bytes) }

// queryState is the Service's admission bookkeeping, for metrics.
type queryState struct {
	inUse   atomic.Int64 // bytes of the budget held now
	peak    atomic.Int64 // the most bytes held at once since the Service started
	metrics atomic.Pointer[queryMetrics]
}

// hold accounts n more bytes held and raises the high-water mark.
func (q *queryState) hold(n int64) {
	now := q.inUse.Add(n)
	for {
		p := q.peak.Load()
		if now <= p || q.peak.CompareAndSwap(p, now) {
			return
		}
	}
}

// AdmissionHighWater is the most bytes of the memory budget held at once, by the
// admitted requests' estimates, since the Service started (at most
// Config.QueryBudgetBytes; cairn_query_budget_high_water_bytes).
func (s *Service) AdmissionHighWater() int64 { return s.base.query.peak.Load() }

type queryMetrics struct {
	admissions *prometheus.CounterVec
}

// instrument registers the cairn_query_* metrics of the memory budget on reg:
// cairn_query_admissions_total{result="admitted"|"queue_timeout"|"too_large"|"principal_limit"}
// and the gauges cairn_query_budget_bytes, cairn_query_budget_in_use_bytes and
// cairn_query_budget_high_water_bytes. Call it once.
func (q *queryState) instrument(reg prometheus.Registerer, budgetBytes int64) error {
	m := &queryMetrics{admissions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "query",
		Name: "admissions_total", Help: "Requests under the memory budget (queries, greps, diffs, file, history and proposal listings, large MCP messages, backups) by admission result: admitted, queue_timeout (waited QueryQueueTimeout, answered ResourceExhausted), too_large (estimate above the whole budget), principal_limit (the principal held MaxConcurrentAdmissions shares)."},
		[]string{"result"})}
	budget := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "query", Name: "budget_bytes",
		Help: "The node's query budget (QueryBudgetBytes)."}, func() float64 { return float64(budgetBytes) })
	inUse := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "query", Name: "budget_in_use_bytes",
		Help: "Bytes of the memory budget held by running requests, by their estimates."}, func() float64 { return float64(q.inUse.Load()) })
	peak := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "query", Name: "budget_high_water_bytes",
		Help: "The most bytes of the memory budget held at once since the node started."}, func() float64 { return float64(q.peak.Load()) })
	for _, c := range []prometheus.Collector{m.admissions, budget, inUse, peak} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("workbench: query metrics: %w", err)
		}
	}
	q.metrics.Store(m)
	return nil
}

func (s *base) observeAdmission(result string) {
	if m := s.query.metrics.Load(); m != nil {
		m.admissions.WithLabelValues(result).Inc()
	}
}
