package mcp

import (
	"fmt"
	"testing"
)

// TestCairnRewind: cairn_rewind previews a rewind to a snapshot, applies it with the
// token (a retry under the same request_id answers the first apply), and the file reads
// back byte for byte; a write between a preview and its apply is a Conflict naming the
// path; bad input names the field.
func TestCairnRewind(t *testing.T) {
	svc := newService(t, 0)
	ts := newHTTPServer(t, svc)
	cs := connectHTTP(t, ts.URL+"/v1/agents/a/mcp/cairn")
	wb := connectHTTP(t, ts.URL+"/v1/agents/a/mcp")

	ok(t, wb, "workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "r.txt", "text": "one\n"})
	ok(t, wb, "workbench_snapshot", map[string]any{"id": "w", "name": "s1"})
	ok(t, wb, "workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "r.txt", "text": "two\n", "replace": true})

	p := ok(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": "snapshot:s1", "dry_run": true, "file_diffs": true})
	ch := p.list(t, "changes")
	if len(ch) != 1 || ch[0].str("path") != "outputs/r.txt" || ch[0].str("change") != "changed" || p.str("token") == "" {
		t.Fatalf("preview: %v", p)
	}
	apply := map[string]any{"id": "w", "target": "snapshot:s1", "token": p.str("token"), "request_id": "rw-1"}
	first := ok(t, cs, "cairn_rewind", apply)
	again := ok(t, cs, "cairn_rewind", apply)
	if first["applied"] != true || again["replayed"] != true || again["generation"] != first["generation"] ||
		fmt.Sprint(again["changes"]) != fmt.Sprint(first["changes"]) || fmt.Sprint(again["counts"]) != fmt.Sprint(first["counts"]) {
		t.Fatalf("apply %v, retry %v", first, again)
	}
	r := ok(t, wb, "workbench_read", map[string]any{"id": "w", "section": "outputs", "path": "r.txt"})
	if items := r.list(t, "items"); len(items) != 1 || items[0].str("value") != "one" || fmt.Sprint(r["total_size_bytes"]) != "4" ||
		fmt.Sprint(r["generation"]) != fmt.Sprint(first["generation"]) {
		t.Fatalf("after the rewind: %v", r)
	}

	ok(t, wb, "workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "r.txt", "text": "three\n", "replace": true})
	p = ok(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": "snapshot:s1", "prefix": "outputs", "dry_run": true})
	ok(t, wb, "workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "late.txt", "text": "late\n"})
	fails(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": "snapshot:s1", "prefix": "outputs", "token": p.str("token")}, "Conflict")

	invalid(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": "yesterday", "dry_run": true}, "target")
	invalid(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": "snapshot:s1"}, "token")
}
