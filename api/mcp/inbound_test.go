package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/internal/strictjson"
)

// The checks of an inbound message as they were before the one pass (inbound.go): the
// reference FuzzInboundMatchesTheOldChecks holds the pass to. They are the code of commit
// 8f36313 (the text checks of which textError still runs) but for one change, in refCheckParams: the old code looked for a member of the
// wrong kind by ranging over a map, so of two such members it named either; the reference
// names the first in the message, as checkParams does now. Two rules were added since,
// on purpose: a request's id may not be null (the SDK answered it in plain text), and a
// member named as a JSON-RPC member but for case is refused (in checkMessage, which the
// reference shares; encoding/json matched it and the SDK did not).

func refCheckInbound(msg []byte) *rpcError {
	null := json.RawMessage("null")
	if e := textError(msg); e != nil { // the old checks, kept for the messages the pass refuses
		return e
	}
	if id, why := checkMessage(msg); why != "" {
		return &rpcError{id, codeInvalidRequest, "Invalid Request: " + why}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method == "" {
		return nil
	}
	id := m.ID
	if len(id) == 0 {
		id = null
	}
	rule, ok := serverMethods[m.Method]
	if !ok {
		return &rpcError{id, codeMethodNotFound, fmt.Sprintf("Method not found: %q", truncate(m.Method, 128))}
	}
	switch isCall := len(m.ID) > 0; {
	case rule.notification && isCall:
		return &rpcError{id, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s is a notification and takes no id", m.Method)}
	case !rule.notification && !isCall:
		return &rpcError{id, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s is a request and needs an id", m.Method)}
	case !rule.notification && string(bytes.TrimSpace(m.ID)) == "null":
		return &rpcError{id, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s is a request: its id must be a string or an integer, not null", m.Method)}
	}
	if p := bytes.TrimSpace(m.Params); !rule.paramsOptional && (len(p) == 0 || string(p) == "null") {
		return &rpcError{id, codeInvalidParams, fmt.Sprintf("Invalid params: %s needs params", m.Method)}
	}
	if why := refCheckParams(m.Method, m.Params); why != "" {
		return &rpcError{id, codeInvalidParams, "Invalid params: " + why}
	}
	return nil
}

func refCheckParams(method string, params json.RawMessage) string {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return ""
	}
	if p[0] != '{' {
		return fmt.Sprintf("params must be an object, not %s", article(jsonKind(p)))
	}
	kinds, ok := paramKinds[method]
	if !ok {
		return ""
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(p, &members) != nil {
		return "params must be an object"
	}
	for _, name := range refKeys(p) { // was: for name, want := range kinds
		want, ok := kinds[name]
		if !ok {
			continue
		}
		v := members[name]
		if got := jsonKind(v); got != want && got != "null" {
			return fmt.Sprintf("params.%s must be %s, not %s", name, article(want), article(got))
		}
		if nested, ok := nestedKinds[method][name]; ok {
			var inner map[string]json.RawMessage
			if json.Unmarshal(v, &inner) == nil {
				for _, n := range refKeys(v) { // was: for n, w := range nested
					w, ok := nested[n]
					if !ok {
						continue
					}
					if iv, ok := inner[n]; ok {
						if got := jsonKind(iv); got != w && got != "null" {
							return fmt.Sprintf("params.%s.%s must be %s, not %s", name, n, article(w), article(got))
						}
					}
				}
			}
		}
	}
	return ""
}

// refKeys returns the member names of a JSON object in the order they appear (none for
// another value).
func refKeys(obj []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return keys
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// refFastLaneTake is the old fast lane's choice (fastLane.serve up to the tool's call) for
// a body the old checks passed: the call's id and arguments when it takes it.
func refFastLaneTake(handlers map[string]bool, hd http.Header, body []byte) (id, args []byte, ok bool) {
	if !only(hd, "Content-Type", "application/json") || !only(hd, "Accept", "application/json, text/event-stream") ||
		!only(hd, "Mcp-Protocol-Version", fastLaneVersion) || !only(hd, "Mcp-Method", "tools/call") ||
		len(hd.Values("Mcp-Name")) != 1 || len(hd.Values("Last-Event-ID")) != 0 || len(hd.Values("Mcp-Session-Id")) != 0 {
		return nil, nil, false
	}
	msg, ok := refMembers(body, "jsonrpc", "id", "method", "params")
	if !ok || string(msg["jsonrpc"]) != `"2.0"` || string(msg["method"]) != `"tools/call"` || !refFastLaneID.Match(msg["id"]) {
		return nil, nil, false
	}
	params, ok := refMembers(msg["params"], "_meta", "name", "arguments")
	if !ok || len(params["arguments"]) == 0 || params["arguments"][0] != '{' {
		return nil, nil, false
	}
	name := hd.Get("Mcp-Name")
	if !handlers[name] || string(params["name"]) != `"`+name+`"` {
		return nil, nil, false
	}
	meta, ok := refMembers(params["_meta"], "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities")
	if !ok || string(meta["io.modelcontextprotocol/protocolVersion"]) != `"`+fastLaneVersion+`"` {
		return nil, nil, false
	}
	var caps bytes.Buffer
	if json.Compact(&caps, meta["io.modelcontextprotocol/clientCapabilities"]) != nil || !refFastLaneCapabilities[caps.String()] {
		return nil, nil, false
	}
	info, ok := refMembers(meta["io.modelcontextprotocol/clientInfo"], "name", "version")
	if !ok || !refIsString(info["name"]) || !refIsString(info["version"]) {
		return nil, nil, false
	}
	return msg["id"], params["arguments"], true
}

var (
	refFastLaneCapabilities = map[string]bool{`{}`: true, `{"roots":{"listChanged":true}}`: true, `{"roots":{}}`: true}
	refFastLaneID           = regexp.MustCompile(`^(0|[1-9][0-9]{0,14}|"[A-Za-z0-9._-]{1,64}")$`)
)

func refIsString(raw json.RawMessage) bool {
	var s string
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil
}

func refMembers(raw json.RawMessage, keys ...string) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	out := make(map[string]json.RawMessage, len(keys))
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return nil, false
		}
		var v json.RawMessage
		if _, dup := out[k]; dup || dec.Decode(&v) != nil {
			return nil, false
		}
		out[k] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') || len(out) != len(keys) {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	for _, k := range keys {
		if _, ok := out[k]; !ok {
			return nil, false
		}
	}
	return out, true
}

// inboundSeeds are messages of every verdict, and the go-sdk client's calls.
func inboundSeeds() []string {
	call := laneCall("workbench_stat", `{"id":"w","section":"input","path":"a.txt"}`).body
	seeds := []string{
		call,
		strings.Replace(call, `"id":7`, `"id":"req-7"`, 1),
		strings.Replace(call, `"id":7`, `"id":7.0`, 1),
		strings.Replace(call, `"id":7`, `"id":-0`, 1),
		strings.Replace(call, `"id":7`, `"id":99999999999999999999`, 1),
		strings.Replace(call, `"id":7`, `"id":true`, 1),
		strings.Replace(call, `"id":7`, `"id":null`, 1),
		strings.Replace(call, `{"roots":{"listChanged":true}}`, "{ \"roots\" : { } }", 1),
		strings.Replace(call, `"name":"cairn-bench"`, `"name":"cairn-\u0062ench"`, 1),
		strings.Replace(call, `"name"`, `"n\u0061me"`, 1),
		strings.Replace(call, `"name"`, `"Name"`, 1),
		strings.Replace(call, `"jsonrpc"`, `"JSONRPC"`, 1),
		strings.Replace(call, `"jsonrpc"`, `"j\u017fonrpc"`, 1),
		strings.Replace(call, `"jsonrpc"`, `"jsonrpc":"1.0","JsonRPC"`, 1),
		strings.Replace(call, `"method"`, `"METHOD":5,"method"`, 1),
		strings.Replace(call, `"jsonrpc":"2.0"`, `"jsonrpc":"2\u002e0"`, 1),
		strings.Replace(call, `"jsonrpc":"2.0"`, `"jsonrpc":2`, 1),
		strings.Replace(call, `"jsonrpc":"2.0"`, `"jsonrpc":null`, 1),
		strings.Replace(call, `"tools/call"`, `"tools\/call"`, 1),
		strings.Replace(call, `"tools/call"`, `""`, 1),
		strings.Replace(call, `"tools/call"`, `null`, 1),
		strings.Replace(call, `"path":"a.txt"`, `"path":"a\ud83d\ude00 é \u00e9"`, 1),
		strings.Replace(call, `"path":"a.txt"`, `"path":"a\udc00"`, 1),
		strings.Replace(call, `"path":"a.txt"`, "\"path\":\"a\xff\"", 1),
		strings.Replace(call, `"path":"a.txt"`, `"path":"a","p\u0061th":"b"`, 1),
		strings.Replace(call, `"path":"a.txt"`, `"n":[1,-2.5e+3,0.0,1E9,true,false,null,{},[]]`, 1),
		nested(maxNestingDepth), nested(maxNestingDepth + 1), nested(20000),
		``, ` `, "\f", `[]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `7`, `"x"`, `null`, `{}`, `{"a":1,"a":2}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"`, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}x`, `{"jsonrpc":"2.0","id":01,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"nope/nothing","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/nope"}`,
		`{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[1]}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":1,"name":7,"_meta":[]}}`,
		`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"clientInfo":{"version":1,"name":2},"protocolVersion":3}}`,
		`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"clientInfo":{"title":null,"name":"x"},"capabilities":"c"}}`,
		`{"jsonrpc":"2.0","result":{}, "id":8}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"ping","params":{"_meta":{"a":1,"a":2}}}`,
		`{"jsonrpc":"2.0","id":"` + strings.Repeat("x", 200) + `","method":"` + strings.Repeat("m", 200) + `"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"\xc3\xa9\":1}",
		` {"jsonrpc" : "2.0" , "id" : 1 , "method" : "ping" , "params" : { } } ` + "\n",
		// More members than the pass keeps in place, in the message and in params.
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"method":"tools/call","params":{"name":"x"},"JSONRPC":1}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"arguments":{},"name":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"b":0}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"\u0062":0}}`,
	}
	var many strings.Builder
	many.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_stat","arguments":{`)
	for i := range 40 {
		fmt.Fprintf(&many, `"k%d":%d,`, i, i)
	}
	many.WriteString(`"k7":0}}}`)
	return append(seeds, many.String(), strings.Replace(many.String(), `"k7":0`, `"k40":0`, 1))
}

// FuzzInboundMatchesTheOldChecks holds the one pass over an inbound message to the checks
// it replaced: the message is clean exactly when json.Valid, strictjson.Check and the
// depth bound all pass it; checkInbound answers every body as they did (the same id,
// code and message, or none); and the fast lane takes exactly the calls it took (with
// Mcp-Name tool and the go-sdk client's headers), with the same id and arguments.
func FuzzInboundMatchesTheOldChecks(f *testing.F) {
	for _, s := range inboundSeeds() {
		f.Add([]byte(s), "workbench_stat")
	}
	f.Add([]byte(laneCall("workbench_list", `{"id":"w"}`).body), "workbench_list")
	known := map[string]bool{}
	handlers := map[string]sdk.ToolHandler{}
	for _, d := range tools {
		known[d.name] = true
		handlers[d.name] = func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil }
	}
	lane := newFastLane(&sdk.Implementation{Name: "t"}, handlers)
	f.Fuzz(func(t *testing.T, body []byte, tool string) {
		var m message
		clean := scanMessage(body, &m)
		wasClean := len(bytes.TrimSpace(body)) > 0 && json.Valid(body) && strictjson.Check(body) == nil && !nestedDeeperThan(body, maxNestingDepth)
		if clean != wasClean {
			t.Fatalf("%q: the pass says clean %v, the old checks %v", body, clean, wasClean)
		}
		got, want := checkInbound(body, &m), refCheckInbound(body)
		if (got == nil) != (want == nil) || got != nil && (string(got.id) != string(want.id) || got.code != want.code || got.message != want.message) {
			t.Fatalf("%q: checkInbound answers %s, the old checks %s", body, describeRPCError(got), describeRPCError(want))
		}
		if want != nil {
			return
		}
		hd := http.Header{}
		for k, v := range laneCall(tool, "{}").header {
			hd.Set(k, v)
		}
		c, took := lane.take(hd, &m)
		wantID, wantArgs, wantTook := refFastLaneTake(known, hd, body)
		if took != wantTook || took && (c.name != tool || !bytes.Equal(c.id, wantID) || !bytes.Equal(c.arguments, wantArgs)) {
			t.Fatalf("%q (tool %q): the fast lane takes %v (id %s, arguments %s), took %v (id %s, arguments %s)",
				body, tool, took, c.id, c.arguments, wantTook, wantID, wantArgs)
		}
	})
}

func describeRPCError(e *rpcError) string {
	if e == nil {
		return "nothing"
	}
	return fmt.Sprintf("id %s, %d %q", e.id, e.code, e.message)
}

// Of two params members of the wrong kind, the answer names the first in the message.
func TestParamsOfTheWrongKindNameTheFirstInTheMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":1,"name":2}}`:                                  "Invalid params: params.arguments must be an object, not a number",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":2,"arguments":1}}`:                                  "Invalid params: params.name must be a string, not a number",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"version":1,"name":2},"protocolVersion":3}}`: "Invalid params: params.clientInfo.version must be a string, not a number",
	} {
		var m message
		if e := checkInbound([]byte(body), &m); e == nil || e.message != want {
			t.Errorf("%s: answered %s, want %q", body, describeRPCError(e), want)
		}
		var out bytes.Buffer
		if passed, _ := io.ReadAll(newStdioGuard(strings.NewReader(body+"\n"), &lineWriter{w: &out}, 1<<20)); len(passed) > 0 ||
			!strings.Contains(out.String(), `"message":"`+want+`"`) {
			t.Errorf("%s: over stdio answered %s and passed %q, want %q", body, out.Bytes(), passed, want)
		}
	}
}
