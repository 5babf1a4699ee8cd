package mcp

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestTheCairnProfileOffersLifecycleToolsBesideTheWorkbenchProfile: the cairn profile's
// endpoint lists exactly its own tools, lists and deletes workbenches of its root, and the
// workbench profile still offers none of them.
func TestTheCairnProfileOffersLifecycleToolsBesideTheWorkbenchProfile(t *testing.T) {
	svc := newService(t, 0)
	h := Handler(svc, Options{})
	mux := http.NewServeMux()
	mux.Handle("/v1/agents/{agent}/mcp", h)
	mux.Handle("/v1/agents/{agent}/mcp/{profile}", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	cs := connectHTTP(t, ts.URL+"/v1/agents/a/mcp/cairn")
	wb := connectHTTP(t, ts.URL+"/v1/agents/a/mcp")

	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"cairn_diff", "cairn_workbench_delete", "cairn_workbench_list"}) {
		t.Fatalf("cairn profile tools: %v", names)
	}
	fails(t, wb, "cairn_workbench_list", map[string]any{}, "UnknownTool")
	fails(t, cs, "workbench_create", map[string]any{"id": "w"}, "UnknownTool")

	for _, id := range []string{"w2", "w1", "w3"} {
		ok(t, wb, "workbench_create", map[string]any{"id": id})
	}
	page := ok(t, cs, "cairn_workbench_list", map[string]any{"limit": 2})
	items := page.list(t, "workbenches")
	if len(items) != 2 || items[0].str("workbench_id") != "w1" || page.str("next_cursor") == "" {
		t.Fatalf("first page: %v", page)
	}
	rest := ok(t, cs, "cairn_workbench_list", map[string]any{"limit": 2, "cursor": page.str("next_cursor")})
	if got := rest.list(t, "workbenches"); len(got) != 1 || got[0].str("workbench_id") != "w3" || rest["next_cursor"] != nil {
		t.Fatalf("second page: %v", rest)
	}
	invalid(t, cs, "cairn_workbench_list", map[string]any{"limit": 0}, "limit")
	invalid(t, cs, "cairn_workbench_delete", map[string]any{}, "id")
	fails(t, cs, "cairn_workbench_delete", map[string]any{"id": "w1", "if_revision": 1}, "Conflict")
	ok(t, cs, "cairn_workbench_delete", map[string]any{"id": "w1"})
	fails(t, cs, "cairn_workbench_delete", map[string]any{"id": "w1"}, "NotFound")
	fails(t, wb, "workbench_list", map[string]any{"id": "w1"}, "NotFound")
}
