package rest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// TestSnapshotCommitRestoreAndSearchOverREST drives the tool endpoints and ?at_snapshot=
// reads, and writer-attached fields (Cairn-Field-*) through search.
func TestSnapshotCommitRestoreAndSearchOverREST(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a/workbenches/w/"
	expect(t, do(t, "PUT", base+"files/outputs/model.bin", strings.NewReader("weights v1"),
		"Cairn-Field-Accuracy", "0.93", "cairn-field-owner", `"alice"`, "Cairn-Field-Epochs", "12", "Cairn-Field-Final", "true", "Cairn-Field-Note", "plain text"), 201, "")
	expect(t, do(t, "PUT", base+"files/outputs/draft.bin", strings.NewReader("d"), "Cairn-Field-Accuracy", "0.41", "Cairn-Field-Owner", "bob"), 201, "")
	expect(t, do(t, "PUT", base+"files/logs/run.log", strings.NewReader("epoch 1 loss 0.5\nepoch 2 loss 0.3\n")), 201, "")

	for _, bad := range [][]string{{"Cairn-Field-Bad", "null"}, {"Cairn-Field-Bad", "[1]"}, {"Cairn-Field-Artifact.size_bytes", "1"}, {"Cairn-Field-9lives", "1"},
		{"Cairn-Field-Big", "123456789012345678901234567890"}, {"Cairn-Field-", "x"}} {
		expect(t, do(t, "PUT", base+"files/outputs/x", strings.NewReader("x"), bad...), 400, "InvalidArguments")
	}

	// search with typed predicates, sort and facets.
	r := do(t, "POST", srv.URL+"/v1/agents/a/search", strings.NewReader(
		`{"predicates":[{"field":"accuracy","op":"gt","value":0.5}],"fields":["owner","accuracy","epochs","final","note"],"facets":["owner"]}`))
	expect(t, r, 200, "")
	hits := r.json["matches"].([]any)
	if len(hits) != 1 || r.json["match_count"] != float64(1) {
		t.Fatalf("search: %s", r.body)
	}
	f := hits[0].(map[string]any)["values"].(map[string]any)
	if f["owner"] != "alice" || f["accuracy"] != 0.93 || f["epochs"] != float64(12) || f["final"] != true || f["note"] != "plain text" {
		t.Fatalf("fields: %v", f)
	}
	r = do(t, "POST", srv.URL+"/v1/agents/a/search", strings.NewReader(`{"id":"w","section":"outputs","sort":[{"field":"accuracy","direction":"desc"}],"limit":1}`))
	expect(t, r, 200, "")
	if r.json["next_cursor"] == nil || r.json["match_count"] != float64(2) {
		t.Fatalf("paged search: %s", r.body)
	}
	next := fmt.Sprintf(`{"id":"w","section":"outputs","sort":[{"field":"accuracy","direction":"desc"}],"limit":1,"cursor":%q}`, r.json["next_cursor"])
	r = do(t, "POST", srv.URL+"/v1/agents/a/search", strings.NewReader(next))
	expect(t, r, 200, "")
	if p := r.json["matches"].([]any)[0].(map[string]any)["relative_path"]; p != "draft.bin" {
		t.Fatalf("second page: %s", r.body)
	}
	expect(t, do(t, "POST", srv.URL+"/v1/agents/a/search", strings.NewReader(`{"predicates":[{"field":"x","op":"between"}]}`)), 400, "InvalidArguments")
	expect(t, do(t, "POST", srv.URL+"/v1/agents/a/search", strings.NewReader(`{"bogus":1}`)), 400, "InvalidArguments")
	r = do(t, "POST", srv.URL+"/v1/agents/a/aggregate", strings.NewReader(`{"measures":[{"name":"n","op":"count"},{"name":"best","op":"max","field":"accuracy"}],"group_by":["artifact.section"]}`))
	expect(t, r, 200, "")
	if r.json["group_count"] != float64(2) {
		t.Fatalf("aggregate: %s", r.body)
	}
	r = do(t, "POST", srv.URL+"/v1/agents/a/catalog", strings.NewReader(`{"field_prefix":"acc"}`))
	expect(t, r, 200, "")
	if fs := r.json["catalog"].(map[string]any)["fields"].([]any); len(fs) != 1 || fs[0].(map[string]any)["field"] != "accuracy" {
		t.Fatalf("catalog: %s", r.body)
	}
	r = do(t, "POST", base+"grep", strings.NewReader(`{"pattern":"LOSS 0.3","recursive":true}`))
	expect(t, r, 200, "")
	if m := r.json["matches"].([]any); len(m) != 1 || m[0].(map[string]any)["line_number"] != float64(2) {
		t.Fatalf("grep: %s", r.body)
	}

	// snapshot, change, read frozen over ?at_snapshot=, list snapshots.
	r = do(t, "POST", base+"snapshots", strings.NewReader(`{"name":"v1","ttl_days":2}`))
	expect(t, r, 201, "")
	expect(t, do(t, "PUT", base+"files/outputs/model.bin", strings.NewReader("weights v2")), 200, "")
	for _, q := range []string{"1", "v1"} {
		got := do(t, "GET", base+"files/outputs/model.bin?at_snapshot="+q, nil)
		expect(t, got, 200, "")
		if string(got.body) != "weights v1" {
			t.Fatalf("at_snapshot=%s: %q", q, got.body)
		}
		l := do(t, "GET", base+"list?path=outputs&at_snapshot="+q, nil)
		expect(t, l, 200, "")
		if fmt.Sprint(l.json["at_snapshot"]) != q {
			t.Fatalf("list at_snapshot=%s answers at_snapshot %v", q, l.json["at_snapshot"])
		}
	}
	expect(t, do(t, "GET", base+"files/outputs/model.bin?at_snapshot=7", nil), 404, "SnapshotNotFound")
	expect(t, do(t, "GET", base+"files/outputs/model.bin?bogus=1", nil), 400, "InvalidArguments")
	r = do(t, "GET", base+"snapshots", nil)
	expect(t, r, 200, "")
	if r.json["snapshot_count"] != float64(1) {
		t.Fatalf("snapshot list: %s", r.body)
	}
	expect(t, do(t, "POST", base+"snapshots/renew", strings.NewReader(`{"name":"v1","ttl_days":5}`)), 200, "")

	// commit, restore from the snapshot, restore status, retire.
	r = do(t, "POST", base+"commit", strings.NewReader(`{"manifest":{"run":1},"content_digest_uri":"sha256:`+strings.Repeat("1", 64)+`"}`))
	expect(t, r, 200, "")
	expect(t, do(t, "POST", base+"commit", strings.NewReader(`{"manifest":{"run":2},"content_digest_uri":"sha256:`+strings.Repeat("1", 64)+`"}`)), 409, "WorkbenchCommitConflict")
	r = do(t, "POST", base+"restore", strings.NewReader(`{"destination_id":"w2","at_snapshot":"v1"}`))
	expect(t, r, 200, "")
	op := r.json["operation_id"].(string)
	st := do(t, "GET", srv.URL+"/v1/agents/a/restores/"+op, nil)
	expect(t, st, 200, "")
	if st.json["state"] != "complete" {
		t.Fatalf("restore status: %s", st.body)
	}
	got := do(t, "GET", srv.URL+"/v1/agents/a/workbenches/w2/files/outputs/model.bin", nil)
	if string(got.body) != "weights v1" {
		t.Fatalf("restored body %q", got.body)
	}
	expect(t, do(t, "POST", base+"restore", strings.NewReader(`{"destination_id":"w2","at_snapshot":"v1"}`)), 200, "")
	expect(t, do(t, "POST", base+"snapshots/retire", strings.NewReader(`{"snapshot_id":1,"reason":"done"}`)), 200, "")
	expect(t, do(t, "GET", base+"files/outputs/model.bin?at_snapshot=1", nil), 410, "SnapshotExpired")
	expect(t, do(t, "GET", srv.URL+"/v1/agents/a/restores/"+strings.Repeat("0", 64), nil), 404, "NotFound")
	r = do(t, "POST", srv.URL+"/v1/agents/a/find", strings.NewReader(`{"committed":true}`))
	expect(t, r, 200, "")
	if r.json["match_count"] != float64(2) { // w and its restore w2 (a restore commits its destination)
		t.Fatalf("find: %s", r.body)
	}
	expect(t, do(t, "GET", base+"commit", nil), 405, "")
	// The workbench comes from the path, never from the body; names are never all digits.
	expect(t, do(t, "POST", base+"commit", strings.NewReader(`{"id":"other","manifest":{},"content_digest_uri":"sha256:`+strings.Repeat("1", 64)+`"}`)), 400, "InvalidArguments")
	expect(t, do(t, "POST", base+"snapshots", strings.NewReader(`{"name":"2024"}`)), 400, "InvalidArguments")
	r = do(t, "GET", base+"list?path=outputs&at_snapshot=v1", nil)
	expect(t, r, 410, "SnapshotExpired")
}

// TestAGrepPageThatFoundNothingYetSaysSoOverREST (issue 25, finding 16): the first page of
// a grep that spends its scan bound inside a large file, before the file's only match,
// answers no match but says the search is not finished (scan_complete false,
// scanned_bytes, next_cursor); following the cursor finds the match.
func TestAGrepPageThatFoundNothingYetSaysSoOverREST(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a/workbenches/w/"
	line := strings.Repeat("a", 1023) + "\n"
	body := strings.Repeat(line, (workbench.GrepMaxScanBytes+(1<<20))/len(line)) + "the needle\n"
	expect(t, do(t, "PUT", base+"files/logs/big.log", strings.NewReader(body)), 201, "")
	r := do(t, "POST", base+"grep", strings.NewReader(`{"pattern":"needle","recursive":true}`))
	expect(t, r, 200, "")
	if m := r.json["matches"].([]any); len(m) != 0 || r.json["truncated"] != true || r.json["scan_complete"] != false ||
		r.json["next_cursor"] == nil || r.json["scanned_bytes"] != float64(workbench.GrepMaxScanBytes) {
		t.Fatalf("the first page: matches %v truncated %v scan_complete %v scanned_bytes %v", m, r.json["truncated"],
			r.json["scan_complete"], r.json["scanned_bytes"])
	}
	found := 0
	for page := 2; r.json["next_cursor"] != nil; page++ {
		if page > 10 {
			t.Fatal("the search did not end in 10 pages")
		}
		next := fmt.Sprintf(`{"pattern":"needle","recursive":true,"cursor":%q}`, r.json["next_cursor"])
		r = do(t, "POST", base+"grep", strings.NewReader(next))
		expect(t, r, 200, "")
		found += len(r.json["matches"].([]any))
	}
	if found != 1 || r.json["scan_complete"] != true {
		t.Fatalf("%d matches; the last page: %s", found, r.body)
	}
}
