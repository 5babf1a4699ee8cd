package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
