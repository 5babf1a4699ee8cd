package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast lane of the Workbench profile: a tools/call on the stateless lane (MCP
// 2026-07-28) in the exact shape the go-sdk client sends it is answered here, by the
// same instrumented tool handler the SDK server holds, with the bytes and headers the SDK
// would write (TestFastLaneAnswersAsTheSDKDoes compares them); every other request, and
// every call in any other shape, goes to the SDK. The SDK's stateless lane connects a
// server session per request and decodes the message about a dozen times on its way
// (BENCHMARKS.md, "Small calls"), most of the CPU of a small call.
//
// A call takes the fast lane only when all of these hold, each one a check the SDK
// makes and passes for it:
//
//   - POST with Content-Type application/json, Accept "application/json,
//     text/event-stream", Mcp-Protocol-Version, Mcp-Method tools/call and Mcp-Name the
//     tool's name, each sent once, and no Last-Event-ID or Mcp-Session-Id;
//   - the body is one object of exactly jsonrpc "2.0", a plain id (an integer of at most
//     15 digits, or a short string of letters, digits, '.', '_' and '-'), method
//     "tools/call" and params of exactly _meta, name and arguments (an object);
//   - _meta holds exactly the protocol version (the header's), clientInfo with string name
//     and version, and clientCapabilities as the go-sdk client sends them;
//   - the tool is one of the profile's (none has x-mcp-header parameters).
//
// Keys match exactly and only once at each of those levels (the SDK's decoder is case
// sensitive; a repeated key goes to the SDK).
const fastLaneVersion = "2026-07-28"

// fastLaneCapabilities are the clientCapabilities a fast-lane call may carry, compacted:
// none, and what the go-sdk client sends.
var fastLaneCapabilities = map[string]bool{`{}`: true, `{"roots":{"listChanged":true}}`: true, `{"roots":{}}`: true}

var fastLaneID = regexp.MustCompile(`^(0|[1-9][0-9]{0,14}|"[A-Za-z0-9._-]{1,64}")$`)

// fastLane answers the fast-lane calls of one server (a profile and agent root).
type fastLane struct {
	handlers map[string]sdk.ToolHandler
	// resultMeta is the result's "_meta" member as the SDK writes it (the server's
	// implementation under io.modelcontextprotocol/serverInfo).
	resultMeta []byte
}

func newFastLane(impl *sdk.Implementation, handlers map[string]sdk.ToolHandler) *fastLane {
	meta, err := json.Marshal(map[string]any{"io.modelcontextprotocol/serverInfo": impl})
	if err != nil {
		panic(err) // an Implementation of strings always encodes
	}
	return &fastLane{handlers: handlers, resultMeta: meta}
}

// serve answers r, whose body checkInbound passed and read into m, when it is a fast-lane
// call, and reports whether it did; when it reports false it has written nothing.
func (l *fastLane) serve(w http.ResponseWriter, r *http.Request, m *message) bool {
	if l == nil || r.Method != http.MethodPost {
		return false
	}
	c, ok := l.take(r.Header, m)
	if !ok {
		return false
	}
	// From here on the call is answered here: the tool ran, and must not run twice.
	res, err := c.handler(r.Context(), &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: c.name, Arguments: c.arguments}})
	if err != nil || res == nil {
		res = errorResult(internalError()) // handlers never fail (handler)
	}
	e := resultEncoders.Get().(*resultEncoder)
	defer e.release()
	if err := l.encode(e, c.id, res); err != nil {
		e.buf.Reset()
		_ = l.encode(e, c.id, errorResult(internalError())) // the shape encode takes
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	w.Write(e.buf.Bytes())
	return true
}

// fastCall is a call the fast lane answers: its tool's handler and name, its id and its
// arguments (an object).
type fastCall struct {
	handler       sdk.ToolHandler
	name          string
	id, arguments []byte
}

// take returns the call of a POST with headers hd and a body checkInbound read into m,
// when it is one the fast lane answers.
func (l *fastLane) take(hd http.Header, m *message) (c fastCall, ok bool) {
	if !m.scanned || !only(hd, "Content-Type", "application/json") || !only(hd, "Accept", "application/json, text/event-stream") ||
		!only(hd, "Mcp-Protocol-Version", fastLaneVersion) || !only(hd, "Mcp-Method", "tools/call") ||
		len(hd.Values("Mcp-Name")) != 1 || len(hd.Values("Last-Event-ID")) != 0 || len(hd.Values("Mcp-Session-Id")) != 0 {
		return c, false
	}
	// A clean message names no member twice (inbound.go): an object of n members that
	// has each of n names has exactly those.
	b := m.body
	top, isObject := m.topMembers()
	msg, ok := exactly(b, top, isObject, "jsonrpc", "id", "method", "params")
	if !ok || string(msg[0].of(b)) != `"2.0"` || string(msg[2].of(b)) != `"tools/call"` || !fastLaneID.Match(msg[1].of(b)) {
		return c, false
	}
	paramsMembers, isObject := m.paramsMembers()
	params, ok := exactly(b, paramsMembers, isObject, "_meta", "name", "arguments")
	if !ok || b[params[2].start] != '{' {
		return c, false
	}
	name := hd.Get("Mcp-Name")
	h, known := l.handlers[name]
	if v := params[1].of(b); !known || len(v) != len(name)+2 || v[0] != '"' || string(v[1:len(v)-1]) != name {
		return c, false
	}
	var buf [4]member
	metaMembers, isObject := membersOf(b, params[0], buf[:0])
	meta, ok := exactly(b, metaMembers, isObject, "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities")
	if !ok || string(meta[0].of(b)) != `"`+fastLaneVersion+`"` {
		return c, false
	}
	if caps := meta[2].of(b); !fastLaneCapabilities[string(caps)] {
		var compact bytes.Buffer
		if json.Compact(&compact, caps) != nil || !fastLaneCapabilities[compact.String()] {
			return c, false
		}
	}
	infoMembers, isObject := membersOf(b, meta[1], buf[:0])
	info, ok := exactly(b, infoMembers, isObject, "name", "version")
	if !ok || b[info[0].start] != '"' || b[info[1].start] != '"' {
		return c, false
	}
	return fastCall{handler: h, name: name, id: msg[1].of(b), arguments: params[2].of(b)}, true
}

// encode writes into e's buffer the JSON-RPC response to call id with res, as the SDK
// encodes it (on errNotFast, part of it may be written): the
// result's members _meta, content, structuredContent, isError (when set) and resultType
// "complete", text and structured content escaped as encoding/json escapes a string and a
// RawMessage by default.
func (l *fastLane) encode(e *resultEncoder, id json.RawMessage, res *sdk.CallToolResult) error {
	if len(res.Content) != 1 || res.Meta != nil || res.InputRequests != nil {
		return errNotFast
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok || tc.Meta != nil || tc.Annotations != nil {
		return errNotFast
	}
	sc, ok := res.StructuredContent.(json.RawMessage)
	if !ok {
		return errNotFast
	}
	b := &e.buf
	b.Grow(2*len(tc.Text) + len(sc) + len(l.resultMeta) + 128)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"result":{"_meta":`)
	b.Write(l.resultMeta)
	b.WriteString(`,"content":[{"type":"text","text":`)
	// The text as json.Marshal quotes a string (HTML characters escaped).
	b.Write(appendQuoted(b.AvailableBuffer(), tc.Text))
	b.WriteString(`}],"structuredContent":`)
	// sc comes from encodeObject (handler, errorResult), whose output is compact JSON:
	// HTML-escaping it yields what json.Marshal of the RawMessage does (compact, then
	// escape), in one pass instead of a rescan of the whole value.
	json.HTMLEscape(b, sc)
	if res.IsError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteString(`,"resultType":"complete"}}`)
	return nil
}

// errNotFast is a result of another shape than errorResult's and handler's: one text
// content, structured content as raw JSON, no _meta (it never happens with this package's
// handlers).
var errNotFast = errors.New("mcp: a tool result of a shape the fast lane does not encode")

// only reports whether header name is sent exactly once, as value.
func only(hd http.Header, name, value string) bool {
	v := hd.Values(name)
	return len(v) == 1 && v[0] == value
}

// exactly returns where the values of members (of an object in b, object) named names
// are, in that order, when they have exactly those names (at most four), each once.
func exactly(b []byte, members []member, object bool, names ...string) (values [4]span, ok bool) {
	if !object || len(members) != len(names) {
		return values, false
	}
	for i, n := range names {
		if values[i], ok = findSpan(b, members, n); !ok {
			return values, false
		}
	}
	return values, true
}
