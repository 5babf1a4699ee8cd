package mcp

import (
	"strings"
	"testing"
)

// TestCairnDiff: cairn_diff diffs a file between a snapshot and live state and pages the
// state diff, over the cairn profile's endpoint.
func TestCairnDiff(t *testing.T) {
	svc := newService(t, 0)
	wb, cs := connectLanes(t, svc)

	ok(t, wb, "workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "r.txt", "text": "one\r\ntwo\r\n"})
	ok(t, wb, "workbench_snapshot", map[string]any{"id": "w", "name": "s1"})
	ok(t, wb, "workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "r.txt", "text": "one\r\n2\r\n", "replace": true})
	ok(t, wb, "workbench_put_file", map[string]any{"id": "w", "section": "input", "path": "new", "text": "x"})

	r := ok(t, cs, "cairn_diff", map[string]any{"id": "w", "path": "outputs/r.txt", "from": "snapshot:s1"})
	want := "--- outputs/r.txt@snapshot:s1\n+++ outputs/r.txt@live\n@@ -1,2 +1,2 @@\n one\\r\n-two\\r\n+2\\r\n"
	if r.str("unified") != want || r["text"] != true {
		t.Fatalf("unified %q, want %q", r.str("unified"), want)
	}
	if hs := r.list(t, "hunks"); len(hs) != 1 || hs[0].list(t, "lines")[1].str("op") != "delete" {
		t.Fatalf("hunks: %v", r["hunks"])
	}

	page := ok(t, cs, "cairn_diff", map[string]any{"id": "w", "from": "snapshot:s1", "limit": 1})
	if ch := page.list(t, "changes"); len(ch) != 1 || ch[0].str("path") != "input/new" || ch[0].str("change") != "added" {
		t.Fatalf("first page: %v", page)
	}
	next := ok(t, cs, "cairn_diff", map[string]any{"id": "w", "from": "snapshot:s1", "limit": 1, "cursor": page.str("next_cursor")})
	if ch := next.list(t, "changes"); len(ch) != 1 || ch[0].str("path") != "outputs/r.txt" || ch[0].str("change") != "changed" {
		t.Fatalf("second page: %v", next)
	}

	invalid(t, cs, "cairn_diff", map[string]any{"id": "w", "path": "outputs/r.txt"}, "from")
	invalid(t, cs, "cairn_diff", map[string]any{"id": "w", "path": "outputs/r.txt", "from": "yesterday"}, "from")
	invalid(t, cs, "cairn_diff", map[string]any{"id": "w", "from": "generation:3"}, "from")
	e := fails(t, cs, "cairn_diff", map[string]any{"id": "w", "path": "outputs/r.txt", "from": "generation:1"}, "NotFound")
	if !strings.Contains(e.str("message"), "generation") {
		t.Fatalf("message %q does not name the generation", e.str("message"))
	}
	fails(t, wb, "cairn_diff", map[string]any{"id": "w", "from": "live"}, "UnknownTool")
}
