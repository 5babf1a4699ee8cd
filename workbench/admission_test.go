package workbench_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// admissionService is a node with a small query budget over a root of 40 files in two
// workbenches.
func admissionService(t *testing.T, budget int64, queue time.Duration) *workbench.Service {
	t.Helper()
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: budget, QueryQueueTimeout: queue}).Service
	for i := range 40 {
		grepPutIn(t, svc, fmt.Sprintf("w%d", i%2), fmt.Sprintf("outputs/f%02d.txt", i), "x")
	}
	return svc
}

func grepPutIn(t *testing.T, svc *workbench.Service, wb, path, body string) {
	t.Helper()
	if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: wb, Path: path,
		Body: strings.NewReader(body), CreateWorkbench: true}); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

func groupedAggregate() workbench.AggregateInput {
	field := "artifact.size_bytes"
	return workbench.AggregateInput{Measures: []workbench.MeasureInput{{Name: "n", Op: "count"}, {Name: "s", Op: "sum", Field: &field}},
		GroupBy: []string{"artifact.name"}}
}

// TestQueriesWaitForTheBudgetThenAreRefused: while the node's query budget is taken, a
// root-wide aggregate waits QueryQueueTimeout and is answered ResourceExhausted, retryable,
// with the budget in details; once the budget is free again the same call runs, and one
// that waits while it frees runs too.
func TestQueriesWaitForTheBudgetThenAreRefused(t *testing.T) {
	const budget = 1 << 20
	svc := admissionService(t, budget, 50*time.Millisecond)
	reg := prometheus.NewRegistry()
	if err := svc.Instrument(reg); err != nil {
		t.Fatal(err)
	}
	release := svc.HoldQueryBudget(budget)
	for _, tc := range []struct {
		tool string
		call func() error
	}{
		{"aggregate", func() error { _, err := svc.Tools.Aggregate(t.Context(), "a", groupedAggregate()); return err }},
		{"search", func() error { _, err := svc.Tools.Search(t.Context(), "a", workbench.SearchInput{}); return err }},
		{"catalog", func() error { _, err := svc.Tools.Catalog(t.Context(), "a", workbench.CatalogInput{}); return err }},
		{"grep", func() error {
			_, err := svc.Tools.Grep(t.Context(), "a", workbench.GrepInput{ID: "w0", Pattern: "x", Recursive: true})
			return err
		}},
	} {
		e := workbench.AsError(tc.call())
		if e == nil || e.Code != workbench.CodeResourceExhausted || !e.Retryable {
			t.Fatalf("%s while the budget is taken: %v, want a retryable ResourceExhausted", tc.tool, e)
		}
		if e.Details["budget_bytes"] != int64(budget) || e.Details["queue_timeout_ms"] != int64(50) {
			t.Errorf("%s: details %v", tc.tool, e.Details)
		}
	}
	done := make(chan error, 1)
	wait := admissionService(t, budget, time.Minute)
	releaseWait := wait.HoldQueryBudget(budget)
	go func() { _, err := wait.Tools.Aggregate(t.Context(), "a", groupedAggregate()); done <- err }()
	releaseWait()
	if err := <-done; err != nil {
		t.Errorf("an aggregate queued while the budget frees: %v", err)
	}
	release()
	r, err := svc.Tools.Aggregate(t.Context(), "a", groupedAggregate())
	if err != nil || r["group_count"] != int64(40) {
		t.Fatalf("with the budget free: %v %v", r, err)
	}
	if got := admissions(t, reg); got["admitted"] != 1 || got["queue_timeout"] != 4 {
		t.Errorf("cairn_query_admissions_total = %v, want 1 admitted (the last aggregate) and 4 queue_timeout", got)
	}
}

// admissions reads cairn_query_admissions_total by result.
func admissions(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "cairn_query_admissions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}

// TestAQueryLargerThanTheBudgetIsRefusedAtOnce: a query whose estimate (from the files in
// its scope) exceeds the whole budget is answered ResourceExhausted, not retryable, naming
// the bound, without waiting; narrowed to one workbench it fits.
func TestAQueryLargerThanTheBudgetIsRefusedAtOnce(t *testing.T) {
	// 40 files × (64 + 1024 + 2×320) + 64 KiB ≈ 134 KiB for the root, 99 KiB for one workbench.
	const budget = 120 << 10
	svc := admissionService(t, budget, time.Hour)
	_, err := svc.Tools.Aggregate(t.Context(), "a", groupedAggregate())
	e := workbench.AsError(err)
	if e == nil || e.Code != workbench.CodeResourceExhausted || e.Retryable {
		t.Fatalf("a root-wide aggregate over the budget: %v, want ResourceExhausted, not retryable", e)
	}
	if e.Details["budget_bytes"] != int64(budget) || e.Details["files_in_scope"] != int64(40) || e.Details["estimated_bytes"].(int64) <= budget {
		t.Errorf("details %v", e.Details)
	}
	in := groupedAggregate()
	id := "w0"
	in.ID = &id
	if r, err := svc.Tools.Aggregate(t.Context(), "a", in); err != nil || r["group_count"] != int64(20) {
		t.Fatalf("narrowed to one workbench: %v %v", r, err)
	}
	if _, err := svc.Tools.Search(t.Context(), "a", workbench.SearchInput{}); err != nil {
		t.Fatalf("a root-wide search without facets fits: %v", err)
	}
}

// TestAHeldRequestKeepsItsSharesUntilReleased: the shares a request takes under
// HoldAdmissions are given back by its release, not when each call returns (a surface
// writes the answer after), and the request counts once against its principal's
// MaxConcurrentAdmissions however many shares it takes; a request released gives back a
// later share itself.
func TestAHeldRequestKeepsItsSharesUntilReleased(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{QueryBudgetBytes: 4 << 20, QueryQueueTimeout: 50 * time.Millisecond,
		Limits: workbench.PrincipalLimits{MaxConcurrentAdmissions: 1}}).Service
	alice := auth.WithPrincipal(t.Context(), auth.Principal{ID: "alice", AllAgents: true, Scopes: auth.Scopes})
	req, release := svc.HoldAdmissions(alice)
	for i := range 2 {
		give, err := svc.AdmitMemory(req, 2<<20, "a share")
		if err != nil {
			t.Fatalf("share %d of one request: %v", i, err)
		}
		give() // kept by the request all the same
	}
	var e *workbench.Error
	if _, err := svc.AdmitMemory(t.Context(), 1, "another"); !errors.As(err, &e) || e.Code != workbench.CodeResourceExhausted || !e.Retryable {
		t.Fatalf("with the budget kept by a request: %v", err)
	}
	if _, err := svc.AdmitMemory(alice, 1, "alice's other request"); !errors.As(err, &e) || e.Details["limit"] != workbench.LimitConcurrentAdmits ||
		e.Details["max_concurrent_admissions"] != 1 || !e.Retryable ||
		e.Message != `principal "alice" has 1 large requests (listings, diffs, queries) in flight, the per-principal limit; retry once one has finished` {
		t.Fatalf("alice's second request: %v (details %v)", err, e.Details)
	}
	release()
	give, err := svc.AdmitMemory(alice, 4<<20, "alice's next request")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	give()
	late, err := svc.AdmitMemory(req, 4<<20, "work outliving its request")
	if err != nil {
		t.Fatal(err)
	}
	late()
	if _, err := svc.AdmitMemory(alice, 4<<20, "after the late share"); err != nil {
		t.Fatalf("a share taken after its request's release was not given back: %v", err)
	}
}
