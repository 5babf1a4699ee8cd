package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// bearerIsPrincipal stands in for the node's key check in these tests: the bearer token
// the CLI sends (--api-key) is taken as the principal's id.
func bearerIsPrincipal(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			r = r.WithContext(auth.WithPrincipal(r.Context(), auth.Principal{ID: id, AllAgents: true, Scopes: auth.Scopes}))
		}
		h.ServeHTTP(w, r)
	})
}

// TestCairnDecideByTheProposerFailsWhenADistinctReviewerIsRequired: `cairn decide` by
// the key that proposed fails with PermissionDenied on a node that requires a distinct
// reviewer; another key's decide accepts.
func TestCairnDecideByTheProposerFailsWhenADistinctReviewerIsRequired(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, RequireDistinctReviewer: true})
	srv := httptest.NewServer(bearerIsPrincipal(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready})))
	t.Cleanup(srv.Close)
	as := func(key string, args ...string) (string, error) {
		t.Helper()
		out, _, err := execCairn(t, append(args, "--agent", "a", "--server", srv.URL, "--api-key", key)...)
		return out, err
	}
	readme := filepath.Join(t.TempDir(), "readme.md")
	if err := os.WriteFile(readme, []byte("hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := as("alice", "put", "--workbench", "w", "outputs/readme.md", readme); err != nil {
		t.Fatal(err)
	}
	out, err := as("alice", "propose", "w", "outputs/plan.md", "--text", "v1\n", "--request-id", "r1", "--json")
	var p struct {
		ID string `json:"proposal_id"`
	}
	if err != nil || json.Unmarshal([]byte(out), &p) != nil || p.ID == "" {
		t.Fatalf("propose: %q %v", out, err)
	}
	_, err = as("alice", "decide", "w", p.ID, "accept", "--submission-id", "s1")
	if code, msg := describeError(err); code != workbench.CodePermissionDenied || !strings.Contains(msg, "reviewer other than the proposer") {
		t.Fatalf("self-review: %v", err)
	}
	if out, err := as("bob", "decide", "w", p.ID, "accept", "--submission-id", "s2"); err != nil || !strings.HasPrefix(out, "accepted "+p.ID) {
		t.Fatalf("bob's decide: %q %v", out, err)
	}
}
