package documents_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/internal/httpcall"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// The tests drive the surface through HTTP against a real single-voter Cairn core
// (workbenchtest): only the principal is injected, as the node's authentication would.

var principals = map[string]auth.Principal{
	"local":    auth.Local,
	"alpha":    {ID: "key-alpha", Tenant: "alpha", Workspace: "main", Scopes: auth.Scopes},
	"beta":     {ID: "key-beta", Tenant: "beta", Workspace: "main", Scopes: auth.Scopes},
	"noreview": {ID: "key-noreview", Tenant: "alpha", Workspace: "main", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}},
	"unbound":  {ID: "key-unbound", AllAgents: true, Scopes: auth.Scopes},
}

type env struct {
	t   *testing.T
	url string
	svc *workbench.Service
	h   *documents.Handler
}

func newEnv(t *testing.T, mutate func(*documents.Options)) *env {
	t.Helper()
	return newEnvOn(t, mutate, nil)
}

// newEnvOn is newEnv whose store is wrap's (nil: the node's).
func newEnvOn(t *testing.T, mutate func(*documents.Options), wrap func(documents.Store) documents.Store) *env {
	t.Helper()
	return newEnvOver(t, workbenchtest.New(t, nodeConfig).Service, mutate, wrap)
}

var nodeConfig = workbench.Config{InlineMaxBytes: 4096, CursorKey: workbenchtest.CursorKey,
	ReservedWorkbenches: map[string]string{documents.Workbench: documents.Surface}}

// newEnvOver is the surface over the Workbench service svc.
func newEnvOver(t *testing.T, svc *workbench.Service, mutate func(*documents.Options), wrap func(documents.Store) documents.Store) *env {
	t.Helper()
	opt := documents.Options{}
	if mutate != nil {
		mutate(&opt)
	}
	var store documents.Store = server.DocumentStore{Svc: svc}
	if wrap != nil {
		store = wrap(store)
	}
	h, err := documents.New(store, opt, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := principals[r.Header.Get("X-Test-Principal")]; ok {
			r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, svc: svc, h: h}
}

type answer struct {
	status int
	body   []byte
	json   map[string]any
}

func (a answer) str(k string) string { s, _ := a.json[k].(string); return s }

func (e *env) do(who, method, path string, body any) answer {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		r = bytes.NewReader(raw)
	}
	got := httpcall.Do(e.t, httpcall.New(e.t, method, e.url+path, r), "X-Test-Principal", who)
	a := answer{status: got.Status, body: got.Body}
	_ = json.Unmarshal(got.Body, &a.json)
	checkAnswer(e.t, method, path, a.status, got.Header, got.Body)
	return a
}

// observe writes a file in agent's root as who (an observation on its change feed) and
// returns the newest candidate's eventId.
func (e *env) observe(who, agent, ws, path, text string) string {
	e.t.Helper()
	ctx := auth.WithPrincipal(context.Background(), principals[who])
	if _, err := e.svc.Writes.Write(ctx, workbench.WriteRequest{Agent: agent, Workbench: ws, Path: path, Body: strings.NewReader(text),
		CreateWorkbench: true}); err != nil {
		e.t.Fatal(err)
	}
	c := e.do(who, "GET", "/api/workbench/candidates", nil)
	list, _ := c.json["candidates"].([]any)
	if c.status != 200 || len(list) == 0 {
		e.t.Fatalf("candidates: %d %s", c.status, c.body)
	}
	first := list[0].(map[string]any)
	if first["kind"] != "observation" || !strings.Contains(first["excerpt"].(string), "path: "+path) {
		e.t.Fatalf("the newest candidate is not the write of %s: %v", path, first)
	}
	return first["eventId"].(string)
}

func hexSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// created is a document made by create.
type created struct {
	origin, docID, versionID, createdEventID string
}

func (e *env) create(who, origin, title, body, requestID string) created {
	e.t.Helper()
	a := e.do(who, "POST", "/api/workbench/documents", map[string]any{"originEventId": origin, "title": title, "body": body, "requestId": requestID})
	if a.status != http.StatusCreated {
		e.t.Fatalf("create: %d %s", a.status, a.body)
	}
	return created{origin: origin, docID: a.str("documentId"), versionID: a.str("versionId"), createdEventID: a.str("createdEventId")}
}

func (e *env) document(who, id string) map[string]any {
	e.t.Helper()
	a := e.do(who, "GET", "/api/workbench/documents/"+id, nil)
	if a.status != 200 {
		e.t.Fatalf("get document: %d %s", a.status, a.body)
	}
	return a.json
}

func events(doc map[string]any) []map[string]any {
	var out []map[string]any
	for _, e := range doc["events"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func payload(ev map[string]any) map[string]any { return ev["payload"].(map[string]any) }

// content is a version's content as the design writes it: the title as JSON.stringify
// writes a string (no HTML escaping).
func content(title, body string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(title)
	return "---\ntitle: " + strings.TrimSuffix(b.String(), "\n") + "\n---\n" + body
}
