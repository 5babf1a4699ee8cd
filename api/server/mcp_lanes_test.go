package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/auth"
)

// laneRecorder sends every request with one key and records what the client sent (the
// JSON-RPC methods, the protocol version in each request's _meta and header) and whether
// any answer carried a session id.
type laneRecorder struct {
	authz string

	mu          sync.Mutex
	methods     []string
	metaVersion map[string]string // method → _meta protocol version of its last request
	header      map[string]string // method → Mcp-Protocol-Version of its last request
	sessionIDs  []string
}

func (l *laneRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if l.authz != "" {
		r.Header.Set("Authorization", l.authz)
	}
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			v, _ := m.Params.Meta[sdk.MetaKeyProtocolVersion].(string)
			l.mu.Lock()
			l.methods = append(l.methods, m.Method)
			l.metaVersion[m.Method], l.header[m.Method] = v, r.Header.Get("Mcp-Protocol-Version")
			l.mu.Unlock()
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.Header.Get("Mcp-Session-Id") != "" {
		l.mu.Lock()
		l.sessionIDs = append(l.sessionIDs, resp.Header.Get("Mcp-Session-Id"))
		l.mu.Unlock()
	}
	return resp, err
}

// The stateless lane (MCP 2026-07-28: no initialize, no session, _meta on every request)
// and the session lane (the initialize handshake of 2025-11-25 and earlier) share one
// endpoint, chosen per request by its protocol version, and keep the same rules: the key
// authenticates every request, writes are attributed to its principal, the payload cap
// holds, and no answer carries a session id.
func TestMCPStatelessAndSessionLanesKeepTheSameRules(t *testing.T) {
	cfg := testConfig(t)
	cfg.Auth = ops.AuthRequired
	cfg.MCPMaxPayloadBytes = 4096
	store, err := OpenDataDirKeys(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	authz := map[string]string{"no key": ""}
	ids := map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"writer": {Name: "writer", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}},
		"reader": {Name: "reader", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead}},
	} {
		k, token, err := auth.NewKey(spec, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Create(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		authz[name], ids[name] = "Bearer "+token, k.ID
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	_, url := serveNode(t, cfg)
	endpoint := url + "/v1/agents/a/mcp"

	connect := func(t *testing.T, key, version string) (*sdk.ClientSession, *laneRecorder, error) {
		t.Helper()
		rec := &laneRecorder{authz: authz[key], metaVersion: map[string]string{}, header: map[string]string{}}
		cs, err := sdk.NewClient(matrixClient, nil).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: rec}, DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err == nil {
			t.Cleanup(func() { cs.Close() })
		}
		return cs, rec, err
	}
	type outcome struct{ readerWrite, oversized, producer string }
	outcomes := map[string]outcome{}
	for _, lane := range []struct{ name, version string }{
		{"stateless lane", "2026-07-28"},
		{"session lane", "2025-11-25"},
	} {
		t.Run(lane.name, func(t *testing.T) {
			cs, rec, err := connect(t, "writer", lane.version)
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != lane.version {
				t.Fatalf("negotiated %s, want %s", got, lane.version)
			}
			file := map[string]any{"id": "w", "section": "input", "path": strings.ReplaceAll(lane.name, " ", "-") + ".txt"}
			put := callTool(t, cs, "workbench_put_file", with(file, "text", "hello"))
			if put.isErr {
				t.Fatalf("put_file: %s", put.text)
			}
			stat := callTool(t, cs, "workbench_stat", file)
			card, _ := stat.res["card"].(map[string]any)
			if card["producer_principal"] != ids["writer"] || card["producer_surface"] != "mcp/workbench_put_file" {
				t.Errorf("the write is attributed to %v via %v, want %s via mcp/workbench_put_file",
					card["producer_principal"], card["producer_surface"], ids["writer"])
			}
			big := callTool(t, cs, "workbench_put_file", with(file, "path", "big.txt", "text", strings.Repeat("x", 4097)))

			rcs, _, err := connect(t, "reader", lane.version)
			if err != nil {
				t.Fatal(err)
			}
			denied := callTool(t, rcs, "workbench_put_file", with(file, "path", "by-reader.txt", "text", "x"))
			if !denied.isErr {
				t.Errorf("a read-only key wrote: %s", denied.text)
			}
			if _, _, err := connect(t, "no key", lane.version); err == nil {
				t.Errorf("a client without a key connected")
			}
			outcomes[lane.name] = outcome{readerWrite: denied.code, oversized: big.code, producer: card["producer_principal"].(string)}

			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.sessionIDs) > 0 {
				t.Errorf("answers carried Mcp-Session-Id %v", rec.sessionIDs)
			}
			sentInitialize := false
			for _, m := range rec.methods {
				sentInitialize = sentInitialize || m == "initialize"
			}
			if lane.version == "2026-07-28" {
				if sentInitialize {
					t.Errorf("the stateless lane sent initialize: %v", rec.methods)
				}
				if rec.metaVersion["tools/call"] != lane.version || rec.header["tools/call"] != lane.version {
					t.Errorf("tools/call carried _meta version %q and header %q, want %s", rec.metaVersion["tools/call"], rec.header["tools/call"], lane.version)
				}
			} else if !sentInitialize {
				t.Errorf("the session lane did not initialize: %v", rec.methods)
			}
		})
	}
	if outcomes["stateless lane"] != outcomes["session lane"] || outcomes["session lane"].oversized != "PayloadTooLarge" {
		t.Errorf("the lanes differ: %+v", outcomes)
	}
}
