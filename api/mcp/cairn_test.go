package mcp

import (
	"slices"
	"testing"
)

// TestTheCairnProfileOffersLifecycleToolsBesideTheWorkbenchProfile: the cairn profile's
// endpoint lists exactly the 18 Workbench tools and its own, lists and deletes workbenches
// of its root, and the workbench profile still offers none of its own.
func TestTheCairnProfileOffersLifecycleToolsBesideTheWorkbenchProfile(t *testing.T) {
	svc := newService(t, 0)
	wb, cs := connectLanes(t, svc)

	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	want := []string{"cairn_decide", "cairn_diff", "cairn_discard", "cairn_fork", "cairn_history", "cairn_merge",
		"cairn_proposals", "cairn_propose", "cairn_read_at", "cairn_rewind", "cairn_workbench_delete", "cairn_workbench_list"}
	for _, d := range tools {
		want = append(want, d.name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) || len(want) != 18+12 {
		t.Fatalf("cairn profile tools: %v, want %v", names, want)
	}
	fails(t, wb, "cairn_workbench_list", map[string]any{}, "UnknownTool")
	fails(t, wb, "cairn_history", map[string]any{"id": "w", "section": "input", "path": "x"}, "UnknownTool")
	fails(t, cs, "cairn_nothing", map[string]any{}, "UnknownTool")

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
