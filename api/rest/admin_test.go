package rest_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestAdminRoutesAreServedOnlyOnTheAdminListener(t *testing.T) {
	srv, admin := newServers(t)
	for _, path := range []string{"/v1/admin/gc", "/v1/admin/anything"} {
		r := do(t, http.MethodPost, srv.URL+path, strings.NewReader(`{"dry_run":true}`))
		expect(t, r, http.StatusNotFound, "NotFound")
	}
	if r := do(t, http.MethodPost, admin.URL+"/v1/admin/gc", strings.NewReader(`{"dry_run":true}`)); r.status != http.StatusOK {
		t.Fatalf("the admin listener: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := do(t, http.MethodGet, admin.URL+path, nil); r.status != http.StatusOK {
			t.Fatalf("the admin listener's %s: %d %s", path, r.status, r.body)
		}
	}
	// Tenant routes are not served on the admin listener.
	r := do(t, http.MethodPut, admin.URL+"/v1/agents/a/workbenches/w", nil)
	expect(t, r, http.StatusNotFound, "NotFound")
}

func TestAdminGCRunsASweepAndValidatesItsBody(t *testing.T) {
	srv, admin := newServers(t)
	file := srv.URL + "/v1/agents/a/workbenches/w/files/outputs/big.bin"
	for _, body := range []string{strings.Repeat("x", 10_000), strings.Repeat("y", 10_000)} {
		if r := do(t, http.MethodPut, file, strings.NewReader(body)); r.status/100 != 2 {
			t.Fatalf("put: %d %s", r.status, r.body)
		}
	}
	gc := admin.URL + "/v1/admin/gc"
	r := do(t, http.MethodPost, gc, strings.NewReader(`{"dry_run":true}`))
	if r.status != http.StatusOK || r.json["status"] != "success" || r.json["dry_run"] != true {
		t.Fatalf("dry run: %d %s", r.status, r.body)
	}
	// The overwritten body is inside the node's grace period (1 h): nothing is a candidate.
	if r.json["candidates"] != float64(0) || r.json["deleted"] != float64(0) {
		t.Fatalf("dry run inside the grace period: %s", r.body)
	}
	if r := do(t, http.MethodPost, gc, strings.NewReader(``)); r.status != http.StatusOK || r.json["dry_run"] != false {
		t.Fatalf("sweep with an empty body: %d %s", r.status, r.body)
	}
	for name, tc := range map[string]struct {
		method, url, body string
		status            int
	}{
		"a GET is not allowed":           {http.MethodGet, gc, "", http.StatusMethodNotAllowed},
		"an unknown field is rejected":   {http.MethodPost, gc, `{"grace":"0s"}`, http.StatusBadRequest},
		"a query is rejected":            {http.MethodPost, gc + "?dry_run=true", `{}`, http.StatusBadRequest},
		"a negative batch is rejected":   {http.MethodPost, gc, `{"max_batch":-1}`, http.StatusBadRequest},
		"an invalid agent id is refused": {http.MethodPost, gc, `{"agent":"-x"}`, http.StatusBadRequest},
	} {
		if r := do(t, tc.method, tc.url, strings.NewReader(tc.body)); r.status != tc.status {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
}
