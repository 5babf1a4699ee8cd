package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/internal/httpcall"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// newService returns a Service over a real single-voter Raft replica and a local blob
// directory. maxPayload 0 keeps the default MCP payload cap (16 MiB).
func newService(t *testing.T, maxPayload int64) *workbench.Service {
	t.Helper()
	return workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, MCPMaxPayloadBytes: maxPayload}).Service
}

var testClient = &sdk.Implementation{Name: "cairn-test", Version: "0"}

// connectInMemory connects an SDK client to NewServer over in-memory transports.
func connectInMemory(t *testing.T, svc *workbench.Service, agent string) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := NewServer(svc, agent, Options{}).Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(testClient, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// newHTTPServer serves Handler the way the REST router mounts it.
func newHTTPServer(t *testing.T, svc *workbench.Service) *httptest.Server {
	t.Helper()
	h := Handler(svc, Options{})
	mux := http.NewServeMux()
	mux.Handle("/v1/agents/{agent}/mcp", h)
	mux.Handle("/v1/agents/{agent}/mcp/{profile}", h)
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// postRaw posts body to endpoint as an MCP client would, with extra headers (name, value
// pairs), and returns the answer's status, content type and body.
func postRaw(t *testing.T, endpoint, body string, headers ...string) (int, string, []byte) {
	t.Helper()
	a := httpcall.Do(t, httpcall.New(t, http.MethodPost, endpoint, strings.NewReader(body)),
		append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, headers...)...)
	return a.Status, a.Header.Get("Content-Type"), a.Body
}

// connectHTTP connects an SDK client over streamable HTTP to endpoint.
func connectHTTP(t *testing.T, endpoint string) *sdk.ClientSession {
	t.Helper()
	cs, err := sdk.NewClient(testClient, nil).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectLanes serves svc (newHTTPServer) and connects an SDK client to each of agent a's
// lanes: wb to the workbench tools (/v1/agents/a/mcp), cs to the cairn tools
// (/v1/agents/a/mcp/cairn).
func connectLanes(t *testing.T, svc *workbench.Service) (wb, cs *sdk.ClientSession) {
	t.Helper()
	ts := newHTTPServer(t, svc)
	return connectHTTP(t, ts.URL+"/v1/agents/a/mcp"), connectHTTP(t, ts.URL+"/v1/agents/a/mcp/cairn")
}

// obj is a decoded tool result or error envelope; numbers are json.Number.
type obj map[string]any

// call runs a tool and checks the result's shape: one text content holding a JSON object
// whose first key is "status", and structuredContent equal to it.
func call(t *testing.T, cs *sdk.ClientSession, tool string, args any) (obj, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents, want 1", tool, len(res.Content))
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", tool, res.Content[0])
	}
	if !strings.HasPrefix(text.Text, `{"status":`) {
		t.Errorf("%s: result does not start with status: %.80s", tool, text.Text)
	}
	var plain any
	if err := json.Unmarshal([]byte(text.Text), &plain); err != nil {
		t.Fatalf("%s: text is not JSON: %v", tool, err)
	}
	if !reflect.DeepEqual(plain, res.StructuredContent) {
		t.Errorf("%s: structuredContent differs from the text content", tool)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text.Text)))
	dec.UseNumber()
	var out obj
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	wantStatus := "success"
	if res.IsError {
		wantStatus = "error"
	}
	if out["status"] != wantStatus {
		t.Errorf("%s: status %v with isError %v", tool, out["status"], res.IsError)
	}
	return out, res.IsError
}

// ok runs a tool that must succeed.
func ok(t *testing.T, cs *sdk.ClientSession, tool string, args any) obj {
	t.Helper()
	r, isErr := call(t, cs, tool, args)
	if isErr {
		t.Fatalf("%s %v: %v: %v", tool, args, r["code"], r["message"])
	}
	return r
}

// fails runs a tool that must fail with code; it returns the envelope.
func fails(t *testing.T, cs *sdk.ClientSession, tool string, args any, code string) obj {
	t.Helper()
	r, isErr := call(t, cs, tool, args)
	if !isErr {
		t.Fatalf("%s %v: succeeded, want %s", tool, args, code)
	}
	if r["code"] != code {
		t.Fatalf("%s %v: code %v (%v), want %s", tool, args, r["code"], r["message"], code)
	}
	for _, k := range []string{"message", "retryable", "details"} {
		if _, ok := r[k]; !ok {
			t.Errorf("%s: envelope without %s", tool, k)
		}
	}
	return r
}

// invalid runs a tool that must fail with InvalidArguments naming field.
func invalid(t *testing.T, cs *sdk.ClientSession, tool string, args any, field string) obj {
	t.Helper()
	r := fails(t, cs, tool, args, workbench.CodeInvalidArguments)
	if got := r.details()["field"]; got != field {
		t.Errorf("%s %v: details.field %v (%v), want %s", tool, args, got, r["message"], field)
	}
	if msg, _ := r["message"].(string); !strings.HasPrefix(msg, field+": ") {
		t.Errorf("%s: message %q does not name %s", tool, msg, field)
	}
	if r["retryable"] != false {
		t.Errorf("%s: InvalidArguments retryable", tool)
	}
	return r
}

// card is workbench_stat's metadata card.
func (o obj) card() obj {
	c, _ := o["card"].(map[string]any)
	return obj(c)
}

func (o obj) details() obj {
	d, _ := o["details"].(map[string]any)
	return obj(d)
}

func (o obj) int(t *testing.T, key string) int64 {
	t.Helper()
	n, ok := o[key].(json.Number)
	if !ok {
		t.Fatalf("%s = %#v, not a number", key, o[key])
	}
	v, err := n.Int64()
	if err != nil {
		t.Fatalf("%s = %v: %v", key, n, err)
	}
	return v
}

func (o obj) str(key string) string {
	s, _ := o[key].(string)
	return s
}

func (o obj) list(t *testing.T, key string) []obj {
	t.Helper()
	raw, ok := o[key].([]any)
	if !ok {
		t.Fatalf("%s = %#v, not an array", key, o[key])
	}
	out := make([]obj, len(raw))
	for i, x := range raw {
		m, _ := x.(map[string]any)
		out[i] = obj(m)
	}
	return out
}

// args is a shorthand for tool arguments.
type args = map[string]any

// overlay returns a new copy of base in which each key of over is set to its value, or
// removed where that value is nil. Neither argument is changed.
func overlay(base, over args) args {
	out := make(args, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}
