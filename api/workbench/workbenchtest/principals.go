package workbenchtest

import (
	"net/http"

	"github.com/cairnstore/cairn/api/auth"
)

// PrincipalHeader names the test principal a request acts for (WithPrincipals). Tests
// only: the node's real authentication middleware reads API keys.
const PrincipalHeader = "Cairn-Test-Principal"

// The principals of the authorization tests: ReadOnly may read agent root "a" only;
// OtherRoot may read and write root "b" only; Everything may use every root with every
// scope (as auth.Local does, under another id).
var (
	ReadOnly   = auth.Principal{ID: "k-ro", Name: "read-only on a", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead}}
	WriteOnly  = auth.Principal{ID: "k-wo", Name: "write-only on a", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeWrite}}
	OtherRoot  = auth.Principal{ID: "k-b", Name: "read-write on b", Agents: []string{"b"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}}
	Everything = auth.Principal{ID: "k-all", Name: "all roots, all scopes", AllAgents: true, Scopes: auth.Scopes}
)

// Principals are the test principals by id.
var Principals = map[string]auth.Principal{ReadOnly.ID: ReadOnly, WriteOnly.ID: WriteOnly, OtherRoot.ID: OtherRoot, Everything.ID: Everything}

// WithPrincipals wraps next so that a request with PrincipalHeader set to one of
// Principals' ids acts for that principal (auth.WithPrincipal), the way the key
// middleware sets the principal of a key; without the header it carries none. An unknown
// id is answered 400, so a typo in a test cannot pass as the local operator.
func WithPrincipals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(PrincipalHeader)
		if id == "" {
			next.ServeHTTP(w, r)
			return
		}
		p, ok := Principals[id]
		if !ok {
			http.Error(w, "unknown test principal "+id, http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}
