package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The facade's PUT is redacted (WSR-1) on a node with no secrets file: a secret-shaped
// token is stored as its kind's marker, an ordinary identifier unchanged; the same bytes
// read back through REST.
func TestOpenWOPPutIsRedactedBeforeItIsStored(t *testing.T) {
	n := openReady(t, testConfig(t), testCreds)
	h := n.Handler()
	key := "sk-proj-" + strings.Repeat("Ab3x", 10)
	body := `{"content":"token ` + key + ` id WCT1-BLACKBOX-SECRET-7f0c1c1e-2b7e-4f0e-9a51-0c9d5a3b6e21"}`
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPut, "/v1/host/workspace/files/notes%2Fkeys.md", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	var file struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &file); err != nil {
		t.Fatal(err)
	}
	want := "token [REDACTED:openai_api_key] id WCT1-BLACKBOX-SECRET-7f0c1c1e-2b7e-4f0e-9a51-0c9d5a3b6e21"
	if file.Content != want {
		t.Fatalf("stored content %q, want %q", file.Content, want)
	}
	code, b := do(t, h, http.MethodGet, "/v1/agents/default/workbenches/default/files/notes/keys.md", nil)
	if code != http.StatusOK || string(b) != want || strings.Contains(string(b), key) {
		t.Fatalf("REST read of the same file: %d %q", code, b)
	}
}
