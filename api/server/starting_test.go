package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// The starting server answers every path at once in its surface's shape: 503 with
// Retry-After and Connection: close, /healthz 200 as the node's.
func TestStartingHandlerAnswersEachSurfaceInItsShape(t *testing.T) {
	h := startingHandler("node-1")
	for _, tc := range []struct {
		method, path string
		status       int
		body         string // members of the JSON body, as a JSON object
		servedBy     bool
	}{
		{"GET", "/healthz", 200, `{"status":"ok"}`, false},
		{"GET", "/readyz", 503, `{"status":"not ready","failing":["` + startingFailing + `"]}`, false},
		{"PUT", "/v1/agents/alice/workbenches/w1/files/input/a", 503, `{"status":"error","code":"RoutingUnavailable","retryable":true}`, true},
		{"GET", "/metrics", 503, `{"status":"error","code":"RoutingUnavailable","retryable":true}`, false},
		{"GET", "/ui/", 503, `{"status":"error","code":"RoutingUnavailable","retryable":true}`, false},
		{"POST", "/mcp", 503, `{"jsonrpc":"2.0","id":null}`, true},
		{"POST", "/v1/agents/alice/mcp/cairn", 503, `{"jsonrpc":"2.0","id":null}`, true},
		{"GET", "/v1/host/workspace/files/a.txt", 503, `{"error":"service_unavailable"}`, false},
		{"GET", "/.well-known/openwop", 503, `{"error":"service_unavailable"}`, false},
		{"POST", "/api/workbench/workspaces", 503, `{"error":"Unavailable"}`, false},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader("body")))
		var got, want map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Errorf("%s %s: body %q is not JSON: %v", tc.method, tc.path, rec.Body, err)
			continue
		}
		if err := json.Unmarshal([]byte(tc.body), &want); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if gv, _ := json.Marshal(got[k]); string(gv) != mustJSON(t, v) {
				t.Errorf("%s %s: %s is %s, want %s (body %s)", tc.method, tc.path, k, gv, mustJSON(t, v), rec.Body)
			}
		}
		if rec.Code != tc.status || rec.Header().Get("Connection") != "close" {
			t.Errorf("%s %s: %d, Connection %q; want %d, close", tc.method, tc.path, rec.Code, rec.Header().Get("Connection"), tc.status)
		}
		if ra := rec.Header().Get("Retry-After"); (tc.status == 503) != (ra == "1") {
			t.Errorf("%s %s: Retry-After %q with status %d", tc.method, tc.path, ra, rec.Code)
		}
		if sb := rec.Header().Get(ServedByHeader); (sb == "node-1") != tc.servedBy {
			t.Errorf("%s %s: %s %q", tc.method, tc.path, ServedByHeader, sb)
		}
		if _, ok := got["error"].(map[string]any); strings.Contains(tc.body, "jsonrpc") && !ok {
			t.Errorf("%s %s: no JSON-RPC error object: %s", tc.method, tc.path, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/", nil))
	if rec.Header().Get("Content-Security-Policy") == "" {
		t.Error("a console path's refusal carries no Content-Security-Policy")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
