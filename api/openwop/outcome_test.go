package openwop_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestAPutWhoseCommitIsUnconfirmedIsARetriableServiceUnavailable: a write the replica
// committed but could not confirm (shard.ErrTimeout) answers the registered, retriable
// 503 service_unavailable with Retry-After and details.outcome "unknown" (OpenWOP
// registers no code of its own for it), never 500 internal_error; its retry under the
// same Idempotency-Key answers the first write's version instead of writing again.
func TestAPutWhoseCommitIsUnconfirmedIsARetriableServiceUnavailable(t *testing.T) {
	sc := loadSchemas(t)
	n, fc := workbenchtest.NewFaulty(t, workbench.Config{InlineMaxBytes: 4096})
	h := openwop.New(n.Service, testOptions(), http.NotFoundHandler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), auth.Local)))
	}))
	t.Cleanup(srv.Close)
	put := func() answer {
		return call(t, http.MethodPut, srv.URL+"/v1/host/workspace/files/notes.md", `{"content":"v"}`, "Idempotency-Key", "put-notes-1")
	}
	fc.Once(workbenchtest.AppliedButUnconfirmed)
	a := put()
	wantError(t, sc, "an unconfirmed put", a, http.StatusServiceUnavailable, openwop.CodeUnavailable)
	if d, _ := a.json["details"].(map[string]any); d["outcome"] != "unknown" || a.header.Get("Retry-After") != "1" {
		t.Fatalf("an unconfirmed put: %s %v", a.body, a.header)
	}
	if again := put(); again.status != http.StatusOK || again.json["version"] != float64(1) {
		t.Fatalf("the retry with the same Idempotency-Key: %d %s, want version 1", again.status, again.body)
	}
}
