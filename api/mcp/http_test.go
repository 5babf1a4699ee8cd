package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHTTPPayloadOneByteAboveTheDefaultCapIsPayloadTooLarge(t *testing.T) {
	svc := newService(t, 0) // default cap: 16 MiB
	ts := newHTTPServer(t, svc)
	cs := connectHTTP(t, ts.URL+"/v1/agents/big/mcp")
	payload := make([]byte, DefaultMaxPayloadBytes+1)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	e := fails(t, cs, "workbench_put_file", args{"id": "w", "section": "input", "path": "big.bin",
		"base64": base64.StdEncoding.EncodeToString(payload)}, "PayloadTooLarge")
	if e.details().int(t, "actual_bytes") != DefaultMaxPayloadBytes+1 || e.details().int(t, "max_bytes") != DefaultMaxPayloadBytes {
		t.Errorf("details: %v", e.details())
	}
	e = fails(t, cs, "workbench_append", args{"id": "w", "section": "logs", "path": "big.log",
		"text": strings.Repeat("a", DefaultMaxPayloadBytes+1)}, "PayloadTooLarge")
	if e.details().int(t, "actual_bytes") != DefaultMaxPayloadBytes+1 {
		t.Errorf("details: %v", e.details())
	}
	fails(t, cs, "workbench_stat", args{"id": "w"}, "NotFound") // nothing was written
}

func TestHTTPInvalidAgentIsNotFound(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	for _, agent := range []string{"-dash", "has.dot", strings.Repeat("a", 129)} {
		status, ct, raw := postRaw(t, ts.URL+"/v1/agents/"+agent+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if status != http.StatusNotFound || ct != "application/json" {
			t.Errorf("%s: HTTP %d %s", agent, status, ct)
		}
		var env map[string]any
		if err := json.Unmarshal(raw, &env); err != nil || env["status"] != "error" || env["code"] != "NotFound" || env["retryable"] != false {
			t.Errorf("%s: body %s", agent, raw)
		}
		if !strings.HasPrefix(string(raw), `{"status":"error","code":"NotFound"`) {
			t.Errorf("%s: envelope key order: %s", agent, raw)
		}
	}
}

func TestHTTPBareEndpointServesTheDefaultAgent(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	r := ok(t, connectHTTP(t, ts.URL+"/mcp"), "workbench_create", args{"id": "w"})
	if r.str("path") != "/agents/default/wb/w" {
		t.Errorf("path %s", r.str("path"))
	}
	st := ok(t, connectHTTP(t, ts.URL+"/v1/agents/default/mcp"), "workbench_stat", args{"id": "w"})
	if st.card().str("kind") != "workbench" {
		t.Errorf("stat: %v", st)
	}
}

func TestHTTPSessionsAreBoundToTheirAgentRoot(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	a := connectHTTP(t, ts.URL+"/v1/agents/alice/mcp")
	b := connectHTTP(t, ts.URL+"/v1/agents/bob/mcp")
	ok(t, a, "workbench_put_file", args{"id": "w", "section": "input", "path": "secret.txt", "text": "alice's"})
	fails(t, b, "workbench_read", args{"id": "w", "section": "input", "path": "secret.txt"}, "NotFound")
	ok(t, b, "workbench_put_file", args{"id": "w", "section": "input", "path": "secret.txt", "text": "bob's"})
	r := ok(t, a, "workbench_read", args{"id": "w", "section": "input", "path": "secret.txt"})
	if r.str("path") != "/agents/alice/wb/w/input/secret.txt" || r.list(t, "items")[0]["value"] != "alice's" {
		t.Errorf("alice reads %v", r)
	}
}

func TestHTTPServesClientsOfTheHandshakeProtocol(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	for _, version := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
		cs, err := sdk.NewClient(testClient, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: ts.URL + "/v1/agents/legacy/mcp"}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Errorf("negotiated %s, want %s", got, version)
		}
		ok(t, cs, "workbench_create", args{"id": "w"})
		fails(t, cs, "workbench_nope", args{}, "UnknownTool")
		cs.Close()
	}
}

// A request body above the message limit gets the PayloadTooLarge envelope (HTTP 413), not
// the transport's plain-text 413.
func TestHTTPBodyAboveTheMessageLimitIsPayloadTooLarge(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_put_file","arguments":{"id":"w","section":"input","path":"x","text":"` +
		strings.Repeat("a", 3*DefaultMaxPayloadBytes+2<<20) + `"}}}`
	status, _, raw := postRaw(t, ts.URL+"/v1/agents/a/mcp", body)
	var env map[string]any
	if status != http.StatusRequestEntityTooLarge || json.Unmarshal(raw, &env) != nil || env["code"] != "PayloadTooLarge" {
		t.Fatalf("HTTP %d: %.200s", status, raw)
	}
	if d := env["details"].(map[string]any); d["actual_bytes"] != float64(len(body)) || d["max_bytes"] != float64(DefaultMaxPayloadBytes) {
		t.Fatalf("details: %v", d)
	}
}

// The stateless lane (MCP 2026-07-28): a request that carries its protocol version in
// _meta and the headers is served as the first and only message, without initialize, and
// no answer opens a session.
func TestHTTPStatelessLaneServesRequestsWithoutInitialize(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	endpoint := ts.URL + "/v1/agents/a/mcp"
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(id int, tool, arguments string) map[string]any {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, id, tool, arguments, meta)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			t.Errorf("%s: the answer opened session %s", tool, sid)
		}
		var a struct {
			Result struct {
				StructuredContent map[string]any `json:"structuredContent"`
			} `json:"result"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &a) != nil || a.Result.StructuredContent["status"] != "success" {
			t.Fatalf("%s: HTTP %d %.300s", tool, resp.StatusCode, raw)
		}
		return a.Result.StructuredContent
	}
	post(1, "workbench_put_file", `{"id":"w","section":"input","path":"x.txt","text":"stateless"}`)
	r := post(2, "workbench_read", `{"id":"w","section":"input","path":"x.txt"}`)
	if items, _ := r["items"].([]any); len(items) != 1 || items[0].(map[string]any)["value"] != "stateless" {
		t.Errorf("read %v", r)
	}
}

// The go-sdk client on each lane: the stateless one by default (server/discover, no
// initialize), the session one when asked for an earlier protocol version.
func TestHTTPServesTheGoSDKClientOnBothLanes(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		cs, err := sdk.NewClient(testClient, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: ts.URL + "/v1/agents/lanes/mcp"}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Errorf("negotiated %s, want %s", got, version)
		}
		ok(t, cs, "workbench_put_file", args{"id": "w", "section": "input", "path": version + ".txt", "text": version})
		fails(t, cs, "workbench_put_file", args{"id": "w", "section": "input", "path": version + ".txt", "text": "again"}, "AlreadyExists")
		cs.Close()
	}
}
