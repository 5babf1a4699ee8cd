package mcp

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// Requests whose params have the wrong JSON kinds are answered with -32602 naming the
// member as the wire does, never the SDK's Go struct ("mcp.CallToolParamsRaw").
var badParams = []struct {
	name, msg, says string
}{
	{"a tool name that is a number", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, "params.name must be a string, not a number"},
	{"tool arguments that are a string", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workbench_list","arguments":"x"}}`, "params.arguments must be an object, not a string"},
	{"params that are a string", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"x"}`, "params must be an object, not a string"},
	{"a list cursor that is a number", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":5}}`, "params.cursor must be a string, not a number"},
	{"a protocol version that is a number", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":5}}`, "params.protocolVersion must be a string, not a number"},
	{"a client name that is an object", `{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":{}}}}`, "params.clientInfo.name must be a string, not an object"},
}

func checkRPCError(t *testing.T, raw []byte, says string) {
	t.Helper()
	var resp struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("answer %q: %v", raw, err)
	}
	if resp.Error.Code != -32602 || !strings.Contains(resp.Error.Message, says) {
		t.Fatalf("got %s, want error -32602 saying %q", raw, says)
	}
	for _, goName := range []string{"mcp.", "Go ", "struct", "Params"} {
		if strings.Contains(resp.Error.Message, goName) {
			t.Fatalf("the message names a Go type (%q): %s", goName, raw)
		}
	}
}

func TestHTTPParamsOfTheWrongKindNameTheWireMember(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	for _, tc := range badParams {
		t.Run(tc.name, func(t *testing.T) {
			_, _, raw := postRaw(t, ts.URL+"/mcp", tc.msg)
			checkRPCError(t, raw, tc.says)
		})
	}
}

func TestStdioParamsOfTheWrongKindNameTheWireMember(t *testing.T) {
	var in strings.Builder
	for _, tc := range badParams {
		in.WriteString(tc.msg + "\n")
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(t.Context(), newService(t, 0), "a", strings.NewReader(in.String()), pw)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	for _, tc := range badParams {
		if !sc.Scan() {
			t.Fatalf("%s: no answer (%v)", tc.name, sc.Err())
		}
		checkRPCError(t, sc.Bytes(), tc.says)
	}
	for sc.Scan() {
	}
	<-done
}
