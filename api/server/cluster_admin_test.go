package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench/auth"
)

// The admin routes of one root answer through a node that holds no replica of its shard:
// the node forwards them to the shard's leader (newAdminRouter). They waited out the
// leader wait (30 s) there and answered RoutingUnavailable, for every key. (A key that may
// not use the root gets the answer of a root never written:
// TestClusterHiddenRootAdminRoutesAnswerAsAMissingOneOnANodeWithoutAReplica.)
func TestClusterAdminRoutesOfARootAnswerThroughANodeWithoutItsShard(t *testing.T) {
	hc := startHiddenCluster(t)
	for _, step := range []struct{ method, path, body, want string }{
		{http.MethodPut, "/v1/admin/quota", `{"agent":"alice","max_files":10}`, `"files":10`},
		{http.MethodGet, "/v1/admin/quota?agent=alice", "", `"usage":{"bytes":7,"files":1,`},
		{http.MethodPut, "/v1/admin/retention", `{"agent":"alice","versions":7}`, `"versions":7`},
		{http.MethodGet, "/v1/admin/retention?agent=alice", "", `"versions":7`},
		{http.MethodPost, "/v1/admin/purge", `{"agent":"alice"}`, `"deleted_workbenches":1`},
		{http.MethodGet, "/v1/admin/quota?agent=alice", "", `"workbenches":0`},
	} {
		var body []byte
		if step.body != "" {
			body = []byte(step.body)
		}
		if code, b := hc.send(t, step.method, hc.b.adminURL+step.path, hc.operator, body); code != http.StatusOK || !strings.Contains(string(b), step.want) {
			t.Fatalf("%s %s through b: %d %s, want 200 with %s", step.method, step.path, code, b, step.want)
		}
	}
	// A malformed request is answered with the route's own error, wherever it is served.
	if code, b := hc.send(t, http.MethodGet, hc.b.adminURL+"/v1/admin/quota?agent=alice&agent=x", hc.operator, nil); code != http.StatusBadRequest || !strings.Contains(string(b), "agent") {
		t.Fatalf("a repeated agent parameter through b: %d %s", code, b)
	}
}

// The peer port serves, of the admin routes, only the requests of one root an admin
// listener forwards, with their bodies whole, and only to a principal with the admin
// scope.
func TestPeerPortServesOnlyForwardedAdminRequestsOfOneRoot(t *testing.T) {
	served, body := 0, ""
	h := peerAdmin{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	})}
	for _, c := range []struct {
		method, target, body string
		scopes               []auth.Scope
		want                 int
	}{
		{http.MethodGet, "/v1/admin/quota?agent=acme", "", []auth.Scope{auth.ScopeAdmin}, http.StatusOK},
		{http.MethodGet, "/v1/admin/retention?agent=acme", "", []auth.Scope{auth.ScopeAdmin}, http.StatusOK},
		{http.MethodGet, "/v1/admin/quota?agent=acme", "", []auth.Scope{auth.ScopeRead}, http.StatusForbidden},
		{http.MethodPut, "/v1/admin/quota", `{"agent":"acme","max_files":1}`, []auth.Scope{auth.ScopeAdmin}, http.StatusOK},
		{http.MethodPost, "/v1/admin/purge", `{"agent":"acme"}`, []auth.Scope{auth.ScopeAdmin}, http.StatusOK},
		{http.MethodPost, "/v1/admin/purge", `{"agent":"acme"}`, []auth.Scope{auth.ScopeWrite}, http.StatusForbidden},
		{http.MethodGet, "/v1/admin/backup/holds", "", []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
		{http.MethodPost, "/v1/admin/gc", "", []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
		{http.MethodGet, "/v1/admin/cluster/root-moves", "", []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
		{http.MethodGet, "/v1/admin/quota", "", []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
		{http.MethodPut, "/v1/admin/quota", `{"max_files":1}`, []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
	} {
		before := served
		r := httptest.NewRequestWithContext(auth.WithPrincipal(t.Context(), auth.Principal{ID: "p", AllAgents: true, Scopes: c.scopes}), c.method, c.target, strings.NewReader(c.body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := w.Code; got != c.want || (served > before) != (c.want == http.StatusOK) {
			t.Errorf("%s %s with %v: %d (served: %v), want %d", c.method, c.target, c.scopes, got, served > before, c.want)
		}
		if served > before && body != c.body {
			t.Errorf("%s %s: the route read the body %q, want %q", c.method, c.target, body, c.body)
		}
	}
}
