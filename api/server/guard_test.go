package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// send sends one request with headers to base+path and returns status, header and body.
func send(t *testing.T, method, url string, header map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func wantForbidden(t *testing.T, what string, code int, body []byte, field string) {
	t.Helper()
	var e struct {
		Code    string         `json:"code"`
		Details map[string]any `json:"details"`
	}
	if code != http.StatusForbidden || json.Unmarshal(body, &e) != nil || e.Code != "InvalidArguments" || e.Details["field"] != field {
		t.Errorf("%s: got %d %s, want 403 InvalidArguments naming %s", what, code, body, field)
	}
}

func TestTheClientListenerAnswersOnlyItsOwnHostNames(t *testing.T) {
	cfg := testConfig(t)
	cfg.AllowedHosts = "cairn.example"
	_, base := serveNode(t, cfg)
	port := base[strings.LastIndexByte(base, ':')+1:]
	mcpCall := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	mcpHeaders := func(host string) map[string]string {
		return map[string]string{"Host": host, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	}
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example"} {
		code, _, b := send(t, http.MethodGet, base+"/v1/agents/a/workbenches/w", map[string]string{"Host": host}, "")
		wantForbidden(t, "REST with Host "+host, code, b, "Host")
		code, _, b = send(t, http.MethodPost, base+"/mcp", mcpHeaders(host), mcpCall)
		wantForbidden(t, "MCP with Host "+host, code, b, "Host")
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "cairn.example", "cairn.example:" + port} {
		if code, _, b := send(t, http.MethodGet, base+"/healthz", map[string]string{"Host": host}, ""); code != http.StatusOK {
			t.Errorf("REST with Host %s: %d %s, want 200", host, code, b)
		}
		if code, _, b := send(t, http.MethodPost, base+"/mcp", mcpHeaders(host), mcpCall); code != http.StatusOK {
			t.Errorf("MCP with Host %s: %d %s, want 200", host, code, b)
		}
	}
}

func TestCrossOriginStateChangesAreRefused(t *testing.T) {
	_, base := serveNode(t, testConfig(t))
	file := base + "/v1/agents/a/workbenches/w/files/input/notes.txt"
	if code, _, b := send(t, http.MethodPut, file, nil, "hello"); code != http.StatusCreated {
		t.Fatalf("put: %d %s", code, b)
	}
	crossSite := map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
	originOnly := map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}
	for _, tc := range []struct {
		name, method, path, body string
	}{
		{"an append", http.MethodPost, "/v1/agents/a/workbenches/w/files/input/notes.txt?append", " world"},
		{"a put", http.MethodPut, "/v1/agents/a/workbenches/w/files/input/notes.txt", "bye"},
		{"a snapshot", http.MethodPost, "/v1/agents/a/workbenches/w/snapshots", `{"name":"s"}`},
		{"a commit", http.MethodPost, "/v1/agents/a/workbenches/w/commit", `{}`},
		{"a restore", http.MethodPost, "/v1/agents/a/workbenches/w/restore", `{}`},
		{"an MCP call", http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	} {
		for name, h := range map[string]map[string]string{"Sec-Fetch-Site cross-site": crossSite, "a foreign Origin": originOnly} {
			code, _, b := send(t, tc.method, base+tc.path, h, tc.body)
			wantForbidden(t, tc.name+" with "+name, code, b, "Origin")
		}
	}
	if _, _, b := send(t, http.MethodGet, file, nil, ""); string(b) != "hello" {
		t.Fatalf("the file after refused cross-origin writes: %q, want it unchanged", b)
	}
	sameOrigin := map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin", "Content-Type": "text/plain"}
	if code, _, b := send(t, http.MethodPost, file+"?append", sameOrigin, " world"); code != http.StatusOK {
		t.Fatalf("a same-origin append: %d %s", code, b)
	}
}

func TestStoredContentIsServedInert(t *testing.T) {
	_, base := serveNode(t, testConfig(t))
	dir := base + "/v1/agents/a/workbenches/w/files/outputs/"
	for name, ct := range map[string]string{"page.html": "text/html; charset=utf-8", "pic.svg": "image/svg+xml", "app.js": "text/javascript", "notes.txt": "text/plain"} {
		if code, _, b := send(t, http.MethodPut, dir+name, map[string]string{"Content-Type": ct}, "<script>alert(1)</script>"); code != http.StatusCreated {
			t.Fatalf("put %s: %d %s", name, code, b)
		}
	}
	for _, tc := range []struct {
		name, query, disposition string
	}{
		{"page.html", "", `attachment; filename=page.html`},
		{"pic.svg", "", `attachment; filename=pic.svg`},
		{"app.js", "", `attachment; filename=app.js`},
		{"page.html", "?disposition=inline", ""},
		{"notes.txt", "", ""},
	} {
		code, h, _ := send(t, http.MethodGet, dir+tc.name+tc.query, nil, "")
		if code != http.StatusOK || h.Get("Content-Security-Policy") != "sandbox" || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("Content-Disposition") != tc.disposition {
			t.Errorf("GET %s%s: %d, CSP %q, nosniff %q, Content-Disposition %q; want 200, sandbox, nosniff, %q", tc.name, tc.query, code,
				h.Get("Content-Security-Policy"), h.Get("X-Content-Type-Options"), h.Get("Content-Disposition"), tc.disposition)
		}
	}
	code, _, b := send(t, http.MethodGet, dir+"page.html?disposition=open", nil, "")
	var e struct {
		Code    string         `json:"code"`
		Details map[string]any `json:"details"`
	}
	if code != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || e.Details["field"] != "disposition" {
		t.Errorf("an unknown disposition: %d %s, want 400 naming disposition", code, b)
	}
}
