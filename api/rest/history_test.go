package rest_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestHistoryListsVersionsAndGenerationReadsThem: …/history pages a file's versions newest
// first through its cursor; ?generation= on GET and HEAD serves a retained version with
// its generation as ETag; a pruned, unknown or delete generation is 404 naming
// "generation"; bad arguments are 400.
func TestHistoryListsVersionsAndGenerationReadsThem(t *testing.T) {
	srv, admin := newServers(t)
	base := srv.URL + "/v1/agents/a/workbenches/w"
	file := base + "/files/outputs/r.txt"
	var gens []string
	for _, body := range []string{"one", "two", "three"} {
		r := do(t, "PUT", file, strings.NewReader(body))
		if r.status != 200 && r.status != 201 {
			t.Fatalf("put: %d %s", r.status, r.body)
		}
		gens = append(gens, strings.Trim(r.header.Get("ETag"), `"`))
	}
	var seen []string
	next := base + "/history?path=outputs/r.txt&limit=2"
	for next != "" {
		r := do(t, "GET", next, nil)
		expect(t, r, 200, "")
		for _, v := range r.json["versions"].([]any) {
			row := v.(map[string]any)
			seen = append(seen, fmt.Sprint(uint64(row["generation"].(float64))))
			if row["tombstone"] != false || row["digest_uri"] == nil || row["at"] == nil {
				t.Fatalf("row %v", row)
			}
		}
		next = ""
		if c, ok := r.json["next_cursor"].(string); ok {
			next = base + "/history?path=outputs/r.txt&limit=2&cursor=" + url.QueryEscape(c)
		}
	}
	if fmt.Sprint(seen) != fmt.Sprint([]string{gens[2], gens[1], gens[0]}) {
		t.Fatalf("history %v, want newest first of %v", seen, gens)
	}
	for i, body := range []string{"one", "two", "three"} {
		r := do(t, "GET", file+"?generation="+gens[i], nil)
		expect(t, r, 200, "")
		if string(r.body) != body || r.header.Get("ETag") != `"`+gens[i]+`"` {
			t.Fatalf("generation %s: %q etag %s", gens[i], r.body, r.header.Get("ETag"))
		}
		if h := do(t, "HEAD", file+"?generation="+gens[i], nil); h.status != 200 || h.header.Get("Content-Length") != fmt.Sprint(len(body)) {
			t.Fatalf("HEAD at %s: %d %v", gens[i], h.status, h.header)
		}
	}
	// A root keeping one version prunes the older ones at once.
	expect(t, do(t, "PUT", admin.URL+"/v1/admin/retention", strings.NewReader(`{"agent":"a","versions":1,"age":"0s"}`)), 200, "")
	for _, g := range []string{gens[0], "99999"} {
		r := do(t, "GET", file+"?generation="+g, nil)
		expect(t, r, 404, "NotFound")
		if r.json["details"].(map[string]any)["field"] != "generation" {
			t.Fatalf("404 of generation %s: %s", g, r.body)
		}
	}
	for _, q := range []string{"?generation=0", "?generation=x", "?generation=1&at_snapshot=1"} {
		expect(t, do(t, "GET", file+q, nil), 400, "InvalidArguments")
	}
	for _, q := range []string{"", "?path=outputs/r.txt&limit=0", "?path=outputs/r.txt&cursor=forged", "?path=outputs/r.txt&other=1"} {
		expect(t, do(t, "GET", base+"/history"+q, nil), 400, "InvalidArguments")
	}
	expect(t, do(t, "GET", base+"/history?path=outputs/none.txt", nil), 404, "NotFound")
}

// TestRetentionIsSetAndShownByAnAdmin: GET and PUT /v1/admin/retention exist on the admin
// listener only; an absent field keeps the root's current value; a bad policy is 400
// naming its field; reset returns the root to the node default.
func TestRetentionIsSetAndShownByAnAdmin(t *testing.T) {
	srv, admin := newServers(t)
	expect(t, do(t, "GET", srv.URL+"/v1/admin/retention?agent=a", nil), 404, "NotFound")
	r := do(t, "GET", admin.URL+"/v1/admin/retention?agent=a", nil)
	expect(t, r, 200, "")
	if p := r.json["retention"].(map[string]any); p["versions"] != 100.0 || p["age"] != "720h0m0s" || p["max_versions"] != 1000.0 || p["default"] != true {
		t.Fatalf("node default: %s", r.body)
	}
	r = do(t, "PUT", admin.URL+"/v1/admin/retention", strings.NewReader(`{"agent":"a","versions":5}`))
	expect(t, r, 200, "")
	if p := r.json["retention"].(map[string]any); p["versions"] != 5.0 || p["age_seconds"] != 2592000.0 || p["max_versions"] != 1000.0 || p["default"] != false {
		t.Fatalf("after set: %s", r.body)
	}
	for body, field := range map[string]string{
		`{"agent":"a","versions":0}`:                      "versions",
		`{"agent":"a","age":"soon"}`:                      "age",
		`{"agent":"a","versions":5,"max_versions":4}`:     "max_versions",
		`{"agent":"a"}`:                                   "versions",
		`{"agent":"a","reset":true,"versions":2}`:         "reset",
		`{"agent":"a","versions":20000,"max_versions":1}`: "versions",
	} {
		r := do(t, "PUT", admin.URL+"/v1/admin/retention", strings.NewReader(body))
		expect(t, r, 400, "InvalidArguments")
		if r.json["details"].(map[string]any)["field"] != field {
			t.Fatalf("%s: %s, want field %s", body, r.body, field)
		}
	}
	r = do(t, "PUT", admin.URL+"/v1/admin/retention", strings.NewReader(`{"agent":"a","reset":true}`))
	expect(t, r, 200, "")
	if p := r.json["retention"].(map[string]any); p["versions"] != 100.0 || p["default"] != true {
		t.Fatalf("after reset: %s", r.body)
	}
}
