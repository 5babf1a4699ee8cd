package mcp

import (
	"encoding/base64"
	"testing"
)

// TestCairnHistoryAndReadAtServeRetainedVersions: over the cairn profile, cairn_history
// lists a file's versions newest first (a delete as a tombstone) through its cursor, and
// cairn_read_at reads each listed body at its generation in both formats, with cursors
// that stay on that version; a delete's or unknown generation is NotFound naming
// generation.
func TestCairnHistoryAndReadAtServeRetainedVersions(t *testing.T) {
	svc := newService(t, 0)
	ts := newHTTPServer(t, svc)
	cs := connectHTTP(t, ts.URL+"/v1/agents/a/mcp/cairn")

	file := map[string]any{"id": "w", "section": "outputs", "path": "notes.txt"}
	with := func(kv ...any) map[string]any {
		m := overlay(file, nil)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	// Through the profile's own copy of the Workbench tools.
	ok(t, cs, "workbench_put_file", with("text", "a\nb\n"))
	ok(t, cs, "workbench_put_file", with("text", "c\nd\ne\n", "replace", true))
	ok(t, cs, "workbench_append", with("text", "f\n"))

	var gens []int64
	cursor := any(nil)
	for pages := 0; pages < 5; pages++ {
		page := ok(t, cs, "cairn_history", with("limit", 2, "cursor", cursor))
		for _, v := range page.list(t, "versions") {
			if v["tombstone"] != false || v["digest_uri"] == nil {
				t.Fatalf("version %v", v)
			}
			gens = append(gens, v.int(t, "generation"))
		}
		if page["next_cursor"] == nil {
			break
		}
		cursor = page.str("next_cursor")
	}
	if len(gens) != 3 {
		t.Fatalf("history generations %v, want 3", gens)
	}
	want := []string{"c\nd\ne\nf\n", "c\nd\ne\n", "a\nb\n"}
	for i, g := range gens {
		r := ok(t, cs, "cairn_read_at", with("generation", g, "format", "bytes"))
		b, err := base64.StdEncoding.DecodeString(r.str("bytes"))
		if err != nil || string(b) != want[i] || r.int(t, "generation") != g {
			t.Fatalf("generation %d reads %q (%v), generation %v, want %q", g, b, err, r["generation"], want[i])
		}
	}
	// Structured pages continue on the old version even after the file changes again.
	first := ok(t, cs, "cairn_read_at", with("generation", gens[1], "limit", 2))
	ok(t, cs, "workbench_put_file", with("text", "new\n", "replace", true))
	rest := ok(t, cs, "cairn_read_at", with("generation", gens[1], "limit", 2, "cursor", first.str("next_cursor")))
	items := rest.list(t, "items")
	if len(items) != 1 || items[0]["value"] != "e" {
		t.Fatalf("second page at generation %d: %v", gens[1], rest)
	}
	// A cursor of cairn_read_at is not a workbench_read cursor.
	invalid(t, cs, "workbench_read", with("limit", 2, "cursor", first.str("next_cursor")), "cursor")

	ok(t, cs, "workbench_put_file", with("path", "gone.txt", "text", "x"))
	hist := ok(t, cs, "cairn_history", with("path", "gone.txt"))
	gone := hist.list(t, "versions")[0].int(t, "generation")
	if _, err := svc.Writes.Delete(t.Context(), "a", "w", "outputs/gone.txt", 0, ""); err != nil {
		t.Fatal(err)
	}
	hist = ok(t, cs, "cairn_history", with("path", "gone.txt"))
	rows := hist.list(t, "versions")
	if len(rows) != 2 || rows[0]["tombstone"] != true || rows[0]["digest_uri"] != nil || rows[1].int(t, "generation") != gone {
		t.Fatalf("history after a delete: %v", hist)
	}
	for _, g := range []int64{rows[0].int(t, "generation"), 99999} {
		r := fails(t, cs, "cairn_read_at", with("path", "gone.txt", "generation", g), "NotFound")
		if r.details()["field"] != "generation" {
			t.Fatalf("read at %d: %v", g, r)
		}
	}
	invalid(t, cs, "cairn_read_at", with("generation", 0), "generation")
	invalid(t, cs, "cairn_history", with("limit", 0), "limit")
	fails(t, cs, "cairn_history", with("path", "never.txt"), "NotFound")
}
