package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// TestCairnRewind: cairn_rewind previews a rewind to a snapshot, applies it with the
// token (a retry under the same request_id answers the first apply), and the file reads
// back byte for byte; a write between a preview and its apply is a Conflict naming the
// path; bad input names the field.
func TestCairnRewind(t *testing.T) {
	svc := newService(t, 0)
	wb, cs := connectLanes(t, svc)

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

// cairn_rewind's schema states the bounds workbench and meta declare, so MCP refuses
// exactly what REST refuses: a target of a 256-byte snapshot name and a path of
// meta.MaxPathBytes pass (one byte more is refused), a 5,000-byte target is refused
// naming target, and prefix "" is the whole workbench, as on REST.
func TestCairnRewindBoundsAreTheServersBounds(t *testing.T) {
	var schema struct {
		Properties map[string]struct {
			MaxLength *int `json:"maxLength"`
			MinLength *int `json:"minLength"`
			MaxItems  *int `json:"maxItems"`
			Items     *struct {
				MaxLength *int `json:"maxLength"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(mustCairnSchema("cairn_rewind").raw, &schema); err != nil {
		t.Fatal(err)
	}
	p := schema.Properties
	for _, c := range []struct {
		name      string
		got       *int
		want      int
		wantUnset bool
	}{
		{"target.maxLength", p["target"].MaxLength, workbench.MaxRewindTargetBytes, false},
		{"paths.maxItems", p["paths"].MaxItems, meta.MaxChangeSetChanges, false},
		{"paths.items.maxLength", p["paths"].Items.MaxLength, meta.MaxPathBytes, false},
		{"prefix.maxLength", p["prefix"].MaxLength, meta.MaxPathBytes, false},
		{"prefix.minLength", p["prefix"].MinLength, 0, true},
		{"token.maxLength", p["token"].MaxLength, workbench.MaxRewindTokenBytes, false},
	} {
		switch {
		case c.wantUnset && c.got != nil:
			t.Errorf("the schema's %s = %d, want none", c.name, *c.got)
		case !c.wantUnset && (c.got == nil || *c.got != c.want):
			t.Errorf("the schema's %s = %v, want %d", c.name, c.got, c.want)
		}
	}

	svc := newService(t, 0)
	cs := connectHTTP(t, newHTTPServer(t, svc).URL+"/v1/agents/a/mcp/cairn")
	wb := connectInMemory(t, svc, "a")
	ok(t, wb, "workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "r.txt", "text": "one\n"})
	long := func(n int) string { return "outputs/" + strings.Repeat("x", n-len("outputs/")) }
	fails(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": "snapshot:" + strings.Repeat("n", meta.MaxSnapshotNameBytes), "dry_run": true}, "SnapshotNotFound")
	invalid(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": "snapshot:" + strings.Repeat("n", 5000), "dry_run": true}, "target")
	now := fmt.Sprintf("time:%d", time.Now().UnixMilli())
	ok(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": now, "paths": []string{long(meta.MaxPathBytes)}, "dry_run": true})
	fails(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": now, "paths": []string{long(meta.MaxPathBytes + 1)}, "dry_run": true}, "InvalidArguments")
	whole := ok(t, cs, "cairn_rewind", map[string]any{"id": "w", "target": now, "prefix": "", "dry_run": true})
	if fmt.Sprint(whole["scope"]) != "map[whole:true]" {
		t.Fatalf("prefix \"\": scope %v, want the whole workbench", whole["scope"])
	}
}
