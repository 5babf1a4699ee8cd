package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A malformed line over stdio is answered with a parse error and the session goes on.
func TestStdioSessionSurvivesMalformedLines(t *testing.T) {
	svc := newService(t, 0)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeStdio(t.Context(), svc, "a", inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("session ended: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("server wrote a non-JSON line %q", lines.Bytes())
		}
		return m
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send("this is not json")
	if m := next(); m["error"].(map[string]any)["code"] != float64(-32700) || m["id"] != nil {
		t.Fatalf("parse error answer: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if m := next(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send("")
	send("{broken")
	if m := next(); m["error"].(map[string]any)["code"] != float64(-32700) {
		t.Fatalf("second parse error: %v", m)
	}
	// JSON that is not one JSON-RPC 2.0 message: -32600, and the session goes on.
	for line, wantID := range map[string]any{
		`[]`: nil, `null`: nil, `1`: nil, `"str"`: nil, `[1]`: nil, `{}`: nil,
		`[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]`:     nil,
		`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`:       float64(7),
		`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`: nil,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`:     float64(1.5), // a number id out of the rule is echoed
		`{"jsonrpc":"2.0","id":"s","method":""}`:               "s",
	} {
		send(line)
		m := next()
		if e, _ := m["error"].(map[string]any); e == nil || e["code"] != float64(-32600) || m["id"] != wantID {
			t.Fatalf("%s: answered %v, want -32600 with id %v", line, m, wantID)
		}
	}
	// Text that is not Unicode (encoding/json would read U+FFFD): a parse error, as over HTTP.
	send("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":{\"cursor\":\"\xff\"}}")
	if m := next(); m["error"].(map[string]any)["code"] != float64(codeParseError) || m["id"] != nil {
		t.Fatalf("not UTF-8: %v", m)
	}
	// A member named twice: invalid params with the request's id, as over HTTP.
	send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"workbench_read","arguments":{"id":"w","id":"v","path":"x"}}}`)
	if m := next(); m["error"].(map[string]any)["code"] != float64(codeInvalidParams) || m["id"] != float64(10) ||
		!strings.Contains(m["error"].(map[string]any)["message"].(string), "params.arguments.id appears twice") {
		t.Fatalf("a member named twice: %v", m)
	}
	// Nested deeper than the SDK decodes: a parse error, as over HTTP.
	send(nested(maxNestingDepth + 1))
	if m := next(); m["error"].(map[string]any)["code"] != float64(codeParseError) || m["id"] != nil {
		t.Fatalf("too deep: %v", m)
	}
	// An unknown method: method not found, with the request's id.
	send(`{"jsonrpc":"2.0","id":8,"method":"nope/nothing","params":{}}`)
	if m := next(); m["error"].(map[string]any)["code"] != float64(codeMethodNotFound) || m["id"] != float64(8) {
		t.Fatalf("unknown method: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	m := next()
	tools, _ := m["result"].(map[string]any)["tools"].([]any)
	if m["id"] != float64(2) || len(tools) != 18 {
		t.Fatalf("tools/list after bad lines: %v", strings.TrimSpace(string(lines.Bytes())))
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("session end: %v", err)
	}
}

// A line over stdio that the HTTP endpoint refuses as a JSON-RPC error is refused over
// stdio with the same error (code, message, and the id byte for byte), before the SDK
// sees it: a request with a null id, a member named as a JSON-RPC member but for case, a
// number id the SDK would answer under another spelling, a notification with an id,
// params of the wrong shape, an unknown method. A notification the checks refuse is
// dropped unanswered. The session goes on.
func TestStdioRefusesWhatHTTPRefuses(t *testing.T) {
	svc := newService(t, 0)
	endpoint := newHTTPServer(t, svc).URL + "/v1/agents/a/mcp"
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeStdio(t.Context(), svc, "a", inR, outW); outW.Close() }()
	answers := make(chan []byte)
	go func() {
		defer close(answers)
		lines := bufio.NewScanner(outR)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		for lines.Scan() {
			answers <- bytes.Clone(lines.Bytes())
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		for range answers {
		}
	})
	// exchange sends a line and waits for the next answer, at most answerWait: a line
	// that reaches the SDK as a notification is answered by nothing.
	const answerWait = 10 * time.Second
	exchange := func(line string) []byte {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case raw, ok := <-answers:
			if !ok {
				t.Fatalf("%s: the session ended", line)
			}
			return raw
		case <-time.After(answerWait):
			t.Fatalf("%s: no answer within %v", line, answerWait)
			return nil
		}
	}
	type answer struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if raw := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`); !bytes.Contains(raw, []byte(`"result"`)) {
		t.Fatalf("initialize: %s", raw)
	}
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":null,"method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"workbench_list","arguments":{"id":"w"}}}`,
		`{"jsonrpc":"2.0","ID":1,"method":"ping","params":{}}`,
		`{"JSONRPC":"2.0","id":1,"method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"id":2,"method":"ping","pArams":{}}`,
		`{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":1}}`,
		`{"jsonrpc":"2.0","id":6,"method":"nope/nothing"}`,
	} {
		_, _, overHTTP := postRaw(t, endpoint, line)
		overStdio := exchange(line)
		var h, s answer
		if json.Unmarshal(overHTTP, &h) != nil || h.Error == nil {
			t.Fatalf("%s: over HTTP %s, want a JSON-RPC error", line, overHTTP)
		}
		if json.Unmarshal(overStdio, &s) != nil || s.Error == nil || s.Error.Code != h.Error.Code || s.Error.Message != h.Error.Message || !bytes.Equal(s.ID, h.ID) {
			t.Errorf("%s:\n over stdio %s\n over HTTP  %s", line, overStdio, overHTTP)
		}
	}
	// Notifications the checks refuse are dropped unanswered over stdio (JSON-RPC 2.0
	// forbids answering a notification): the next answer is the ping's.
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"workbench_list"}}`,
		`{"jsonrpc":"2.0","method":"notifications/nope"}`,
	} {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	if raw := exchange(`{"jsonrpc":"2.0","id":-7,"method":"ping"}`); !bytes.HasPrefix(raw, []byte(`{"jsonrpc":"2.0","id":-7,"result":`)) {
		t.Fatalf("ping after the refusals: %s", raw)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("session end: %v", err)
	}
}

// A line above the message limit is answered as over HTTP (oversize.go): a JSON-RPC
// invalid request with the line's id when it comes before the payload, and data naming
// the limit and the line's size; the session goes on (found by a black-box test: it was
// a parse error of id null naming no limit).
func TestStdioLineAboveTheLimitIsAJSONRPCError(t *testing.T) {
	const payloadCap = 4096
	limit := 3*payloadCap + messageOverheadBytes
	svc := newService(t, payloadCap)
	s := newRawStdio(t, func(in io.Reader, out io.Writer) error { return ServeStdio(t.Context(), svc, "a", in, out) })
	params := `"method":"tools/call","params":{"name":"workbench_put_file","arguments":{"id":"w","section":"input","path":"x","text":"` +
		strings.Repeat("a", limit) + `"}}`
	for _, c := range []struct {
		line string
		id   any
	}{
		{`{"jsonrpc":"2.0","id":7,` + params + `}`, float64(7)},
		{`{"jsonrpc":"2.0","id":"s",` + params + "}\r", "s"}, // a CRLF line: its CR is not counted
		{`{"jsonrpc":"2.0",` + params + `,"id":8}`, nil},
	} {
		s.send(c.line)
		m := s.next()
		size := len(strings.TrimSuffix(c.line, "\r"))
		want := map[string]any{"limit": "max_message_bytes", "max_bytes": float64(limit), "actual_bytes": float64(size)}
		msg := fmt.Sprintf("Invalid Request: the message is %d bytes, more than the %d-byte limit of one MCP message", size, limit)
		if e, _ := m["error"].(map[string]any); m["id"] != c.id || m.rpcCode() != codeInvalidRequest || m.rpcMessage() != msg || !reflect.DeepEqual(e["data"], want) {
			t.Errorf("answer %v, want id %v, -32600, %q, data %v", m, c.id, msg, want)
		}
	}
	s.send(rawInitialize)
	if m := s.next(); m["id"] != "init" || m["result"] == nil {
		t.Errorf("initialize after the long lines: %v", m)
	}
}
