package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairnstore/cairn/workbench/auth"
)

// TestCLIWithAKeyBoundToAWorkbenchReachesOnlyIt (issue 25): the CLI acting for a key made
// with --tenant acme --workspace other reads and writes acme/other, and finds acme/main's
// files missing: it can neither read nor overwrite them.
func TestCLIWithAKeyBoundToAWorkbenchReachesOnlyIt(t *testing.T) {
	_, h := testHandler(t)
	operator := httptest.NewServer(h)
	t.Cleanup(operator.Close)
	bound := auth.Principal{ID: "0123456789abcdef", Name: "bound", Tenant: "acme", Workspace: "other",
		Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}}
	asBound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), bound))) // what the node's authentication sets
	}))
	t.Cleanup(asBound.Close)
	runCases(t, operator.URL, []cliCase{
		{name: "the operator writes acme/main", args: []string{"put", "--agent", "acme", "--workbench", "main", "input/secret.txt"}, stdin: "secret"},
	})
	runCases(t, asBound.URL, []cliCase{
		{name: "the bound key writes its workbench", args: []string{"put", "--agent", "acme", "--workbench", "other", "input/mine.txt"}, stdin: "mine"},
		{name: "the bound key reads its workbench", args: []string{"cat", "--agent", "acme", "--workbench", "other", "input/mine.txt"}, out: "^mine$"},
		{name: "the bound key cannot read acme/main", args: []string{"cat", "--agent", "acme", "--workbench", "main", "input/secret.txt"}, failCode: "NotFound"},
		{name: "the bound key cannot overwrite acme/main", args: []string{"put", "--agent", "acme", "--workbench", "main", "input/secret.txt"}, stdin: "mine now", failCode: "NotFound"},
	})
	runCases(t, operator.URL, []cliCase{
		{name: "acme/main is unchanged", args: []string{"cat", "--agent", "acme", "--workbench", "main", "input/secret.txt"}, out: "^secret$"},
	})
}
