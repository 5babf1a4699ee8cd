package openwop_test

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// principalHeader names the test principal of a request; every principal here is bound
// to tenantA with read, write and review.
const principalHeader = "Test-Principal"

// TestApplyAndRejectByAnAuthorAreForbiddenWhenADistinctReviewerIsRequired: on a node that
// requires a distinct reviewer, the proposal's creator and a principal that revised it
// get 403 forbidden (details.reason "self_review") for :apply and :reject, and nothing
// changes; a third principal's :apply installs the pack, although apply itself records a
// revision in that principal's name on the way.
func TestApplyAndRejectByAnAuthorAreForbiddenWhenADistinctReviewerIsRequired(t *testing.T) {
	cfg := workbench.Config{InlineMaxBytes: 4096, RequireDistinctReviewer: true,
		ReservedWorkbenches: map[string]string{openwop.PacksWorkbench: openwop.Surface}}
	n := workbenchtest.New(t, cfg)
	opt := testOptions()
	opt.Readback = true
	h := openwop.New(n.Service, opt, http.NotFoundHandler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.Principal{ID: r.Header.Get(principalHeader), Tenant: "acme", Workspace: "main",
			Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeReview}}
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	do := func(who, method, path string, body any) answer {
		t.Helper()
		return call(t, method, srv.URL+path, body, principalHeader, who)
	}
	created := do("alice", http.MethodPost, "/proposals", map[string]any{"kind": openwop.KindAgentPack,
		"artifact": agentPack(packP, "1.0.0", agentP, "You help."), "title": "t", "rationale": "why"})
	if created.status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	id := created.json["id"].(string)
	// world is what carol reads: each answer's status and body. Headers stay out: the Date
	// header differs when the second turns between two reads.
	world := func() []string {
		var w []string
		for _, p := range []string{"/proposals/" + id, "/installed-packs/" + packP} {
			a := do("carol", http.MethodGet, p, nil)
			w = append(w, strconv.Itoa(a.status)+" "+string(a.body))
		}
		return w
	}
	refused := func(who string) {
		t.Helper()
		before := world()
		for _, action := range []string{":apply", ":reject"} {
			r := do(who, http.MethodPost, "/proposals/"+id+action, map[string]any{})
			details, _ := r.json["details"].(map[string]any)
			if r.status != http.StatusForbidden || r.json["error"] != "forbidden" || details["reason"] != workbench.ReasonSelfReview {
				t.Fatalf("%s%s by %s: %d %s", id, action, who, r.status, r.body)
			}
		}
		if after := world(); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused self-review changed the world: %q, was %q", after, before)
		}
	}
	refused("alice")
	rev := do("bob", http.MethodPatch, "/proposals/"+id, map[string]any{"artifact": agentPack(packP, "1.0.1", agentP, "You help, carefully.")})
	if rev.status != http.StatusOK {
		t.Fatalf("bob's revision: %d %s", rev.status, rev.body)
	}
	refused("bob")
	refused("alice")
	ap := do("carol", http.MethodPost, "/proposals/"+id+":apply", map[string]any{})
	if ap.status != http.StatusOK || ap.json["state"] != "applied" {
		t.Fatalf("carol's apply: %d %s", ap.status, ap.body)
	}
	if r := do("alice", http.MethodGet, "/installed-packs/"+packP, nil); r.status != http.StatusOK {
		t.Fatalf("readback after carol's apply: %d %s", r.status, r.body)
	}
}
