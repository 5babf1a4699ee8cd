package rest_test

import (
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
)

// TestRESTQueriesUseArtifactProducer: the root-wide search and aggregate endpoints group,
// filter and project by artifact.producer, valued as the Cairn-Producer header and
// workbench_stat's card.producer show who wrote each file.
func TestRESTQueriesUseArtifactProducer(t *testing.T) {
	s := newAttribServer(t, workbench.Config{}, rest.Options{})
	expect(t, do(t, "PUT", s.URL+wb+"/files/outputs/a.txt", strings.NewReader("a"), asHeader, "alice"), 201, "")
	expect(t, do(t, "PUT", s.URL+wb+"/files/outputs/b.txt", strings.NewReader("b"), asHeader, "bob"), 201, "")
	expect(t, do(t, "PUT", s.URL+wb+"/files/outputs/c.txt", strings.NewReader("c"), asHeader, "bob"), 201, "")
	post := func(tool, body string) response {
		t.Helper()
		r := do(t, "POST", s.URL+"/v1/agents/a/"+tool, strings.NewReader(body), "Content-Type", "application/json", asHeader, "carol")
		expect(t, r, 200, "")
		return r
	}
	agg := post("aggregate", `{"id":"w","group_by":["artifact.producer"],"measures":[{"name":"artifacts","op":"count"}],"sort":[{"field":"artifact.producer"}]}`)
	gs := agg.json["groups"].([]any)
	if len(gs) != 2 {
		t.Fatalf("groups: %s", agg.body)
	}
	for i, want := range []struct {
		producer string
		n        float64
	}{{"alice via rest/put", 1}, {"bob via rest/put", 2}} {
		g := gs[i].(map[string]any)
		if g["key"].(map[string]any)["artifact.producer"] != want.producer || g["values"].(map[string]any)["artifacts"] != want.n {
			t.Fatalf("group %d: %v, want %s × %v", i, g, want.producer, want.n)
		}
	}
	srch := post("search", `{"id":"w","predicates":[{"field":"artifact.producer","op":"eq","value":"bob via rest/put"}],"fields":["artifact.producer"]}`)
	ms := srch.json["matches"].([]any)
	if len(ms) != 2 || ms[0].(map[string]any)["values"].(map[string]any)["artifact.producer"] != "bob via rest/put" {
		t.Fatalf("search by producer: %s", srch.body)
	}
}
