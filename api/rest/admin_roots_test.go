package rest_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
)

// AdminRootRequest names the root of the admin requests of one root, from the query or
// the body, and leaves the body whole for the route, whatever it read of it.
func TestAdminRootRequestNamesTheRootAndLeavesTheBodyWhole(t *testing.T) {
	big := `{"agent":"acme"}` + strings.Repeat(" ", rest.AdminRootBodyBytes) // valid JSON, longer than it reads
	for _, c := range []struct {
		method, target, body string
		agent                string // "": not a request of one root it can name
	}{
		{http.MethodGet, "/v1/admin/quota?agent=acme", "", "acme"},
		{http.MethodGet, "/v1/admin/retention?agent=a%2Fb", "", "a/b"},
		{http.MethodPut, "/v1/admin/quota", `{"agent":"acme","max_files":3}`, "acme"},
		{http.MethodPut, "/v1/admin/retention", `{"versions":3,"agent":"acme"}`, "acme"},
		{http.MethodPost, "/v1/admin/purge", `{"agent":"acme"}`, "acme"},
		{http.MethodGet, "/v1/admin/quota", "", ""},
		{http.MethodPut, "/v1/admin/quota", `{"max_files":3}`, ""},
		{http.MethodPut, "/v1/admin/quota", `{"agent":`, ""},
		{http.MethodPut, "/v1/admin/quota", big, ""},
		{http.MethodDelete, "/v1/admin/quota?agent=acme", "", ""},
		{http.MethodGet, "/v1/admin/cluster/root-moves?agent=acme", "", ""},
		{http.MethodPost, "/v1/admin/gc", `{"agent":"acme"}`, ""},
	} {
		r := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
		agent, ok := rest.AdminRootRequest(r)
		if agent != c.agent || ok != (c.agent != "") {
			t.Errorf("%s %s: %q %v, want %q", c.method, c.target, agent, ok, c.agent)
		}
		if b, err := io.ReadAll(r.Body); err != nil || string(b) != c.body {
			t.Errorf("%s %s: the body reads %d bytes (%v) after, want the %d sent", c.method, c.target, len(b), err, len(c.body))
		}
	}
}

// A body that fails to read names no root, and the route meets the same failure.
func TestAdminRootRequestOfABodyThatFailsNamesNoRoot(t *testing.T) {
	broken := errors.New("connection reset")
	r := httptest.NewRequest(http.MethodPut, "/v1/admin/quota", io.MultiReader(strings.NewReader(`{"agent":"ac`), &failingReader{err: broken}))
	if agent, ok := rest.AdminRootRequest(r); ok {
		t.Fatalf("named %q", agent)
	}
	if b, err := io.ReadAll(r.Body); !errors.Is(err, broken) || string(b) != `{"agent":"ac` {
		t.Fatalf("the route reads %q, %v", b, err)
	}
}
