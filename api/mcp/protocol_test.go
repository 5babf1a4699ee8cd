package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// statelessList is a tools/list on the stateless lane with id (JSON text): its body and headers.
func statelessList(id string) (string, []string) {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		[]string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"}
}

// wantRPCError fails unless an answer is a JSON-RPC error of code with the id as written
// (raw bytes) and a message containing each of words, as application/json with status.
func wantRPCError(t *testing.T, what string, status int, ct string, raw []byte, wantStatus, code int, id string, words ...string) {
	t.Helper()
	var msg struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if status != wantStatus || ct != "application/json" || json.Unmarshal(raw, &msg) != nil || msg.Error.Code != code || string(msg.ID) != id {
		t.Errorf("%s: HTTP %d %s %s; want HTTP %d, code %d, id %s", what, status, ct, raw, wantStatus, code, id)
		return
	}
	for _, w := range words {
		if !strings.Contains(msg.Error.Message, w) {
			t.Errorf("%s: message %q does not say %q", what, msg.Error.Message, w)
		}
	}
}

// An integer id the SDK would not keep exactly (it holds number ids as float64 or int64)
// is refused before the SDK with an invalid request that echoes it as sent and suggests a
// string id, on both lanes; so is a number id that is not an integer. Ids within
// ±(2^53-1) are answered with the id as sent, through the SDK and the fast lane alike.
func TestHTTPNumberIDsTheSDKWouldChangeAreRefused(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	endpoint := ts.URL + "/v1/agents/a/mcp"
	for _, id := range []string{"9223372036854775807", "12345678901234567", "9007199254740993", "9007199254740992",
		"-9007199254740992", "99999999999999999999", "7.0", "1e400", "-1E2", "-0", "-0.0", "0e0", "1.0", "1e2"} {
		status, ct, raw := postRaw(t, endpoint, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		wantRPCError(t, "session-lane ping id "+id, status, ct, raw, http.StatusBadRequest, codeInvalidRequest, id, "9007199254740991", "string")
		body, hd := statelessList(id)
		status, ct, raw = postRaw(t, endpoint, body, hd...)
		wantRPCError(t, "stateless tools/list id "+id, status, ct, raw, http.StatusBadRequest, codeInvalidRequest, id, "9007199254740991", "string")
		c := laneCall("workbench_list", `{"id":"w"}`)
		c.body = strings.Replace(c.body, `"id":7`, `"id":`+id, 1)
		w := c.send(Handler(newService(t, 0), Options{}))
		wantRPCError(t, "fast-lane call id "+id, w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), http.StatusBadRequest, codeInvalidRequest, id, "9007199254740991", "string")
	}
	h := Handler(newService(t, 0), Options{})
	for _, id := range []string{"9007199254740991", "-9007199254740991", "999999999999999", "0", "-5", `"9223372036854775807"`} {
		status, _, raw := postRaw(t, endpoint, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		if status != http.StatusOK || !bytes.Contains(raw, []byte(`"id":`+id+`,`)) {
			t.Errorf("session-lane ping id %s: HTTP %d %s", id, status, raw)
		}
		body, hd := statelessList(id)
		status, _, raw = postRaw(t, endpoint, body, hd...)
		if status != http.StatusOK || !bytes.Contains(raw, []byte(`"id":`+id+`,`)) {
			t.Errorf("stateless tools/list id %s: HTTP %d %s", id, status, raw)
		}
		c := laneCall("workbench_list", `{"id":"w"}`)
		c.body = strings.Replace(c.body, `"id":7`, `"id":`+id, 1)
		if w := c.send(h); w.Code != http.StatusOK || !bytes.HasPrefix(w.Body.Bytes(), []byte(`{"jsonrpc":"2.0","id":`+id+`,"result"`)) {
			t.Errorf("call id %s: HTTP %d %s", id, w.Code, w.Body.Bytes())
		}
	}
}

// Messages the SDK would answer in plain text, or drop: a request with a null id (on
// both lanes), and members named as JSON-RPC members but for case (encoding/json matches
// names case-insensitively, the SDK does not). Each is a JSON-RPC invalid request naming
// the member and the rule; the id is echoed when the message has a usable one.
func TestHTTPMalformedMessagesAreJSONRPCErrors(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	endpoint := ts.URL + "/v1/agents/a/mcp"
	list, hd := statelessList("null")
	for _, c := range []struct {
		body    string
		headers []string
		id      string
		words   []string
	}{
		{`{"jsonrpc":"2.0","id":null,"method":"ping","params":{}}`, nil, "null", []string{"ping", "id", "not null"}},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, nil, "null", []string{"tools/list", "id", "not null"}},
		{list, hd, "null", []string{"tools/list", "id", "not null"}},
		{`{"jsonrpc":"2.0","ID":1,"method":"ping","params":{}}`, nil, "null", []string{`"ID"`, `"id"`, "case-sensitive"}},
		{`{"JSONRPC":"2.0","id":1,"method":"ping","params":{}}`, nil, "1", []string{`"JSONRPC"`, `"jsonrpc"`, "case-sensitive"}},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","Params":{}}`, nil, "1", []string{`"Params"`, `"params"`, "case-sensitive"}},
		{`{"jsonrpc":"2.0","id":1,"Method":"ping","params":{}}`, nil, "1", []string{`"Method"`, `"method"`, "case-sensitive"}},
		{`{"jsonrpc":"2.0","id":"q","method":"ping","params":{},"J\u017fonrpc":"2.0"}`, nil, `"q"`, []string{`"Jſonrpc"`, `"jsonrpc"`, "case-sensitive"}},
		{`{"jsonrpc":"2.0","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"id":2,"method":"ping","pArams":{}}`, nil, "2", []string{`"pArams"`, "case-sensitive"}},
	} {
		status, ct, raw := postRaw(t, endpoint, c.body, c.headers...)
		wantRPCError(t, c.body, status, ct, raw, http.StatusBadRequest, codeInvalidRequest, c.id, c.words...)
	}
}

// The endpoint's HTTP-level refusals (a method other than POST, a Content-Type other than
// application/json, an Accept without text/event-stream, an unknown Mcp-Protocol-Version)
// keep the SDK's statuses but are JSON-RPC errors (id null) naming the header and what it
// must be; 405 names the allowed method. Requests the SDK serves are still served.
func TestHTTPTransportRefusalsAreJSONRPCErrors(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	endpoint := ts.URL + "/v1/agents/a/mcp"
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	do := func(method, body string, headers ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, endpoint, strings.NewReader(body))
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Add(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, raw
	}
	jsonCT, both := []string{"Content-Type", "application/json"}, []string{"Accept", "application/json, text/event-stream"}
	with := func(hs ...[]string) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h...)
		}
		return out
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodPut, http.MethodPatch} {
		resp, raw := do(method, "", with(jsonCT, both)...)
		wantRPCError(t, method, resp.StatusCode, resp.Header.Get("Content-Type"), raw, http.StatusMethodNotAllowed, codeServerError, "null", "POST", method)
		if a := resp.Header.Get("Allow"); a != "POST" {
			t.Errorf("%s: Allow %q", method, a)
		}
	}
	for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "application/json-seq"} {
		resp, raw := do(http.MethodPost, list, with([]string{"Content-Type", ct}, both)...)
		wantRPCError(t, "Content-Type "+ct, resp.StatusCode, resp.Header.Get("Content-Type"), raw, http.StatusUnsupportedMediaType, codeInvalidRequest, "null", "Content-Type", "application/json")
	}
	for _, accept := range []string{"application/json", "text/event-stream", "", "text/html, application/xml"} {
		resp, raw := do(http.MethodPost, list, with(jsonCT, []string{"Accept", accept})...)
		wantRPCError(t, "Accept "+accept, resp.StatusCode, resp.Header.Get("Content-Type"), raw, http.StatusBadRequest, codeInvalidRequest, "null", "Accept", "text/event-stream", "application/json")
	}
	for _, v := range []string{"2020-01-01", "1.0", "2025-06-19"} {
		resp, raw := do(http.MethodPost, list, with(jsonCT, both, []string{"Mcp-Protocol-Version", v})...)
		wantRPCError(t, "Mcp-Protocol-Version "+v, resp.StatusCode, resp.Header.Get("Content-Type"), raw, http.StatusBadRequest, codeInvalidRequest, "null", "Mcp-Protocol-Version", v, "2025-11-25")
	}
	// What the SDK serves is served: media-type parameters, wildcards, Accept split over
	// two headers, each protocol version it speaks.
	for _, hs := range [][]string{
		with([]string{"Content-Type", "application/json; charset=utf-8"}, both),
		with(jsonCT, []string{"Accept", "*/*"}),
		with(jsonCT, []string{"Accept", "application/*;q=0.9, TEXT/*"}),
		with(jsonCT, []string{"Accept", "application/json", "Accept", "text/event-stream"}),
		with(jsonCT, both, []string{"Mcp-Protocol-Version", "2025-06-18"}),
		with(jsonCT, both, []string{"Mcp-Protocol-Version", "2025-03-26"}),
	} {
		resp, raw := do(http.MethodPost, list, hs...)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(`"workbench_list"`)) {
			t.Errorf("%v: HTTP %d %.200s", hs, resp.StatusCode, raw)
		}
	}
}

// A tool argument holding a number beyond a float64's range is InvalidArguments naming
// that member (rule "range"), not the whole arguments object, on the fast lane and
// through the SDK alike.
func TestHTTPNumberArgumentsOutOfRangeNameTheirMember(t *testing.T) {
	svc := newService(t, 0)
	h := Handler(svc, Options{})
	ts := newHTTPServer(t, svc)
	create := laneCall("workbench_create", `{"id":"w"}`)
	if w := create.send(h); w.Code != http.StatusOK {
		t.Fatalf("create: %d %s", w.Code, w.Body.Bytes())
	}
	for _, c := range []struct{ tool, args, field string }{
		{"workbench_snapshot", `{"id":"w","ttl_days":1e400}`, "ttl_days"},
		{"workbench_snapshot", `{"id":"w","ttl_days":` + strings.Repeat("9", 400) + `}`, "ttl_days"},
		{"workbench_list", `{"id":"w","limit":-1e400}`, "limit"},
		{"workbench_find", `{"id":"w","offset":1e400}`, "offset"},
		{"workbench_aggregate", `{"id":"w","measures":[{"name":"n","op":"count"}],"predicates":[{"field":"artifact.size_bytes","op":"gt","value":1},{"field":"artifact.size_bytes","op":"gt","value":-2e999}]}`, "predicates[1].value"},
	} {
		check := func(lane string, status int, raw []byte) {
			t.Helper()
			var a struct {
				Result struct {
					StructuredContent struct {
						Code    string         `json:"code"`
						Message string         `json:"message"`
						Details map[string]any `json:"details"`
					} `json:"structuredContent"`
				} `json:"result"`
			}
			sc := &a.Result.StructuredContent
			if status != http.StatusOK || json.Unmarshal(raw, &a) != nil || sc.Code != "InvalidArguments" ||
				sc.Details["field"] != c.field || sc.Details["rule"] != "range" || !strings.HasPrefix(sc.Message, c.field+": ") || !strings.Contains(sc.Message, "out of range") {
				t.Errorf("%s %s (%s): HTTP %d %.400s", c.tool, c.args, lane, status, raw)
			}
		}
		w := laneCall(c.tool, c.args).send(h)
		check("stateless", w.Code, w.Body.Bytes())
		status, _, raw := postRaw(t, ts.URL+"/v1/agents/a/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+c.tool+`","arguments":`+c.args+`}}`)
		check("session", status, raw)
	}
}

// A tool argument is judged on its number's text, not on the float64 it decodes to: a
// number that is not 0 but nearer 0 than any float64 (it would read as 0) is
// InvalidArguments naming its member with rule "range", and one that is not an integer
// where the schema takes only integers, though its float64 is one (90.0000000000000001
// would read as 90), is refused as 1.5 is (rule "type"), on the fast lane and through the
// SDK alike. Where a number is allowed such a text is refused only when it underflows;
// integers written with a fraction or an exponent (1.0, 1e1) are integers; numbers inside
// a free member (a snapshot's metadata) are data kept as written.
func TestHTTPNumberArgumentsAreJudgedOnTheirText(t *testing.T) {
	svc := newService(t, 0)
	h := Handler(svc, Options{})
	ts := newHTTPServer(t, svc)
	if w := laneCall("workbench_create", `{"id":"w"}`).send(h); w.Code != http.StatusOK {
		t.Fatalf("create: %d %s", w.Code, w.Body.Bytes())
	}
	if status, _, raw := postRaw(t, ts.URL+"/v1/agents/a/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workbench_create","arguments":{"id":"w"}}}`); status != http.StatusOK {
		t.Fatalf("create in a: %d %s", status, raw)
	}
	type answer struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Code    string         `json:"code"`
				Message string         `json:"message"`
				Details map[string]any `json:"details"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	call := func(tool, args string) (fast, session answer) {
		t.Helper()
		w := laneCall(tool, args).send(h)
		_, _, raw := postRaw(t, ts.URL+"/v1/agents/a/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`)
		if json.Unmarshal(w.Body.Bytes(), &fast) != nil || json.Unmarshal(raw, &session) != nil {
			t.Fatalf("%s %s: %s / %s", tool, args, w.Body.Bytes(), raw)
		}
		return fast, session
	}
	for _, c := range []struct{ tool, args, field, rule, words string }{
		{"workbench_list", `{"id":"w","limit":1e-400}`, "limit", "range", "1e-400"},
		{"workbench_search", `{"predicates":[{"field":"artifact.size_bytes","op":"gt","value":-0.0000e-999}]}`, "", "", ""},
		{"workbench_snapshot", `{"id":"w","ttl_days":90.0000000000000001}`, "ttl_days", "type", "must be an integer, not a number (90.0000000000000001 "},
		{"workbench_snapshot", `{"id":"w","ttl_days":9.00000000000000001e1}`, "ttl_days", "type", "integer"},
		{"workbench_read", `{"id":"w","section":"input","path":"x","offset":4503599627370496.5}`, "offset", "type", "integer"},
		{"workbench_list", `{"id":"w","at_snapshot":1.0000000000000000001}`, "at_snapshot", "anyOf", "integer"},
		{"workbench_snapshot_renew", `{"id":"w","snapshot_id":1.00000000000000000001,"ttl_days":1}`, "snapshot_id", "type", "integer or null"},
		{"workbench_search", `{"predicates":[{"field":"artifact.size_bytes","op":"gt","value":1e-400}]}`, "predicates[0].value", "range", "nearer 0"},
		{"workbench_search", `{"predicates":[{"field":"artifact.size_bytes","op":"in","value":[1,-1e-330]}]}`, "predicates[0].value[1]", "range", "nearer 0"},
		{"workbench_search", `{"predicates":[{"field":"artifact.size_bytes","op":"gt","value":1.0000000000000000001}]}`, "", "", ""},
		{"workbench_snapshot", `{"id":"w","ttl_days":1.0e1,"metadata":{"tiny":1e-400,"whole":2.0000000000000000001}}`, "", "", ""},
		{"workbench_list", `{"id":"w","limit":1e1}`, "", "", ""},
	} {
		fast, session := call(c.tool, c.args)
		for lane, a := range map[string]answer{"stateless": fast, "session": session} {
			sc := a.Result.StructuredContent
			if c.field == "" {
				if a.Result.IsError {
					t.Errorf("%s %s (%s): refused: %s", c.tool, c.args, lane, sc.Message)
				}
				continue
			}
			if sc.Code != "InvalidArguments" || sc.Details["field"] != c.field || sc.Details["rule"] != c.rule ||
				!strings.HasPrefix(sc.Message, c.field+": ") || !strings.Contains(sc.Message, c.words) {
				t.Errorf("%s %s (%s): %s %v %q; want field %s, rule %s, words %q", c.tool, c.args, lane, sc.Code, sc.Details, sc.Message, c.field, c.rule, c.words)
			}
		}
	}
}
