package mcp

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// TestQueriesGroupFilterAndProjectByArtifactProducer: the published transcript's queries
// on artifact.producer work over MCP. Every revision names its producer, so aggregate
// groups by it (one group per producer, data written before producers in the null group),
// search filters, projects and facets on it with the value workbench_stat's
// card.producer shows, and catalog lists it as a facetable, sortable string field with the
// string operators; its parts artifact.producer_principal and producer_surface group by
// who alone.
func TestQueriesGroupFilterAndProjectByArtifactProducer(t *testing.T) {
	svc := newService(t, 0)
	connect := servePrincipals(t, svc)
	agent, bob := connect("agent", ""), connect("bob", "")
	ok(t, agent, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "report.txt", "text": "one"})
	ok(t, bob, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "b.txt", "text": "two"})
	ok(t, agent, "workbench_append", args{"id": "w", "section": "logs", "path": "run.log", "text": "x"})
	// Data written without a principal or surface, as before producers were recorded.
	if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a1", Workbench: "w", Path: "outputs/old.txt", Body: bytes.NewReader([]byte("old"))}); err != nil {
		t.Fatal(err)
	}
	const agentPut = "agent via mcp/workbench_put_file"
	if c := ok(t, bob, "workbench_stat", args{"id": "w", "section": "outputs", "path": "report.txt"}).card(); c["producer"] != agentPut {
		t.Fatalf("card.producer %v, want %s", c["producer"], agentPut)
	}

	// aggregate: the transcript's group_by and count.
	agg := ok(t, bob, "workbench_aggregate", args{"id": "w", "section": "outputs", "group_by": []string{"artifact.producer"},
		"measures": []any{args{"name": "artifacts", "op": "count"}}})
	got := map[any]string{}
	for _, g := range agg.list(t, "groups") {
		key := obj(g["key"].(map[string]any))
		got[key["artifact.producer"]] = obj(g["values"].(map[string]any))["artifacts"].(interface{ String() string }).String()
	}
	if len(got) != 3 || got[agentPut] != "1" || got["bob via mcp/workbench_put_file"] != "1" || got[nil] != "1" {
		t.Fatalf("groups by artifact.producer: %v", agg["groups"])
	}

	// search: filter (eq and prefix), project and facet, as the transcript does.
	s := ok(t, bob, "workbench_search", args{"id": "w", "section": "outputs",
		"predicates": []any{args{"field": "artifact.producer", "op": "eq", "value": agentPut}},
		"fields":     []string{"artifact.producer"}, "facets": []string{"artifact.producer"}})
	ms := s.list(t, "matches")
	if len(ms) != 1 || ms[0].str("relative_path") != "report.txt" || obj(ms[0]["values"].(map[string]any))["artifact.producer"] != agentPut {
		t.Fatalf("search by producer: %v", s["matches"])
	}
	fs := s.list(t, "facets")
	if len(fs) != 1 || fs[0]["field"] != "artifact.producer" || len(fs[0]["values"].([]any)) != 1 ||
		obj(fs[0]["values"].([]any)[0].(map[string]any))["value"] != agentPut {
		t.Fatalf("facet on producer: %v", s["facets"])
	}
	p := ok(t, bob, "workbench_search", args{"id": "w", "predicates": []any{args{"field": "artifact.producer", "op": "prefix", "value": "agent "}}})
	if n := len(p.list(t, "matches")); n != 2 {
		t.Fatalf("prefix \"agent \": %d matches, want report.txt and run.log: %v", n, p["matches"])
	}
	old := ok(t, bob, "workbench_search", args{"id": "w", "predicates": []any{args{"field": "artifact.producer", "op": "not_exists"}}})
	if ms := old.list(t, "matches"); len(ms) != 1 || ms[0].str("relative_path") != "old.txt" {
		t.Fatalf("files without a producer: %v", old["matches"])
	}
	who := ok(t, bob, "workbench_aggregate", args{"id": "w", "group_by": []string{"artifact.producer_principal"},
		"measures": []any{args{"name": "n", "op": "count"}}, "predicates": []any{args{"field": "artifact.producer_surface", "op": "exists"}}})
	if gs := who.list(t, "groups"); len(gs) != 2 {
		t.Fatalf("groups by producer_principal: %v", who["groups"])
	}

	// catalog: facetable, sortable, filterable with the string operators.
	c := ok(t, bob, "workbench_catalog", args{"id": "w"})
	cat := obj(c["catalog"].(map[string]any))
	for _, k := range []string{"facetable", "sortable"} {
		if !slices.Contains(cat[k].([]any), any("artifact.producer")) {
			t.Errorf("catalog.%s lacks artifact.producer: %v", k, cat[k])
		}
	}
	filterable := false
	for _, g := range cat["filterable"].([]any) {
		g := g.(map[string]any)
		if slices.Contains(g["fields"].([]any), any("artifact.producer")) {
			ops := g["operators"].([]any)
			filterable = slices.Contains(ops, any("eq")) && slices.Contains(ops, any("prefix"))
		}
	}
	if !filterable {
		t.Errorf("catalog.filterable lacks artifact.producer with eq and prefix: %v", cat["filterable"])
	}
}
