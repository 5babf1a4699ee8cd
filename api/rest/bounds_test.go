package rest_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestRESTPathLimitsAreMCPs: REST applies MCP's limits to the path relative to its
// section, 4,096 bytes and 64 components (docs/workbench.md#common-rules), so it never
// accepts a file MCP lists but cannot read or write (issue 10 finding 15: REST accepted
// 4,106 bytes, checking the full path against 4,112).
func TestRESTPathLimitsAreMCPs(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a1/workbenches/w1"
	longest := strings.Repeat("p", 4096)
	deepest := strings.TrimSuffix(strings.Repeat("c/", 64), "/")
	for _, rel := range []string{longest, deepest} {
		expect(t, do(t, "PUT", base+"/files/outputs/"+rel, strings.NewReader("x")), 201, "")
		expect(t, do(t, "GET", base+"/files/outputs/"+rel, nil), 200, "")
	}
	for _, tc := range []struct{ name, path, says string }{
		{"4,097 bytes below a section", "outputs/" + longest + "p", "4096"},
		{"65 components below a section", "outputs/" + deepest + "/c", "64"},
		{"4,097 bytes outside the sections", "notes/" + strings.Repeat("p", 4091), "4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{"PUT", "GET", "DELETE"} {
				r := do(t, method, base+"/files/"+tc.path, strings.NewReader("x"))
				expect(t, r, 400, "InvalidArguments")
				details, _ := r.json["details"].(map[string]any)
				if msg, _ := r.json["message"].(string); details["field"] != "path" || !strings.Contains(msg, tc.says) {
					t.Errorf("%s: %s", method, r.body)
				}
			}
			dir := tc.path[:strings.LastIndexByte(tc.path, '/')] + "/d"
			if strings.Count(tc.path, "/") < 60 {
				dir = tc.path // a directory path obeys the same limits
			}
			expect(t, do(t, "GET", base+"/list?path="+dir, nil), 400, "InvalidArguments")
		})
	}
}

// TestIfMatchOnAMissingFileIsOneAnswer: a precondition on a file that does not exist is a
// failed precondition whichever form it takes (RFC 9110 §13.1.1): 412 NotFound, not
// retryable, for a PUT with a generation or with *, an append with a generation and a
// DELETE with a generation (issue 10 finding 16: a generation answered 412 Conflict
// retryable:true, a retry that can never pass since generations are never reused).
func TestIfMatchOnAMissingFileIsOneAnswer(t *testing.T) {
	srv := newServer(t)
	base := srv.URL + "/v1/agents/a1/workbenches/w1"
	expect(t, do(t, "PUT", base+"/files/input/other", strings.NewReader("x")), 201, "")
	gone := base + "/files/input/gone"
	expect(t, do(t, "PUT", gone, strings.NewReader("x")), 201, "")
	expect(t, do(t, "DELETE", gone, nil), 200, "")
	for _, f := range []string{base + "/files/input/never", gone} {
		for _, tc := range []struct{ method, url, ifMatch string }{
			{"PUT", f, `"5"`},
			{"PUT", f, "*"},
			{"POST", f + "?append", `"5"`},
			{"DELETE", f, `"5"`},
		} {
			r := do(t, tc.method, tc.url, strings.NewReader("x"), "If-Match", tc.ifMatch)
			expect(t, r, 412, "NotFound")
			if r.json["retryable"] != false {
				t.Errorf("%s %s If-Match %s: retryable %v", tc.method, tc.url, tc.ifMatch, r.json["retryable"])
			}
		}
		expect(t, do(t, "GET", f, nil), 404, "NotFound") // nothing was written
	}
}

// TestRESTQueryOverTheBudgetIs429: the query budget's refusal reaches REST as 429
// ResourceExhausted with the bound in details.
func TestRESTQueryOverTheBudgetIs429(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: 70 << 10})
	srv := serveNode(t, n)
	for i := range 8 {
		expect(t, do(t, "PUT", fmt.Sprintf("%s/v1/agents/a1/workbenches/w1/files/outputs/f%d", srv.URL, i), strings.NewReader("x")), 201, "")
	}
	body := `{"measures":[{"name":"n","op":"count"}],"group_by":["artifact.name"]}`
	r := do(t, "POST", srv.URL+"/v1/agents/a1/aggregate", strings.NewReader(body), "Content-Type", "application/json")
	expect(t, r, 429, "ResourceExhausted")
	if d, _ := r.json["details"].(map[string]any); d["budget_bytes"] != float64(70<<10) || d["files_in_scope"] != float64(8) {
		t.Errorf("details %v", r.json["details"])
	}
	expect(t, do(t, "POST", srv.URL+"/v1/agents/a1/aggregate", strings.NewReader(`{"measures":[{"name":"n","op":"count"}]}`),
		"Content-Type", "application/json"), 200, "")
}

// TestRESTSnapshotListPages: GET .../snapshots?limit=N pages through every snapshot
// record in id order (retired ones included) with next_cursor, and every page matches the
// document; without parameters the answer is workbench_snapshot_list's.
func TestRESTSnapshotListPages(t *testing.T) {
	c := newChecker(t)
	wb := "/v1/agents/a1/workbenches/w1"
	expect(t, c.call(true, "PUT", wb, ""), 201, "")
	var ids []float64
	for i := range 7 {
		r := c.call(true, "POST", wb+"/snapshots", "{}", "Content-Type", "application/json")
		expect(t, r, 201, "")
		ids = append(ids, r.json["snapshot_id"].(float64))
		if i%2 == 0 {
			expect(t, c.call(true, "POST", wb+"/snapshots/retire", fmt.Sprintf(`{"snapshot_id":%v}`, ids[i]), "Content-Type", "application/json"), 200, "")
		}
	}
	var got []float64
	for _, s := range pagesOf(t, c, wb+"/snapshots", "snapshots", 3, 3) {
		got = append(got, s["snapshot_id"].(float64))
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("pages listed %v, want %v", got, ids)
	}
	expect(t, c.call(true, "GET", wb+"/snapshots", ""), 200, "")
	expect(t, c.call(false, "GET", wb+"/snapshots?limit=0", ""), 400, "InvalidArguments")
	expect(t, c.call(false, "GET", wb+"/snapshots?cursor=forged", ""), 400, "InvalidArguments")
	expect(t, c.call(false, "GET", wb+"/snapshots?order=desc", ""), 400, "InvalidArguments")
}

// TestRESTCommitListPages: GET .../commits?limit=N pages through every commit of the
// workbench, the replaced ones too, newest first, with next_cursor, and every page matches
// the document; the bounds and parameters of the snapshot pages apply.
func TestRESTCommitListPages(t *testing.T) {
	c := newChecker(t)
	wb := "/v1/agents/a1/workbenches/w1"
	expect(t, c.call(true, "PUT", wb, ""), 201, "")
	var made []string // oldest first
	for i := range 5 {
		if r := c.call(true, "PUT", wb+"/files/outputs/r.txt", fmt.Sprint(i)); r.status/100 != 2 {
			t.Fatalf("write: %d %s", r.status, r.body)
		}
		body := fmt.Sprintf(`{"manifest":{"run":%d},"content_digest_uri":"sha256:%s","replace":true}`, i, strings.Repeat("a", 64))
		r := c.call(true, "POST", wb+"/commit", body, "Content-Type", "application/json")
		expect(t, r, 200, "")
		made = append(made, r.json["commit_identity"].(string))
	}
	var got []string
	for _, cm := range pagesOf(t, c, wb+"/commits", "commits", 2, 3) {
		got = append(got, cm["commit_identity"].(string))
	}
	want := []string{made[4], made[3], made[2], made[1], made[0]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pages listed %v, want %v", got, want)
	}
	all := c.call(true, "GET", wb+"/commits", "")
	expect(t, all, 200, "")
	if list := all.json["commits"].([]any); len(list) != 5 || list[0].(map[string]any)["head"] != true || list[1].(map[string]any)["head"] != false {
		t.Errorf("without parameters: %s", all.body)
	}
	expect(t, c.call(false, "GET", wb+"/commits?limit=0", ""), 400, "InvalidArguments")
	expect(t, c.call(false, "GET", wb+"/commits?limit=101", ""), 400, "InvalidArguments")
	expect(t, c.call(false, "GET", wb+"/commits?cursor=forged", ""), 400, "InvalidArguments")
	expect(t, c.call(false, "GET", wb+"/commits?order=asc", ""), 400, "InvalidArguments")
	expect(t, c.call(false, "GET", "/v1/agents/a1/workbenches/missing/commits", ""), 404, "NotFound")
}

// pagesOf reads every page of the listing at route, limit records a page, each checked
// against the document, and returns the records under field in order: no more than most
// pages, and only the last without next_cursor (and truncated false).
func pagesOf(t *testing.T, c *checker, route, field string, limit, most int) []map[string]any {
	t.Helper()
	var out []map[string]any
	target := fmt.Sprintf("%s?limit=%d", route, limit)
	for pages := 1; ; pages++ {
		if pages > most {
			t.Fatalf("%s: more than %d pages of %d", route, most, limit)
		}
		r := c.call(true, "GET", target, "")
		expect(t, r, 200, "")
		for _, rec := range r.json[field].([]any) {
			out = append(out, rec.(map[string]any))
		}
		next, _ := r.json["next_cursor"].(string)
		if next == "" {
			if r.json["truncated"] != false {
				t.Errorf("%s: last page: truncated %v", route, r.json["truncated"])
			}
			return out
		}
		target = fmt.Sprintf("%s?limit=%d&cursor=%s", route, limit, url.QueryEscape(next))
	}
}
