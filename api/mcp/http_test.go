package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
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

// A message above the message limit (Options.MaxMessageBytes: 3 × the payload cap + 1 MiB)
// is answered with HTTP 413 and a JSON-RPC invalid request whose data names that limit,
// with the message's id when it comes before the payload (found by a black-box test: it
// was the PayloadTooLarge envelope, whose details.max_bytes named the payload cap). A
// body of undeclared length is read only up to the limit, so its size is not named.
func TestHTTPMessageAboveTheLimitIsAJSONRPCError(t *testing.T) {
	const payloadCap = 4096
	limit := int64(3*payloadCap + messageOverheadBytes)
	ts := newHTTPServer(t, newService(t, payloadCap))
	text := strings.Repeat("a", int(limit))
	params := `"method":"tools/call","params":{"name":"workbench_put_file","arguments":{"id":"w","section":"input","path":"x","text":"` + text + `"}}`
	for _, c := range []struct {
		name, body string
		chunked    bool
		id         any
	}{
		{"declared, id first", `{"jsonrpc":"2.0","id":1,` + params + `}`, false, float64(1)},
		{"chunked, id first", `{"jsonrpc":"2.0","id":"s-1",` + params + `}`, true, "s-1"},
		{"declared, id last", `{"jsonrpc":"2.0",` + params + `,"id":2}`, false, nil},
		{"chunked, id last", `{"jsonrpc":"2.0",` + params + `,"id":2}`, true, nil},
		{"an id the surface does not answer", `{"jsonrpc":"2.0","id":1.5,` + params + `}`, false, nil},
		{"an id named twice", `{"jsonrpc":"2.0","id":1,"id":2,` + params + `}`, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(c.body)
			if c.chunked {
				body = struct{ io.Reader }{body} // no length: sent chunked
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/v1/agents/a/mcp", body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var a struct {
				JSONRPC string `json:"jsonrpc"`
				ID      any    `json:"id"`
				Error   struct {
					Code    int            `json:"code"`
					Message string         `json:"message"`
					Data    map[string]any `json:"data"`
				} `json:"error"`
			}
			if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(raw, &a) != nil {
				t.Fatalf("HTTP %d %s: %.300s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
			}
			want := map[string]any{"limit": "max_message_bytes", "max_bytes": float64(limit), "actual_bytes": float64(len(c.body))}
			msg := fmt.Sprintf("Invalid Request: the message is %d bytes, more than the %d-byte limit of one MCP message", len(c.body), limit)
			if c.chunked {
				delete(want, "actual_bytes")
				msg = fmt.Sprintf("Invalid Request: the message is more than the %d-byte limit of one MCP message", limit)
			}
			if a.JSONRPC != "2.0" || a.ID != c.id || a.Error.Code != codeInvalidRequest || a.Error.Message != msg || !reflect.DeepEqual(a.Error.Data, want) {
				t.Errorf("answer %.400s, want id %v, -32600, %q, data %v", raw, c.id, msg, want)
			}
		})
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
