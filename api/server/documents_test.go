package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/auth"
)

// A node serves working documents for its configured owner (a node without keys):
// created from an observation of the owner's root, stored as files of the reserved
// documents workbench, which REST reads and never writes.
func TestANodeServesWorkingDocumentsInAReservedWorkbench(t *testing.T) {
	n := openReady(t, testConfig(t), testCreds)
	h := n.Handler()
	if code, b := do(t, h, http.MethodPut, "/v1/agents/default/workbenches/notes/files/input/a.md", []byte("notes")); code/100 != 2 {
		t.Fatalf("put: %d %s", code, b)
	}
	post := func(path string, v any) (int, map[string]any) {
		raw, _ := json.Marshal(v)
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	code, b := do(t, h, http.MethodGet, "/api/workbench/candidates", nil)
	var c struct {
		Candidates []struct {
			EventID string `json:"eventId"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(b, &c); code != 200 || err != nil || len(c.Candidates) == 0 {
		t.Fatalf("candidates: %d %s", code, b)
	}
	code, created := post("/api/workbench/documents", map[string]any{"originEventId": c.Candidates[0].EventID, "title": "T", "body": "B", "requestId": "r1"})
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, created)
	}
	doc := created["documentId"].(string)
	if code, b = do(t, h, http.MethodGet, "/v1/agents/default/workbenches/documents/files/default/heads/"+doc+".json", nil); code != 200 || !strings.Contains(string(b), doc) {
		t.Fatalf("REST read of the head: %d %s", code, b)
	}
	if code, b = do(t, h, http.MethodPut, "/v1/agents/default/workbenches/documents/files/default/heads/"+doc+".json", []byte("{}")); code != http.StatusForbidden {
		t.Fatalf("REST write of the reserved workbench: %d %s", code, b)
	}
}

// Working-document requests count against the principal's request rate like every
// other surface's: past it, 429 RateLimited with Retry-After.
func TestWorkingDocumentRequestsCountAgainstThePrincipalsRate(t *testing.T) {
	cfg := testConfig(t)
	cfg.PrincipalRequestsPerSecond, cfg.PrincipalRequestBurst = 0.001, 1
	h := openReady(t, cfg, testCreds).Handler()
	if code, b := do(t, h, http.MethodGet, "/api/workbench/documents", nil); code != http.StatusOK {
		t.Fatalf("first: %d %s", code, b)
	}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/api/workbench/documents", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"RateLimited"`) {
		t.Fatalf("second: %d %s", rec.Code, rec.Body)
	}
}

// The cairn MCP profile serves working documents through the same surface: the design's
// payloads, its ids and answers, its failures as the contract's codes.
func TestTheCairnMCPProfileServesWorkingDocuments(t *testing.T) {
	cs, origin, url := documentsSession(t)
	created := callTool(t, cs, "cairn_document_write", map[string]any{"action": "create",
		"payload": map[string]any{"originEventId": origin, "title": "T", "body": "b", "requestId": "r"}})
	if created.isErr || created.res["status"] != "success" {
		t.Fatalf("create: %s", created.text)
	}
	doc, v1 := created.res["documentId"].(string), created.res["versionId"].(string)
	edit := func(req string) toolAnswer {
		return callTool(t, cs, "cairn_document_write", map[string]any{"action": "edit", "document_id": doc,
			"payload": map[string]any{"baseVersionId": v1, "title": "T", "body": "b2 " + req, "requestId": req}})
	}
	if e := edit("e1"); e.isErr {
		t.Fatalf("edit: %s", e.text)
	}
	stale := edit("e2")
	details, _ := stale.res["details"].(map[string]any)
	if !stale.isErr || stale.code != "Conflict" || details["documents_error"] != "StaleBaseError" || details["head_version_id"] == nil {
		t.Fatalf("a stale edit: %s", stale.text)
	}
	if bad := callTool(t, cs, "cairn_document_write", map[string]any{"action": "create", "payload": map[string]any{"title": "T"}}); !bad.isErr ||
		bad.code != "InvalidArguments" || bad.res["details"].(map[string]any)["field"] != "originEventId" {
		t.Fatalf("a create without an origin: %s", bad.text)
	}
	shown := callTool(t, cs, "cairn_documents", map[string]any{"action": "show", "document_id": doc})
	if shown.isErr || shown.res["body"] != "b2 e1" {
		t.Fatalf("show: %s", shown.text)
	}

	// A session at another agent root than the owner's tenant (default) holds none of
	// its documents: it answers exactly as for documents that do not exist.
	other, err := sdk.NewClient(matrixClient, nil).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url + "/v1/agents/other/mcp/cairn",
		DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if list := callTool(t, other, "cairn_documents", map[string]any{"action": "list"}); list.isErr || len(list.res["documents"].([]any)) != 0 {
		t.Fatalf("another root's list: %s", list.text)
	}
	if c := callTool(t, other, "cairn_documents", map[string]any{"action": "candidates"}); c.isErr || strings.Contains(c.text, origin) {
		t.Fatalf("another root's candidates: %s", c.text)
	}
	missing := strings.Repeat("0", 64)
	sel := callTool(t, cs, "cairn_document_write", map[string]any{"action": "select", "document_id": doc,
		"payload": map[string]any{"selectedEventIds": []string{origin}, "selectedVersionIds": []string{}, "requestId": "s"}})
	head := shown.res["document"].(map[string]any)["versionId"]
	proposal := callTool(t, cs, "cairn_document_write", map[string]any{"action": "propose", "document_id": doc,
		"payload": map[string]any{"selectionId": sel.res["selectionId"], "runnerId": "fixture-deterministic@1", "baseVersionId": head, "requestId": "p"}})
	if sel.isErr || proposal.isErr {
		t.Fatalf("select: %s\npropose: %s", sel.text, proposal.text)
	}
	pid := proposal.res["proposalEventId"].(string)
	absentOrigin := "cairn:feed:999999.0"
	for _, tc := range []struct {
		name, tool string
		args       func(id string) map[string]any
	}{
		{"show", "cairn_documents", func(id string) map[string]any { return map[string]any{"action": "show", "document_id": id} }},
		{"versions", "cairn_documents", func(id string) map[string]any { return map[string]any{"action": "versions", "document_id": id} }},
		{"candidates of a document", "cairn_documents", func(id string) map[string]any { return map[string]any{"action": "candidates", "document_id": id} }},
		{"edit", "cairn_document_write", func(id string) map[string]any {
			return map[string]any{"action": "edit", "document_id": id, "payload": map[string]any{"baseVersionId": v1, "title": "T", "body": "x", "requestId": "o1"}}
		}},
		{"select", "cairn_document_write", func(id string) map[string]any {
			return map[string]any{"action": "select", "document_id": id, "payload": map[string]any{"selectedEventIds": []string{origin},
				"selectedVersionIds": []string{}, "requestId": "o2"}}
		}},
		{"propose", "cairn_document_write", func(id string) map[string]any {
			return map[string]any{"action": "propose", "document_id": id, "payload": map[string]any{"selectionId": sel.res["selectionId"],
				"runnerId": "fixture-deterministic@1", "baseVersionId": head, "requestId": "o3"}}
		}},
		{"decide", "cairn_document_write", func(id string) map[string]any {
			if id == doc {
				id = pid
			}
			return map[string]any{"action": "decide", "proposal_id": id, "payload": map[string]any{"disposition": "accept", "submissionId": "o4"}}
		}},
		{"create from the owner's origin", "cairn_document_write", func(id string) map[string]any {
			o := origin
			if id == missing {
				o = absentOrigin
			}
			return map[string]any{"action": "create", "payload": map[string]any{"originEventId": o, "title": "T", "body": "x", "requestId": "o5"}}
		}},
	} {
		t.Run("another root's "+tc.name+" answers as a missing one", func(t *testing.T) {
			theirs, none := callTool(t, other, tc.tool, tc.args(doc)), callTool(t, cs, tc.tool, tc.args(missing))
			if !theirs.isErr || theirs.text != strings.ReplaceAll(none.text, absentOrigin, origin) {
				t.Fatalf("another root: %s\nmissing: %s", theirs.text, none.text)
			}
		})
	}
	if after := callTool(t, cs, "cairn_documents", map[string]any{"action": "show", "document_id": doc}); after.isErr ||
		len(after.res["versions"].([]any)) != 2 || after.res["proposals"].([]any)[0].(map[string]any)["state"] != "pending" {
		t.Fatalf("another root's calls changed the document: %s", after.text)
	}
}

// The reserved documents workbench holds the working documents of every workspace of a
// root, so no key reaches it by name: a key bound to a workspace called "documents" (made
// before such bindings were refused) reaches nothing of it on REST or OpenWOP, the key
// route refuses to make one, and no surface but documents creates or snapshots it.
func TestNoKeyReachesTheReservedDocumentsWorkbenchByName(t *testing.T) {
	cfg := testConfig(t)
	cfg.Auth = ops.AuthRequired
	keys, err := OpenDataDirKeys(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	token := func(spec auth.KeySpec) string {
		k, tok, err := auth.NewKey(spec, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.Create(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		return "Bearer " + tok
	}
	all := []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeReview}
	admin := token(auth.KeySpec{Name: "admin", AllAgents: true, Scopes: auth.Scopes})
	owner := token(auth.KeySpec{Name: "owner", Tenant: "a", Workspace: "ws2", Scopes: all})
	named := token(auth.KeySpec{Name: "named", Tenant: "a", Workspace: "documents", Scopes: all})
	if err := keys.Close(); err != nil {
		t.Fatal(err)
	}
	_, base := serveNode(t, cfg)
	call := func(who, method, path, body string) (int, string) {
		t.Helper()
		code, _, b := send(t, method, base+path, map[string]string{"Authorization": who, "Content-Type": "application/json"}, body)
		return code, string(b)
	}

	if code, b := call(owner, http.MethodPut, "/v1/agents/a/workbenches/ws2/files/input/a.md", "secret notes"); code != http.StatusCreated {
		t.Fatalf("owner's put: %d %s", code, b)
	}
	code, b := call(owner, http.MethodGet, "/api/workbench/candidates", "")
	var c struct {
		Candidates []struct {
			EventID string `json:"eventId"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(b), &c); code != http.StatusOK || err != nil || len(c.Candidates) == 0 {
		t.Fatalf("candidates: %d %s", code, b)
	}
	if code, b := call(owner, http.MethodPost, "/api/workbench/documents", fmt.Sprintf(`{"originEventId":%q,"title":"T","body":"TOP SECRET","requestId":"r1"}`, c.Candidates[0].EventID)); code != http.StatusCreated {
		t.Fatalf("owner's create: %d %s", code, b)
	}
	if code, b := call(admin, http.MethodGet, "/v1/agents/a/workbenches/documents/list?path=ws2/heads", ""); code != http.StatusOK || !strings.Contains(b, ".json") {
		t.Fatalf("the admin reads the documents workbench: %d %s", code, b)
	}
	for _, path := range []string{"/v1/agents/a/workbenches/documents/list?path=ws2/heads", "/v1/agents/a/workbenches/documents", "/v1/host/workspace/files/ws2%2Fheads"} {
		if code, b := call(named, http.MethodGet, path, ""); code != http.StatusNotFound || strings.Contains(b, "TOP SECRET") {
			t.Errorf("a key bound to \"documents\": GET %s: %d %s", path, code, b)
		}
	}
	if code, b := call(named, http.MethodGet, "/v1/agents/a/events?follow=false", ""); strings.Contains(b, "heads/") {
		t.Errorf("a key bound to \"documents\" follows the documents' records on the feed: %d %s", code, b)
	}

	// Creating, snapshotting: only the documents surface.
	if code, b := call(admin, http.MethodPut, "/v1/agents/b/workbenches/documents", ""); code != http.StatusForbidden {
		t.Errorf("REST creates the documents workbench: %d %s", code, b)
	}
	if code, b := call(admin, http.MethodPost, "/v1/agents/a/workbenches/documents/snapshots", `{}`); code != http.StatusForbidden {
		t.Errorf("REST snapshots the documents workbench: %d %s", code, b)
	}

	// The key route refuses the binding, naming the field.
	store, err := auth.OpenFileStore(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	KeyAdminHandler(store).ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/v1/admin/keys",
		strings.NewReader(`{"name":"k","tenant":"a","workspace":"documents","scopes":["workspace:read"]}`)))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"workspace"`) {
		t.Errorf("a key bound to the documents workbench: %d %s", rec.Code, rec.Body)
	}
	if left, _ := store.List(t.Context()); len(left) != 0 {
		t.Errorf("the refused key was stored: %v", left)
	}
}

// The refusals a node makes before a request reaches a surface — no credential, a Host
// that is not the node's, a cross-origin write, a cross-site read — answer in the shape of
// the surface the route belongs to: working documents' and OpenWOP's own closed bodies.
func TestRefusalsBeforeTheSurfaceUseTheSurfacesShape(t *testing.T) {
	cfg := testConfig(t)
	cfg.Auth = ops.AuthRequired
	tok := createKeys(t, cfg.DataDir, auth.KeySpec{Name: "owner", Tenant: "a", Workspace: "w", Scopes: auth.Scopes})[0]
	_, base := serveNode(t, cfg)
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	with := func(h map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range h {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, c := range []struct {
		name, method, path string
		header             map[string]string
		status             int
		code               string
	}{
		{"documents, no key", http.MethodGet, "/api/workbench/documents", nil, http.StatusUnauthorized, "Unauthenticated"},
		{"documents, cross-origin write", http.MethodPost, "/api/workbench/documents", with(bearer, "Origin", "http://evil.example"), http.StatusForbidden, "Forbidden"},
		{"documents, foreign Host", http.MethodGet, "/api/workbench/documents", with(bearer, "Host", "evil.example"), http.StatusForbidden, "Forbidden"},
		{"documents, cross-site read", http.MethodGet, "/api/workbench/documents", with(bearer, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, "Forbidden"},
		{"OpenWOP, foreign Host", http.MethodGet, "/v1/host/workspace/files/a.md", with(bearer, "Host", "evil.example"), http.StatusForbidden, "forbidden"},
	} {
		status, _, raw := send(t, c.method, base+c.path, c.header, "{}")
		var body map[string]any
		err := json.Unmarshal(raw, &body)
		if err != nil || status != c.status || body["error"] != c.code || body["status"] != nil || body["message"] == nil {
			t.Errorf("%s: %d %v (%v), want %d with the surface's body {error: %s, message}", c.name, status, body, err, c.status, c.code)
		}
	}
}

// The working-documents tools refuse an id the action does not take, naming it, rather
// than ignore it: above all a create's document_id, which the design derives from the
// origin and request id (docs/documents.md), so a caller cannot choose it. Nothing is
// created by the refused call.
func TestTheDocumentToolsRefuseAnIDTheActionDoesNotTake(t *testing.T) {
	cs, origin, _ := documentsSession(t)
	chosen, other := strings.Repeat("a", 64), strings.Repeat("b", 64)
	create := map[string]any{"originEventId": origin, "title": "T", "body": "b", "requestId": "r"}
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"cairn_document_write", map[string]any{"action": "create", "document_id": chosen, "payload": create}, "document_id"},
		{"cairn_document_write", map[string]any{"action": "create", "proposal_id": other, "payload": create}, "proposal_id"},
		{"cairn_document_write", map[string]any{"action": "decide", "proposal_id": other, "document_id": chosen,
			"payload": map[string]any{"disposition": "reject", "submissionId": "s"}}, "document_id"},
		{"cairn_document_write", map[string]any{"action": "edit", "document_id": chosen, "proposal_id": other,
			"payload": map[string]any{"baseVersionId": other, "title": "T", "body": "b", "requestId": "e"}}, "proposal_id"},
		{"cairn_documents", map[string]any{"action": "list", "document_id": chosen}, "document_id"},
	} {
		a := callTool(t, cs, tc.tool, tc.args)
		if d, _ := a.res["details"].(map[string]any); !a.isErr || a.code != "InvalidArguments" || d["field"] != tc.field || d["rule"] != "not" ||
			!strings.Contains(a.text, "takes none") {
			t.Fatalf("%s %v: %s, want InvalidArguments naming %s", tc.tool, tc.args, a.text, tc.field)
		}
	}
	if list := callTool(t, cs, "cairn_documents", map[string]any{"action": "list"}); list.isErr || len(list.res["documents"].([]any)) != 0 {
		t.Fatalf("after the refused calls: %s, want no document", list.text)
	}
	created := callTool(t, cs, "cairn_document_write", map[string]any{"action": "create", "payload": create})
	if created.isErr || created.res["documentId"] == chosen {
		t.Fatalf("create: %s", created.text)
	}
}

// documentsSession starts a node with a file written in workbench notes of the default
// root, and returns an MCP session on its cairn profile, the file's write event (a
// document's origin candidate) and the node's URL.
func documentsSession(t *testing.T) (*sdk.ClientSession, string, string) {
	t.Helper()
	n := openReady(t, testConfig(t), testCreds)
	srv := httptest.NewServer(n.Handler())
	t.Cleanup(srv.Close)
	if code, b := do(t, n.Handler(), http.MethodPut, "/v1/agents/default/workbenches/notes/files/input/a.md", []byte("notes")); code/100 != 2 {
		t.Fatalf("put: %d %s", code, b)
	}
	cs, err := sdk.NewClient(matrixClient, nil).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: srv.URL + "/v1/agents/default/mcp/cairn",
		DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	cands := callTool(t, cs, "cairn_documents", map[string]any{"action": "candidates"})
	if cands.isErr {
		t.Fatalf("candidates: %s", cands.text)
	}
	origin := cands.res["candidates"].([]any)[0].(map[string]any)["eventId"].(string)
	return cs, origin, srv.URL
}
