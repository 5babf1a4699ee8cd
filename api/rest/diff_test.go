package rest_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestDiffRoute drives GET …/diff for a file and for two states, validating requests and
// responses against the OpenAPI document.
func TestDiffRoute(t *testing.T) {
	c := newChecker(t)
	wb := "/v1/agents/a/workbenches/w"
	put := func(path, body string) response {
		t.Helper()
		r := c.call(true, "PUT", wb+"/files/"+path, body)
		if r.status != 200 && r.status != 201 {
			t.Fatalf("PUT %s: %d %s", path, r.status, r.body)
		}
		return r
	}
	first := put("outputs/r.txt", "a\nb\nc\n")
	put("input/keep", "same")
	put("input/gone", "bye")
	expect(t, c.call(true, "POST", wb+"/snapshots", `{"name":"s1"}`, "Content-Type", "application/json"), 201, "")
	put("outputs/r.txt", "a\nB\nc\n")
	put("input/new", "hi")
	expect(t, c.call(true, "DELETE", wb+"/files/input/gone", ""), 200, "")

	diff := func(valid bool, q url.Values) response {
		t.Helper()
		return c.call(valid, "GET", wb+"/diff?"+q.Encode(), "")
	}
	r := diff(true, url.Values{"path": {"outputs/r.txt"}, "from": {"snapshot:s1"}, "context": {"0"}})
	expect(t, r, 200, "")
	if want := "--- outputs/r.txt@snapshot:s1\n+++ outputs/r.txt@live\n@@ -2 +2 @@\n-b\n+B\n"; r.json["unified"] != want {
		t.Fatalf("unified %q, want %q", r.json["unified"], want)
	}
	gen := first.json["generation"]
	r = diff(true, url.Values{"path": {"outputs/r.txt"}, "from": {fmt.Sprintf("generation:%.0f", gen)}, "to": {"snapshot:1"}})
	expect(t, r, 200, "")
	if r.json["identical"] != true || r.json["hunk_count"] != float64(0) {
		t.Fatalf("generation %v against the snapshot that holds it: %s", gen, r.body)
	}

	r = diff(true, url.Values{"from": {"snapshot:s1"}, "limit": {"1"}})
	expect(t, r, 200, "")
	var got []string
	for {
		for _, ch := range r.json["changes"].([]any) {
			m := ch.(map[string]any)
			got = append(got, m["path"].(string)+" "+m["change"].(string))
		}
		cur, _ := r.json["next_cursor"].(string)
		if cur == "" {
			break
		}
		r = diff(true, url.Values{"from": {"snapshot:s1"}, "limit": {"1"}, "cursor": {cur}})
		expect(t, r, 200, "")
	}
	if want := "input/gone removed,input/new added,outputs/r.txt changed"; strings.Join(got, ",") != want {
		t.Fatalf("changes %v, want %s", got, want)
	}

	expect(t, diff(false, url.Values{"path": {"outputs/r.txt"}}), 400, "InvalidArguments")                        // no from
	expect(t, diff(true, url.Values{"path": {"outputs/r.txt"}, "from": {"yesterday"}}), 400, "InvalidArguments")  // bad side
	expect(t, diff(false, url.Values{"from": {"live"}, "bogus": {"1"}}), 400, "InvalidArguments")                 // unknown parameter
	expect(t, diff(true, url.Values{"path": {"outputs/r.txt"}, "from": {"generation:1"}}), 404, "NotFound")       // not a generation of the file
	expect(t, diff(true, url.Values{"path": {"outputs/r.txt"}, "from": {"snapshot:9"}}), 404, "SnapshotNotFound") // no such snapshot
	expect(t, c.call(true, "HEAD", wb+"/diff?from=live", ""), 200, "")
}
