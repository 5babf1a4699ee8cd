package console

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/workbench/auth"
)

// fakeDocs owns the documents of a principal bound to a tenant, as api/documents does
// (and serves it, as the OpenWOP facade does).
type fakeDocs struct{}

func (fakeDocs) Owner(r *http.Request) (string, string, bool) {
	p, ok := auth.FromContext(r.Context())
	if !ok || p.Tenant == "" {
		return "", "", false
	}
	return p.Tenant, p.Workspace, true
}

func (fakeDocs) Runners() []documents.Runner { return []documents.Runner{documents.FixtureRunner{}} }

// next stands for the node's other surfaces.
var next = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })

func serve(t *testing.T, h http.Handler, method, target string, p *auth.Principal, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	if p != nil {
		r = r.WithContext(auth.WithPrincipal(context.Background(), *p))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// embedded lists the embedded files by their console path.
func embedded(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		out[strings.TrimPrefix(p, "static/")] = b
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("embedded files: %v (%d)", err, len(out))
	}
	return out
}

func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	h := New(fakeDocs{}, fakeDocs{}, next)
	local := auth.Local
	for _, c := range []struct {
		name, method, target string
		p                    *auth.Principal
		status               int
	}{
		{"the index", "GET", "/ui/", nil, 200},
		{"a script", "GET", "/ui/app.js", nil, 200},
		{"a missing file", "GET", "/ui/missing.js", nil, 404},
		{"a write", "POST", "/ui/", nil, 405},
		{"the bare prefix", "GET", "/ui", nil, 308},
		{"the session without a principal", "GET", "/ui/session", nil, 401},
		{"the session", "GET", "/ui/session", &local, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := serve(t, h, c.method, c.target, c.p)
			if w.Code != c.status {
				t.Fatalf("%s %s: status %d, want %d", c.method, c.target, w.Code, c.status)
			}
			for k, v := range map[string]string{"Content-Security-Policy": SecurityPolicy, "X-Content-Type-Options": "nosniff",
				"Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
				if got := w.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestThePolicyAllowsNoInlineScriptAndNoFraming(t *testing.T) {
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
		if !strings.Contains(SecurityPolicy, want) {
			t.Errorf("the policy lacks %q: %s", want, SecurityPolicy)
		}
	}
	if strings.Contains(SecurityPolicy, "unsafe-") || strings.Contains(SecurityPolicy, "*") {
		t.Errorf("the policy relaxes something: %s", SecurityPolicy)
	}
}

func TestEveryEmbeddedFileIsServedWithItsType(t *testing.T) {
	h := New(nil, nil, next)
	for name, body := range embedded(t) {
		target := Prefix + name
		if name == "index.html" {
			target = Prefix
		}
		w := serve(t, h, "GET", target, nil)
		if w.Code != 200 || w.Body.String() != string(body) {
			t.Errorf("GET %s: %d, %d bytes, want 200 and the file's %d", target, w.Code, w.Body.Len(), len(body))
		}
		if ct := w.Header().Get("Content-Type"); ct != contentTypes[name[strings.LastIndex(name, "."):]] {
			t.Errorf("GET %s: Content-Type %q", target, ct)
		}
		etag := w.Header().Get("ETag")
		if w := serve(t, h, "GET", target, nil, "If-None-Match", etag); etag == "" || w.Code != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match %s: %d, want 304", target, etag, w.Code)
		}
	}
}

// refs are the local files a page or module names: src=, href= and import … from.
var refs = regexp.MustCompile(`(?:src|href)="([^"#][^"]*)"|from '\./([^']+)'`)

func TestEveryFileThePagesNameResolves(t *testing.T) {
	h := New(nil, nil, next)
	files := embedded(t)
	seen := 0
	for name, body := range files {
		for _, m := range refs.FindAllStringSubmatch(string(body), -1) {
			ref := m[1] + m[2]
			if strings.Contains(ref, "://") || strings.HasPrefix(ref, "/") {
				t.Errorf("%s names %q, not a file of the console", name, ref)
				continue
			}
			seen++
			if w := serve(t, h, "GET", Prefix+ref, nil); w.Code != 200 {
				t.Errorf("%s names %q: GET %s answers %d", name, ref, Prefix+ref, w.Code)
			}
		}
	}
	if seen < 5 {
		t.Fatalf("only %d references found: the pattern no longer matches the pages", seen)
	}
}

func TestOnlyExactFileNamesAreServed(t *testing.T) {
	h := New(nil, nil, next)
	for _, target := range []string{"/ui/../ui/app.js", "/ui/%2e%2e/ui/app.js", "/ui/static/app.js", "/ui/app.js/", "/ui//app.js",
		"/ui/index.html", "/ui/APP.JS", "/ui/app.js%00"} {
		if w := serve(t, h, "GET", target, nil); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", target, w.Code)
		}
	}
}

func TestOtherPathsGoToTheNextHandler(t *testing.T) {
	h := New(nil, nil, next)
	for _, target := range []string{"/", "/uix", "/v1/agents/a/workbenches", "/api/workbench/documents", "/healthz"} {
		if w := serve(t, h, "GET", target, nil); w.Code != http.StatusTeapot {
			t.Errorf("GET %s: %d, want the next handler's 418", target, w.Code)
		}
	}
	if !Public("/ui/") || !Public("/ui/app.js") || Public(SessionPath) || Public("/v1/agents/a/usage") {
		t.Error("Public: only the console's files are public, never its session or the API")
	}
}

// The scripts insert server text as text only, keep the key in sessionStorage, and
// reach no other origin.
func TestTheScriptsInsertNoHTMLAndKeepTheKeyInTheTab(t *testing.T) {
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|DOMParser|createContextualFragment|https?://`)
	for name, body := range embedded(t) {
		src := string(body)
		if strings.HasSuffix(name, ".js") {
			if m := forbidden.FindString(src); m != "" {
				t.Errorf("%s uses %q", name, m)
			}
		}
		if strings.HasSuffix(name, ".html") && regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]|\son[a-z]+=|style=`).MatchString(src) {
			t.Errorf("%s has an inline script, handler or style", name)
		}
	}
	api := string(embedded(t)["api.js"])
	if !strings.Contains(api, "sessionStorage.setItem(keyName") || strings.Contains(api, "localStorage") {
		t.Error("api.js must keep the key in sessionStorage and never touch localStorage")
	}
}

func TestTheSessionSaysWhoTheKeyIs(t *testing.T) {
	h := New(fakeDocs{}, fakeDocs{}, next) // the facade serves the same owners as documents
	for _, c := range []struct {
		name  string
		p     auth.Principal
		owner *Owner
	}{
		{"a key bound to a tenant owns its documents", auth.Principal{ID: "k1", Name: "reader", Agents: []string{"acme"},
			Scopes: []auth.Scope{auth.ScopeRead}, Tenant: "acme", Workspace: "main"}, &Owner{"acme", "main"}},
		{"a key of every root owns none and decides no pack", auth.Principal{ID: "k2", AllAgents: true, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}},
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := serve(t, h, "GET", SessionPath, &c.p)
			var s Session
			if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || w.Code != 200 {
				t.Fatalf("%d %v: %s", w.Code, err, w.Body)
			}
			if s.Principal.ID != c.p.ID || !slices.Equal(s.Principal.Scopes, c.p.Scopes) || s.Principal.AllAgents != c.p.AllAgents {
				t.Errorf("principal %+v, want %+v", s.Principal, c.p)
			}
			if (s.Documents == nil) != (c.owner == nil) || s.Documents != nil && *s.Documents != *c.owner {
				t.Errorf("documents %+v, want %+v", s.Documents, c.owner)
			}
			if (s.OpenWOP == nil) != (c.owner == nil) || s.OpenWOP != nil && *s.OpenWOP != *c.owner {
				t.Errorf("openwop %+v, want %+v", s.OpenWOP, c.owner)
			}
			if len(s.Runners) != 1 || s.Runners[0].ID != documents.FixtureRunnerID {
				t.Errorf("runners %+v", s.Runners)
			}
			if strings.Contains(w.Body.String(), "secret") {
				t.Errorf("the session names a secret: %s", w.Body)
			}
		})
	}
}
