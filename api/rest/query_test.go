package rest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Every query parameter of the REST surface takes one value: one given twice is 400
// InvalidArguments naming it (details.rule duplicate_parameter), never read as its first
// value, on every route that takes query parameters; of two repeated, the first in the
// query string is named. The same requests with each parameter once are answered.
func TestARepeatedQueryParameterIsRefusedNamingIt(t *testing.T) {
	srv, admin := newServers(t)
	wb := srv.URL + "/v1/agents/a/workbenches/w"
	expect(t, do(t, "PUT", wb, nil), 201, "")
	put := do(t, "PUT", wb+"/files/input/a.txt", strings.NewReader("one\n"))
	expect(t, put, 201, "")
	gen := strings.Trim(put.header.Get("ETag"), `"`)
	snap := do(t, "POST", wb+"/snapshots", strings.NewReader(`{}`))
	expect(t, snap, 201, "")
	snapID := fmt.Sprint(snap.json["snapshot_id"])
	for _, c := range []struct {
		base, once, twice, field string
	}{
		{wb, "at_snapshot=" + snapID, "at_snapshot=" + snapID + "&at_snapshot=" + snapID, "at_snapshot"},
		{wb + "/list", "path=input", "path=input&path=scripts", "path"},
		{wb + "/list", "limit=5", "limit=5&limit=6", "limit"},
		{wb + "/list", "path=input&cursor=", "cursor=&path=input&cursor=x", "cursor"},
		{wb + "/list", "path=input&limit=5", "path=input&limit=5&path=x&limit=6", "path"},
		{wb + "/list", "path=input&limit=5", "limit=5&path=input&limit=6&path=x", "limit"},
		{wb + "/diff", "from=live", "from=live&from=generation:1", "from"},
		{wb + "/diff", "from=live&to=live", "from=live&to=live&to=live", "to"},
		{wb + "/diff", "from=live&path=input/a.txt&context=3", "from=live&path=input/a.txt&context=3&context=3", "context"},
		{wb + "/files/input/a.txt", "disposition=inline", "disposition=inline&disposition=attachment", "disposition"},
		{wb + "/files/input/a.txt", "generation=" + gen, "generation=" + gen + "&generation=" + gen, "generation"},
		{wb + "/files/input/a.txt", "redirect=false", "redirect=false&redirect=true", "redirect"},
		{wb + "/snapshots", "limit=5", "limit=5&limit=5", "limit"},
		{wb + "/commits", "cursor=", "cursor=&cursor=", "cursor"},
		{srv.URL + "/v1/agents/a/workbenches", "limit=5", "limit=5&limit=7", "limit"},
		{srv.URL + "/v1/agents/a/events", "follow=false", "follow=false&follow=true", "follow"},
		{srv.URL + "/v1/agents/a/events", "follow=false&workbench=w", "follow=false&workbench=w&workbench=v", "workbench"},
		{wb + "/history", "path=input/a.txt", "path=input/a.txt&path=input/b.txt", "path"},
		{wb + "/proposals", "state=pending", "state=pending&state=accepted", "state"},
		{wb + "/judgments", "limit=5", "limit=5&limit=9", "limit"},
		{admin.URL + "/v1/admin/retention", "agent=a", "agent=a&agent=b", "agent"},
		{admin.URL + "/v1/admin/quota", "agent=a", "agent=a&agent=a", "agent"},
	} {
		if r := do(t, "GET", c.base+"?"+c.once, nil); r.status != http.StatusOK {
			t.Errorf("GET %s?%s: %d %s, want 200", c.base, c.once, r.status, r.body)
		}
		r := do(t, "GET", c.base+"?"+c.twice, nil)
		details, _ := r.json["details"].(map[string]any)
		if r.status != http.StatusBadRequest || r.json["code"] != "InvalidArguments" || details["field"] != c.field ||
			details["rule"] != "duplicate_parameter" || !strings.HasPrefix(r.json["message"].(string), c.field+": ") {
			t.Errorf("GET %s?%s: %d %s, want 400 InvalidArguments naming %s", c.base, c.twice, r.status, r.body, c.field)
		}
	}
}

// A number in a query parameter or a tool body is read from its text, as over MCP: a
// limit of 1e-400 (0 as a float64), 90.0000000000000001 (90 as a float64), 1e2 or 1.0 is
// not an integer's digits and is refused naming the parameter, never read as another
// number; so is such a number in an integer member of a JSON body.
func TestNumbersAreReadFromTheirText(t *testing.T) {
	srv := newServer(t)
	wb := srv.URL + "/v1/agents/a/workbenches/w"
	expect(t, do(t, "PUT", wb, nil), 201, "")
	for _, lit := range []string{"1e-400", "90.0000000000000001", "1e1", "1.0", "-0"} {
		for _, u := range []string{wb + "/list?limit=" + lit, wb + "/snapshots?limit=" + lit, wb + "/diff?from=live&limit=" + lit} {
			r := do(t, "GET", u, nil)
			if details, _ := r.json["details"].(map[string]any); r.status != http.StatusBadRequest || r.json["code"] != "InvalidArguments" || details["field"] != "limit" {
				t.Errorf("GET %s: %d %s, want 400 InvalidArguments naming limit", u, r.status, r.body)
			}
		}
	}
	for _, lit := range []string{"1e-400", "90.0000000000000001"} {
		r := do(t, "POST", wb+"/snapshots", strings.NewReader(`{"ttl_days":`+lit+`}`))
		if details, _ := r.json["details"].(map[string]any); r.status != http.StatusBadRequest || details["field"] != "ttl_days" {
			t.Errorf("snapshot ttl_days %s: %d %s, want 400 naming ttl_days", lit, r.status, r.body)
		}
	}
	r := do(t, "POST", srv.URL+"/v1/agents/a/search", strings.NewReader(`{"predicates":[{"field":"artifact.size_bytes","op":"gt","value":1e-400}]}`))
	if details, _ := r.json["details"].(map[string]any); r.status != http.StatusBadRequest || details["field"] != "predicates[0].value" {
		t.Errorf("search value 1e-400: %d %s, want 400 naming predicates[0].value", r.status, r.body)
	}
}
