package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
}
