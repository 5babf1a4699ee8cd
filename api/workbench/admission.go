package workbench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/cairnstore/cairn/meta"
)

// Query admission (issue 10: one aggregate with group_by on a 200k-file root held 330 MB,
// twelve at once 5.1 GB). Every metadata query (search, aggregate, catalog) and every grep
// holds its estimated memory, in bytes, of a node-wide budget (Config.QueryBudgetBytes)
// while it runs. The estimate is computed before the query from the files in its scope
// (meta.View.ScopeFiles, from directory counters: no file is visited): a query keeps at
// most one match, one group and one value per facet for each file in scope, so the
// estimate bounds what it can allocate. A query waits for its share at most
// Config.QueryQueueTimeout, then is answered ResourceExhausted (retryable; REST 429); a
// query whose estimate exceeds the whole budget is answered ResourceExhausted at once,
// not retryable, naming the bound.
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

// Defaults of the query budget (Config).
const (
	DefaultQueryBudgetBytes  = 512 << 20
	DefaultQueryQueueTimeout = 5 * time.Second
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
func (s *Service) admitQuery(ctx context.Context, view *meta.View, scope meta.Scope, cost func(files int64) int64) (release func(), err *Error) {
	files, merr := view.ScopeFiles(scope)
	if merr != nil {
		return nil, AsError(merr)
	}
	return s.admitBytes(ctx, cost(files), files)
}

// admitBytes takes n bytes of the query budget; files (-1: not a metadata query) is
// reported in the refusal.
func (s *Service) admitBytes(ctx context.Context, n, files int64) (release func(), err *Error) {
	budget := s.cfg.QueryBudgetBytes
	if n > budget {
		e := newError(CodeResourceExhausted, "the query would hold about %d bytes, more than the node's query budget of %d bytes; narrow it to one workbench or a path", n, budget)
		e.Details["estimated_bytes"] = n
		e.Details["budget_bytes"] = budget
		s.observeAdmission("too_large")
		if files >= 0 {
			e.Message = fmt.Sprintf("the query would hold about %d bytes for the %d files in its scope, more than the node's query budget of %d bytes; narrow it to one workbench or a path", n, files, budget)
			e.Details["files_in_scope"] = files
		}
		return nil, e
	}
	wait, cancel := context.WithTimeout(ctx, s.cfg.QueryQueueTimeout)
	defer cancel()
	if werr := s.queries.Acquire(wait, n); werr != nil {
		if ctx.Err() != nil {
			return nil, AsError(ctx.Err())
		}
		s.observeAdmission("queue_timeout")
		e := newError(CodeResourceExhausted, "the node's query budget of %d bytes stayed taken by other queries for %s (this one needs about %d bytes); retry later", budget, s.cfg.QueryQueueTimeout, n)
		e.Retryable = true
		e.Details["estimated_bytes"] = n
		e.Details["budget_bytes"] = budget
		e.Details["queue_timeout_ms"] = s.cfg.QueryQueueTimeout.Milliseconds()
		return nil, e
	}
	s.observeAdmission("admitted")
	s.query.inUse.Add(n)
	return func() { s.query.inUse.Add(-n); s.queries.Release(n) }, nil
}

func newQueryBudget(bytes int64) *semaphore.Weighted { return semaphore.NewWeighted(bytes) }

// queryState is the Service's admission bookkeeping, for metrics.
type queryState struct {
	inUse   atomic.Int64 // bytes of the budget held now
	metrics atomic.Pointer[queryMetrics]
}

type queryMetrics struct {
	admissions *prometheus.CounterVec
}

// InstrumentQueries registers the cairn_query_* metrics of the query budget on reg:
// cairn_query_admissions_total{result="admitted"|"queue_timeout"|"too_large"} and the
// gauges cairn_query_budget_bytes and cairn_query_budget_in_use_bytes. Call it once.
func (s *Service) InstrumentQueries(reg prometheus.Registerer) error {
	m := &queryMetrics{admissions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "cairn", Subsystem: "query",
		Name: "admissions_total", Help: "Queries (search, aggregate, catalog, grep) by admission result: admitted, queue_timeout (waited QueryQueueTimeout, answered ResourceExhausted), too_large (estimate above the whole budget)."},
		[]string{"result"})}
	budget := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "query", Name: "budget_bytes",
		Help: "The node's query budget (QueryBudgetBytes)."}, func() float64 { return float64(s.cfg.QueryBudgetBytes) })
	inUse := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "cairn", Subsystem: "query", Name: "budget_in_use_bytes",
		Help: "Bytes of the query budget held by running queries, by their estimates."}, func() float64 { return float64(s.query.inUse.Load()) })
	for _, c := range []prometheus.Collector{m.admissions, budget, inUse} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("workbench: query metrics: %w", err)
		}
	}
	s.query.metrics.Store(m)
	return nil
}

func (s *Service) observeAdmission(result string) {
	if m := s.query.metrics.Load(); m != nil {
		m.admissions.WithLabelValues(result).Inc()
	}
}
