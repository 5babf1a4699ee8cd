package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/auth/authtest"
)

// testKeys is a file store holding a live read key of root a, a live admin key of every
// root, an admin key of root a, a revoked key and an expired key; it returns the key
// strings by name.
func testKeys(t *testing.T) (auth.Store, map[string]string) {
	t.Helper()
	s, err := auth.OpenFileStore(filepath.Join(t.TempDir(), auth.KeysFile))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tokens := map[string]string{}
	for name, scopes := range map[string][]auth.Scope{"read": {auth.ScopeRead}, "admin": {auth.ScopeAdmin},
		"rootadmin": {auth.ScopeAdmin}, "revoked": {auth.ScopeRead}, "expired": {auth.ScopeRead}} {
		spec := auth.KeySpec{Name: name, Agents: []string{"a"}, Scopes: scopes}
		if name == "admin" {
			spec = auth.KeySpec{Name: name, AllAgents: true, Scopes: scopes}
		}
		k, token, err := auth.NewKey(spec, now)
		if err != nil {
			t.Fatal(err)
		}
		if name == "expired" {
			k.ExpiresAt = now.Add(-time.Second)
		}
		if err := s.Create(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		if name == "revoked" {
			if _, err := s.Revoke(t.Context(), k.ID, now); err != nil {
				t.Fatal(err)
			}
		}
		tokens[name] = token
	}
	return s, tokens
}

// principalEcho answers 200 with the principal's name ("-" for none) and whether the
// internal header reached it.
var principalEcho = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	name := "-"
	if p, ok := auth.FromContext(r.Context()); ok {
		name = p.Name
	}
	w.Header().Set("Seen-Internal", r.Header.Get(PrincipalHeader))
	w.Write([]byte(name))
})

func TestAuthenticationMiddleware(t *testing.T) {
	keys, tok := testKeys(t)
	bearer := func(name string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok[name]} }
	tests := []struct {
		name       string
		required   bool
		admin      bool
		metricsKey bool
		beyond     bool // the listener binds beyond loopback
		path       string
		remote     string
		header     map[string]string
		status     int
		body       string // the principal's name on success, the challenge's error on 401
	}{
		{name: "no key needed: the local operator", path: "/v1/agents/a/catalog", status: 200, body: auth.Local.Name},
		{name: "no key needed: a sent key is not consulted", path: "/v1/agents/a/catalog", header: bearer("revoked"), status: 200, body: auth.Local.Name},
		{name: "required: no key is 401", required: true, path: "/v1/agents/a/catalog", status: 401, body: ""},
		{name: "required: a malformed key is 401", required: true, path: "/v1/agents/a/catalog", header: map[string]string{"Authorization": "Bearer nope"}, status: 401, body: "invalid_token"},
		{name: "required: another scheme is 401", required: true, path: "/v1/agents/a/catalog", header: map[string]string{"Authorization": "Basic " + tok["read"]}, status: 401, body: "invalid_token"},
		{name: "required: a wrong secret is 401", required: true, path: "/v1/agents/a/catalog",
			header: map[string]string{"Authorization": "Bearer " + authtest.WrongSecret(tok["read"])}, status: 401, body: "invalid_token"},
		{name: "required: a revoked key is 401", required: true, path: "/v1/agents/a/catalog", header: bearer("revoked"), status: 401, body: "invalid_token"},
		{name: "required: an expired key is 401", required: true, path: "/v1/agents/a/catalog", header: bearer("expired"), status: 401, body: "invalid_token"},
		{name: "required: a live key is its principal", required: true, path: "/v1/agents/a/catalog", header: bearer("read"), status: 200, body: "read"},
		{name: "required: an unknown route is still 401 first", required: true, path: "/no/such/route", status: 401},
		{name: "required: healthz is open", required: true, path: "/healthz", status: 200, body: auth.Local.Name},
		{name: "required: readyz is open", required: true, path: "/readyz", status: 200, body: auth.Local.Name},
		{name: "required: metrics on loopback is open", required: true, path: "/metrics", status: 200, body: auth.Local.Name},
		{name: "required: metrics from another host needs a key", required: true, path: "/metrics", remote: "10.1.2.3:5000", status: 401},
		{name: "required: metrics with --metrics-require-key needs a key", required: true, metricsKey: true, path: "/metrics", status: 401},
		{name: "beyond loopback: metrics from a loopback connection needs a key", required: true, beyond: true, path: "/metrics", status: 401},
		{name: "metrics with a key without the admin scope is 403", required: true, beyond: true, path: "/metrics", header: bearer("read"), status: 403},
		{name: "metrics with an admin key passes", required: true, beyond: true, path: "/metrics", header: bearer("admin"), status: 200, body: "admin"},
		{name: "a client cannot claim a principal", required: true, path: "/v1/agents/a/catalog", header: map[string]string{PrincipalHeader: "x"}, status: 401},
		{name: "a client's internal header is dropped", required: true, path: "/v1/agents/a/catalog",
			header: map[string]string{"Authorization": "Bearer " + tok["read"], PrincipalHeader: "x"}, status: 200, body: "read"},
		{name: "admin: a read key is 403 on admin routes", required: true, admin: true, path: KeysPath, header: bearer("read"), status: 403},
		{name: "admin: an admin key passes", required: true, admin: true, path: KeysPath, header: bearer("admin"), status: 200, body: "admin"},
		{name: "admin: no key is 401", required: true, admin: true, path: KeysPath, status: 401},
		{name: "admin: an admin key of one root is 403 on the keys", required: true, admin: true, path: KeysPath, header: bearer("rootadmin"), status: 403},
		{name: "admin: an admin key of one root is 403 on GC", required: true, admin: true, path: "/v1/admin/gc", header: bearer("rootadmin"), status: 403},
		{name: "admin: an admin key of one root is 403 on backups", required: true, admin: true, path: "/v1/admin/backup", header: bearer("rootadmin"), status: 403},
		{name: "admin: an admin key of one root is 403 on the cluster", required: true, admin: true, path: "/v1/admin/cluster/shards", header: bearer("rootadmin"), status: 403},
		{name: "admin: an admin key of one root passes to its root's quota", required: true, admin: true, path: "/v1/admin/quota", header: bearer("rootadmin"), status: 200, body: "rootadmin"},
		{name: "admin: an admin key of one root passes to root moves", required: true, admin: true, path: "/v1/admin/cluster/root-moves", header: bearer("rootadmin"), status: 200, body: "rootadmin"},
		{name: "metrics with an admin key of one root is 403", required: true, beyond: true, path: "/metrics", header: bearer("rootadmin"), status: 403},
		{name: "admin without keys required: the local operator", admin: true, path: KeysPath, status: 200, body: auth.Local.Name},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &authn{keys: keys, required: tt.required, metricsKey: tt.metricsKey, beyondLoopback: tt.beyond, admin: tt.admin, next: principalEcho}
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.remote != "" {
				req.RemoteAddr = tt.remote
			} else {
				req.RemoteAddr = "127.0.0.1:40000"
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			switch rec.Code {
			case 200:
				if rec.Body.String() != tt.body || rec.Header().Get("Seen-Internal") != "" {
					t.Fatalf("principal %q (internal header %q), want %q and none", rec.Body, rec.Header().Get("Seen-Internal"), tt.body)
				}
			case 401:
				checkEnvelope(t, rec, workbench.CodeUnauthenticated)
				ch := rec.Header().Get("WWW-Authenticate")
				if !strings.HasPrefix(ch, "Bearer ") || strings.Contains(ch, "invalid_token") != (tt.body == "invalid_token") {
					t.Fatalf("WWW-Authenticate %q", ch)
				}
				for _, secret := range tok {
					if strings.Contains(rec.Body.String(), secret[len(auth.TokenPrefix):]) {
						t.Fatal("the answer shows a key")
					}
				}
			case 403:
				checkEnvelope(t, rec, workbench.CodePermissionDenied)
			}
		})
	}
}

func checkEnvelope(t *testing.T, rec *httptest.ResponseRecorder, code string) {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if env["status"] != "error" || env["code"] != code || env["retryable"] != false {
		t.Fatalf("envelope %v, want code %s", env, code)
	}
}

func TestForwardedPrincipal(t *testing.T) {
	keys, tok := testKeys(t)
	id := func(name string) string {
		i, err := auth.ParseToken(tok[name])
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	tests := []struct {
		name     string
		required bool
		header   string
		status   int
		body     string
	}{
		{"a live key's id resolves here", true, id("read"), 200, "read"},
		{"a key revoked since is refused here", true, id("revoked"), 401, ""},
		{"an expired key is refused here", true, id("expired"), 401, ""},
		{"no principal is refused", true, "", 401, ""},
		{"the local operator is refused where keys are required", true, auth.LocalID, 401, ""},
		{"without keys required: the local operator", false, "", 200, auth.Local.Name},
		{"without keys required, the local operator named", false, auth.LocalID, 200, auth.Local.Name},
		{"without keys required, a key the forwarding node required resolves here", false, id("read"), 200, "read"},
		{"without keys required, a key revoked since is refused here", false, id("revoked"), 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &peerAuthn{keys: keys, required: tt.required, next: principalEcho}
			req := httptest.NewRequest(http.MethodGet, "/v1/agents/a/catalog", nil)
			req.Header.Set(PrincipalHeader, tt.header)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status || (tt.status == 200 && rec.Body.String() != tt.body) {
				t.Fatalf("%d %q, want %d %q", rec.Code, rec.Body, tt.status, tt.body)
			}
		})
	}
	t.Run("the forwarding node drops the secret and names the principal", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "/v1/agents/a/catalog", nil)
		req.Header.Set("Authorization", "Bearer "+tok["read"])
		p, _ := auth.Authenticate(keys, tok["read"], time.Now())
		req = req.WithContext(auth.WithPrincipal(req.Context(), p))
		forwardPrincipal(req)
		if req.Header.Get("Authorization") != "" || req.Header.Get(PrincipalHeader) != p.ID {
			t.Fatalf("forwarded headers %v", req.Header)
		}
	})
}
