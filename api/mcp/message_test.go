package mcp

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// rpcAnswer is a decoded JSON-RPC response.
type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decodeRPC decodes a JSON-RPC response, failing the test when the body is not one.
func decodeRPC(t *testing.T, what, contentType string, raw []byte) rpcAnswer {
	t.Helper()
	if !strings.HasPrefix(contentType, "application/json") {
		t.Fatalf("%s: answered %s %q, want a JSON-RPC response", what, contentType, raw)
	}
	var a rpcAnswer
	if err := json.Unmarshal(raw, &a); err != nil || a.JSONRPC != "2.0" || (a.Error == nil) == (a.Result == nil) {
		t.Fatalf("%s: %q is not a JSON-RPC response", what, raw)
	}
	return a
}

// nested returns a tools/call of workbench_create whose message nests objects and arrays
// depth levels deep in all.
func nested(depth int) string {
	const prefix = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_create","arguments":{"id":"w","x":`
	inner := depth - 3 // the message, params and arguments objects
	return prefix + strings.Repeat("[", inner) + strings.Repeat("]", inner) + `}}}`
}

func TestHTTPProtocolErrorsAreJSONRPCErrors(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	endpoint := ts.URL + "/v1/agents/a/mcp"
	cases := []struct {
		name, body string
		code       int
		id         string
		// status on the session lane and on the stateless lane
		status, statelessStatus int
	}{
		{"a body nested deeper than the SDK decodes", nested(maxNestingDepth + 1), codeParseError, "null", 400, 400},
		{"a body far deeper still", nested(100000), codeParseError, "null", 400, 400},
		{"a body that is not JSON", `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, codeParseError, "null", 400, 400},
		{"an empty body", ``, codeParseError, "null", 400, 400},
		// encoding/json would read these as U+FFFD: the path would name another file.
		{"an argument that is not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"workbench_read\",\"arguments\":{\"path\":\"a/\xff\"}}}", codeParseError, "null", 400, 400},
		{"an argument with an unpaired surrogate escape", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_read","arguments":{"path":"a/\udc00"}}}`, codeParseError, "null", 400, 400},
		// encoding/json would keep the last: a proxy or log reading the first sees another call.
		{"an argument named twice", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"workbench_read","arguments":{"path":"a","path":"b"}}}`, codeInvalidParams, "11", 200, 400},
		{"a member of the message named twice", `{"jsonrpc":"2.0","id":12,"method":"tools/list","method":"tools/call"}`, codeInvalidRequest, "12", 400, 400},
		{"the id named twice", `{"jsonrpc":"2.0","id":13,"id":14,"method":"tools/list"}`, codeInvalidRequest, "null", 400, 400},
		{"an unknown method", `{"jsonrpc":"2.0","id":1,"method":"nope/nothing","params":{}}`, codeMethodNotFound, "1", 200, 404},
		{"an unknown method without params", `{"jsonrpc":"2.0","id":"q","method":"tools/nope"}`, codeMethodNotFound, `"q"`, 200, 404},
		{"an unknown notification", `{"jsonrpc":"2.0","method":"notifications/nope"}`, codeMethodNotFound, "null", 400, 400},
		{"a notification with an id", `{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}`, codeInvalidRequest, "3", 400, 400},
		{"a request without an id", `{"jsonrpc":"2.0","method":"tools/list"}`, codeInvalidRequest, "null", 400, 400},
		{"a call without params", `{"jsonrpc":"2.0","id":4,"method":"tools/call"}`, codeInvalidParams, "4", 200, 400},
		{"params of the wrong kind", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}}`, codeInvalidParams, "5", 200, 400},
		{"an object that is no message", `{}`, codeInvalidRequest, "null", 400, 400},
		{"a batch", `[{"jsonrpc":"2.0","id":6,"method":"tools/list"}]`, codeInvalidRequest, "null", 400, 400},
	}
	for _, lane := range []struct {
		name    string
		headers []string
	}{{"session lane", nil}, {"stateless lane", []string{"Mcp-Protocol-Version", statelessProtocolVersion}}} {
		for _, c := range cases {
			t.Run(lane.name+": "+c.name, func(t *testing.T) {
				status, ct, raw := postRaw(t, endpoint, c.body, lane.headers...)
				a := decodeRPC(t, c.name, ct, raw)
				want := c.status
				if lane.headers != nil {
					want = c.statelessStatus
				}
				if status != want || a.Error == nil || a.Error.Code != c.code || string(a.ID) != c.id {
					t.Errorf("HTTP %d %s, want HTTP %d, code %d, id %s", status, raw, want, c.code, c.id)
				}
				if strings.Contains(string(raw), "Go struct") || strings.Contains(string(raw), "unmarshal") {
					t.Errorf("the answer names Go internals: %s", raw)
				}
			})
		}
	}
}

// The depth bound is the SDK's own: a message exactly maxNestingDepth deep reaches the
// tool (which refuses the unknown argument with the contract's envelope).
func TestHTTPMessageAtTheDepthBoundReachesTheTool(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	status, ct, raw := postRaw(t, ts.URL+"/v1/agents/a/mcp", nested(maxNestingDepth))
	a := decodeRPC(t, "depth bound", ct, raw)
	if status != http.StatusOK || a.Error != nil || !strings.Contains(string(a.Result), `InvalidArguments`) {
		t.Fatalf("HTTP %d %.300s, want a tool result with InvalidArguments", status, raw)
	}
}

// Every method of serverMethods is one the SDK answers: with its minimal params each gets
// a JSON-RPC response (a notification: 202 and no body), never plain text.
func TestEveryServerMethodIsAnsweredByTheSDK(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	params := map[string]string{
		"initialize":             `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`,
		"tools/call":             `{"name":"workbench_create","arguments":{"id":"w"}}`,
		"prompts/get":            `{"name":"nope"}`,
		"resources/read":         `{"uri":"file:///nope"}`,
		"resources/subscribe":    `{"uri":"file:///nope"}`,
		"resources/unsubscribe":  `{"uri":"file:///nope"}`,
		"logging/setLevel":       `{"level":"info"}`,
		"completion/complete":    `{"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"a","value":"b"}}`,
		"subscriptions/listen":   `{"notifications":{}}`,
		"notifications/progress": `{"progressToken":"t","progress":1}`,
	}
	for _, method := range slices.Sorted(func(yield func(string) bool) {
		for m := range serverMethods {
			if !yield(m) {
				return
			}
		}
	}) {
		rule := serverMethods[method]
		p := params[method]
		if p == "" {
			p = "{}"
		}
		body := `{"jsonrpc":"2.0","id":9,"method":"` + method + `","params":` + p + `}`
		if rule.notification {
			body = `{"jsonrpc":"2.0","method":"` + method + `","params":` + p + `}`
		}
		status, ct, raw := postRaw(t, ts.URL+"/v1/agents/a/mcp", body)
		if rule.notification {
			if status != http.StatusAccepted || len(raw) != 0 {
				t.Errorf("%s: HTTP %d %s %q, want 202 and no body", method, status, ct, raw)
			}
			continue
		}
		if strings.HasPrefix(ct, "text/event-stream") {
			// A stream (subscriptions/listen): its last event answers the request.
			events := strings.Split(strings.TrimSpace(string(raw)), "\n")
			data, found := strings.CutPrefix(events[len(events)-1], "data: ")
			if !found {
				t.Fatalf("%s: stream %q", method, raw)
			}
			ct, raw = "application/json", []byte(data)
		}
		a := decodeRPC(t, method, ct, raw)
		if string(a.ID) != "9" {
			t.Errorf("%s: answered id %s, want 9", method, a.ID)
		}
		if a.Error != nil && strings.Contains(a.Error.Message, "not handled") {
			t.Errorf("%s: the SDK does not handle it: %s", method, raw)
		}
	}
}
