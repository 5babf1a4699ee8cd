package authtest

import (
	"net/http"

	"github.com/cairnstore/cairn/workbench/auth"
)

// Header is the test-only request header whose value TrustHeader takes as the request's
// principal id.
const Header = "X-Test-Principal"

// TrustHeader wraps h for the surfaces' tests, standing in for the node's authentication
// middleware: a request naming a principal id in Header carries that principal, with
// every scope in every agent root (auth.WithPrincipal); a request without it carries none.
func TrustHeader(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(Header); id != "" {
			r = r.WithContext(auth.WithPrincipal(r.Context(), auth.Principal{ID: id, AllAgents: true, Scopes: auth.Scopes}))
		}
		h.ServeHTTP(w, r)
	})
}

// As is an http.RoundTripper over http.DefaultTransport that names the principal id it
// holds in Header on every request (for TrustHeader).
type As string

func (p As) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(Header, string(p))
	return http.DefaultTransport.RoundTrip(r)
}
