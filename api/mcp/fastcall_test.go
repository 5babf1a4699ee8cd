package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fastLaneWorld is one Service with two handlers over it: as served (the fast lane on)
// and through the SDK only (the workbench profile's server cached without its lane).
type fastLaneWorld struct {
	fast, sdkOnly http.Handler
}

func newFastLaneWorld(t *testing.T) fastLaneWorld {
	t.Helper()
	svc := newService(t, 0)
	mount := func(h http.Handler) http.Handler {
		mux := http.NewServeMux()
		mux.Handle("/v1/agents/{agent}/mcp", h)
		return mux
	}
	sdkOnly := Handler(svc, Options{}).(*httpHandler)
	srv, _ := newWorkbenchServer(svc, "a", sdkOnly.opts)
	sdkOnly.servers["\x00a"] = cachedServer{srv: srv}
	return fastLaneWorld{fast: mount(Handler(svc, Options{})), sdkOnly: mount(sdkOnly)}
}

// fastLaneCall is one POST to /v1/agents/a/mcp: its body and headers.
type fastLaneCall struct {
	body   string
	header map[string]string
}

// laneCall is a tools/call of tool with arguments (JSON) as the go-sdk client sends it
// on the stateless lane, id 7.
func laneCall(tool, arguments string) fastLaneCall {
	meta := `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"cairn-bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	return fastLaneCall{
		body: fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{%s,"name":%q,"arguments":%s}}`, meta, tool, arguments),
		header: map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool},
	}
}

func (c fastLaneCall) send(h http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/agents/a/mcp", strings.NewReader(c.body))
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// sameAnswer fails unless two answers have the same status, headers and body bytes.
func sameAnswer(t *testing.T, what string, fast, viaSDK *httptest.ResponseRecorder) {
	t.Helper()
	if fast.Code != viaSDK.Code || fmt.Sprint(fast.Header()) != fmt.Sprint(viaSDK.Header()) || !bytes.Equal(fast.Body.Bytes(), viaSDK.Body.Bytes()) {
		t.Errorf("%s: fast lane answered\n%d %v\n%s\nthe SDK\n%d %v\n%s", what, fast.Code, fast.Header(), fast.Body.Bytes(),
			viaSDK.Code, viaSDK.Header(), viaSDK.Body.Bytes())
	}
}

// TestFastLaneAnswersAsTheSDKDoes checks fastcall.go's promise: a tools/call the fast lane
// answers gets the status, headers and bytes the SDK's stateless lane writes for it,
// results and tool errors alike, with text that JSON and HTML escaping touch. Reads are
// compared on one Service; writes on two Services given the same history (so that
// generations match), the first through the SDK only, the second as served.
func TestFastLaneAnswersAsTheSDKDoes(t *testing.T) {
	one := newFastLaneWorld(t)
	a, b := newFastLaneWorld(t), newFastLaneWorld(t)
	writes := []fastLaneCall{
		laneCall("workbench_put_file", `{"id":"w","section":"input","path":"notes/a.txt","text":"x <b>&amp;</b> \u2028 é \"q\"\nerror two\n"}`),
		laneCall("workbench_put_file", `{"id":"w","section":"input","path":"notes/a.txt","text":"again"}`),
		laneCall("workbench_append", `{"id":"w","section":"logs","path":"run.log","text":"line <1>\n"}`),
		laneCall("workbench_append", `{"id":"w","section":"logs","path":"run.log","base64":"bGluZSAyCg=="}`),
		laneCall("workbench_put_file", `{"id":"w","section":"nope","path":"x","text":"y"}`),
		laneCall("workbench_put_file", `{"id":"w","section":"input","path":"x","text":"y","base64":"eQ=="}`),
	}
	for i, c := range writes {
		viaSDK, fast := c.send(a.sdkOnly), c.send(b.fast)
		sameAnswer(t, fmt.Sprintf("write %d", i), fast, viaSDK)
		// The same history on one's Service, for the reads below.
		c.send(one.fast)
	}
	reads := []fastLaneCall{
		laneCall("workbench_read", `{"id":"w","section":"input","path":"notes/a.txt","limit":50}`),
		laneCall("workbench_read", `{"id":"w","section":"input","path":"notes/a.txt","format":"bytes"}`),
		laneCall("workbench_stat", `{"id":"w","section":"input","path":"notes/a.txt"}`),
		laneCall("workbench_stat", `{"id":"w","section":"input","path":"missing.txt"}`),
		laneCall("workbench_list", `{"id":"w","section":"input","path":"notes","limit":100}`),
		laneCall("workbench_grep", `{"id":"w","pattern":"error","recursive":true,"section":"input","limit":20}`),
		laneCall("workbench_search", `{"id":"w","limit":10,"predicates":[{"field":"artifact.ext","op":"eq","value":"txt"}]}`),
		laneCall("workbench_list", `{"id":"w","limit":"many"}`),
		laneCall("workbench_stat", `{"id":"w","unknown":1}`),
	}
	for i, c := range reads {
		sameAnswer(t, fmt.Sprintf("read %d (%s)", i, c.header["Mcp-Name"]), c.send(one.fast), c.send(one.sdkOnly))
	}
	// String ids, and calls the fast lane leaves to the SDK, answer as the SDK does too.
	stringID := laneCall("workbench_stat", `{"id":"w","section":"input","path":"notes/a.txt"}`)
	stringID.body = strings.Replace(stringID.body, `"id":7`, `"id":"req-7"`, 1)
	for i, c := range []fastLaneCall{stringID, withHeader(laneCall("workbench_stat", `{"id":"w"}`), "Mcp-Name", "workbench_list"),
		withBody(laneCall("workbench_stat", `{"id":"w"}`), `"id":7`, `"id":7.5`), withBody(laneCall("workbench_stat", `{"id":"w"}`), `"name"`, `"Name"`)} {
		sameAnswer(t, fmt.Sprintf("other %d", i), c.send(one.fast), c.send(one.sdkOnly))
	}
}

func withHeader(c fastLaneCall, k, v string) fastLaneCall {
	h := map[string]string{}
	for k2, v2 := range c.header {
		h[k2] = v2
	}
	h[k] = v
	c.header = h
	return c
}

func withBody(c fastLaneCall, old, repl string) fastLaneCall {
	c.body = strings.Replace(c.body, old, repl, 1)
	return c
}

// TestFastLaneTakesOnlyItsShape checks that the fast lane answers the go-sdk client's
// calls and leaves every other shape to the SDK (serve reports false, writes nothing).
func TestFastLaneTakesOnlyItsShape(t *testing.T) {
	svc := newService(t, 0)
	_, lane := newWorkbenchServer(svc, "a", Options{}.withDefaults(svc))
	base := laneCall("workbench_stat", `{"id":"w"}`)
	cases := []struct {
		name string
		call fastLaneCall
		want bool
	}{
		{"the go-sdk client's call", base, true},
		{"no capabilities", withBody(base, `{"roots":{"listChanged":true}}`, `{}`), true},
		{"a string id", withBody(base, `"id":7`, `"id":"x-1"`), true},
		{"other capabilities", withBody(base, `{"roots":{"listChanged":true}}`, `{"sampling":{}}`), false},
		{"a fractional id", withBody(base, `"id":7`, `"id":7.0`), false},
		{"a key in another case", withBody(base, `"name"`, `"Name"`), false},
		{"a repeated key", withBody(base, `"name":"workbench_stat"`, `"name":"workbench_stat","name":"workbench_stat"`), false},
		{"an unknown params member", withBody(base, `"arguments"`, `"inputResponses":{},"arguments"`), false},
		{"arguments not an object", withBody(base, `{"id":"w"}`, `[]`), false},
		{"an older protocol", withHeader(withBody(base, `"2026-07-28"`, `"2025-11-25"`), "Mcp-Protocol-Version", "2025-11-25"), false},
		{"header and _meta versions differ", withHeader(base, "Mcp-Protocol-Version", "2025-11-25"), false},
		{"another tool in Mcp-Name", withHeader(base, "Mcp-Name", "workbench_list"), false},
		{"a session id", withHeader(base, "Mcp-Session-Id", "s"), false},
		{"another Accept", withHeader(base, "Accept", "application/json"), false},
		{"a tool of another profile", withHeader(withBody(base, `"workbench_stat"`, `"cairn_history"`), "Mcp-Name", "cairn_history"), false},
		{"another method", withHeader(withBody(base, `"tools/call"`, `"tools/list"`), "Mcp-Method", "tools/list"), false},
	}
	for _, c := range cases {
		req := httptest.NewRequest(http.MethodPost, "/v1/agents/a/mcp", strings.NewReader(c.call.body))
		for k, v := range c.call.header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		// The lane sees what checkInbound read (a body it refuses, such as one naming a
		// key twice, never gets there; unscanned, it is not taken either).
		var m message
		scanMessage([]byte(c.call.body), &m)
		got := lane.serve(w, req, &m)
		if got != c.want || (!got && (w.Body.Len() > 0 || len(w.Header()) > 0)) {
			t.Errorf("%s: served %v (want %v), wrote %d %v %q", c.name, got, c.want, w.Code, w.Header(), w.Body.Bytes())
		}
	}
}

// FuzzStructuredContentEscapesAsMarshal checks the premise of fastLane.encode: for what
// encodeObject makes of any strings and numbers, HTML-escaping its output is what
// json.Marshal of it as a RawMessage (compact, then escape) gives, as the SDK encodes
// structuredContent.
func FuzzStructuredContentEscapesAsMarshal(f *testing.F) {
	f.Add("status", "ok <b>&amp;</b>", "path", "a\u2028b\u2029c\"\\\x00\xff", int64(-7))
	f.Add("", "", "x", "\t\n\r", int64(1<<62))
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, n int64) {
		m := map[string]any{k1: v1, k2: []any{v2, n, map[string]any{k2: k1, "n": float64(n) / 3}}, "entries": []map[string]any{{v1: v2}}}
		body, err := encodeObject(m, "status")
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(json.RawMessage(body))
		if err != nil {
			t.Fatalf("encodeObject made invalid JSON %q: %v", body, err)
		}
		var got bytes.Buffer
		json.HTMLEscape(&got, body)
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("HTMLEscape\n%s\nMarshal\n%s", got.Bytes(), want)
		}
	})
}
