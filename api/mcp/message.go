package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cairnstore/cairn/internal/strictjson"
)

// JSON-RPC 2.0 error codes (JSON-RPC 2.0 specification §5.1) the surface answers itself.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// maxNestingDepth is the deepest nesting of objects and arrays an inbound message may have:
// the go-sdk's decoder refuses anything deeper (its internal/json defaultMaxDepth), so a
// deeper message is answered here as the parse error it is.
const maxNestingDepth = 1000

// methodRule is how the go-sdk server (v1.8.0, server.go serverMethodInfos) accepts a
// method: as a notification (no id) or a request, and whether params may be left out.
type methodRule struct {
	notification   bool
	paramsOptional bool
}

// serverMethods are the methods the SDK's server answers; anything else is "method not
// found". TestEveryProtocolErrorIsAJSONRPCError sends each of them through the SDK, so a
// method the SDK stops answering shows up there.
var serverMethods = map[string]methodRule{
	"initialize":                       {},
	"ping":                             {paramsOptional: true},
	"server/discover":                  {paramsOptional: true},
	"subscriptions/listen":             {},
	"tools/list":                       {paramsOptional: true},
	"tools/call":                       {},
	"prompts/list":                     {paramsOptional: true},
	"prompts/get":                      {},
	"resources/list":                   {paramsOptional: true},
	"resources/templates/list":         {paramsOptional: true},
	"resources/read":                   {},
	"resources/subscribe":              {},
	"resources/unsubscribe":            {},
	"logging/setLevel":                 {},
	"completion/complete":              {},
	"notifications/initialized":        {notification: true, paramsOptional: true},
	"notifications/cancelled":          {notification: true, paramsOptional: true},
	"notifications/roots/list_changed": {notification: true, paramsOptional: true},
	"notifications/progress":           {notification: true},
}

// rpcError is a JSON-RPC error the surface answers before the SDK sees the message.
type rpcError struct {
	id      json.RawMessage // the message's id; null when it has none or it is unusable
	code    int
	message string
}

// duplicateMember is the answer to a message (valid JSON) one of whose objects names a
// member twice (strictjson.Check): encoding/json would keep the last, so an argument
// could mean one thing to a proxy or a log and another here. A member inside params (a
// tool's arguments) is invalid params, one of the message itself an invalid request;
// either names the member's path. The id is the message's, null when the id is what is
// named twice.
func duplicateMember(msg []byte, err *strictjson.Error) *rpcError {
	id := json.RawMessage("null")
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err.Field != "id" && json.Unmarshal(msg, &m) == nil && len(m.ID) > 0 {
		id = m.ID
	}
	why := fmt.Sprintf("%s appears twice in one object; name each member once", truncate(err.Field, 128))
	if strings.HasPrefix(err.Field, "params.") {
		return &rpcError{id, codeInvalidParams, "Invalid params: " + why}
	}
	return &rpcError{id, codeInvalidRequest, "Invalid Request: " + why}
}

// checkInbound reports why one inbound message (an HTTP request body) is not one the SDK
// can serve, as the JSON-RPC error to answer with; nil when it is. In order: not JSON, or
// nested deeper than maxNestingDepth (parse error); not one JSON-RPC 2.0 message (invalid
// request); a request of a method the server does not answer (method not found); a
// notification with an id or a request without one (invalid request); params missing or
// of the wrong shape (invalid params). Client responses (no method) pass. m is filled by
// the one pass over the message (inbound.go), for the fast lane.
func checkInbound(msg []byte, m *message) *rpcError {
	if !scanMessage(msg, m) {
		if e := textError(msg); e != nil {
			return e
		}
		// Not reached while scanMessage is exact (FuzzInboundMatchesTheOldChecks).
		return decodedRequest(msg).check(nil, nil)
	}
	return checkClean(msg, m)
}

// checkClean is checkInbound's verdict on a message scanMessage found clean (m): the
// JSON-RPC checks both transports make (the stdio guard calls it for each line).
func checkClean(msg []byte, m *message) *rpcError {
	q, ok := m.request()
	if !ok {
		return decodedRequest(msg).check(nil, nil)
	}
	params, _ := m.paramsMembers()
	return q.check(m.body, params)
}

// wellFormedNotification reports whether a clean message is a JSON-RPC notification: it
// passes the message checks (checkMessage's) and has a method and no id member.
func wellFormedNotification(msg []byte, m *message) bool {
	q, ok := m.request()
	if !ok {
		q = decodedRequest(msg)
	}
	return q.err == nil && q.method != nil && len(q.id) == 0
}

// textError is the answer to a message that is not clean (inbound.go): empty, not JSON, not
// Unicode text, a member named twice, or nested deeper than maxNestingDepth; nil when it
// is clean.
func textError(msg []byte) *rpcError {
	null := json.RawMessage("null")
	if len(bytes.TrimSpace(msg)) == 0 {
		return &rpcError{null, codeParseError, "Parse error: the body is empty"}
	}
	if !json.Valid(msg) {
		return &rpcError{null, codeParseError, "Parse error: the body is not valid JSON"}
	}
	if err := strictjson.Check(msg); err != nil {
		if err.Duplicate {
			return duplicateMember(msg, err)
		}
		// encoding/json would read it as U+FFFD: an argument so spelled would name
		// another file. Text is taken as sent or refused.
		return &rpcError{null, codeParseError, "Parse error: the body is not Unicode text (valid UTF-8, surrogate escapes in pairs): " + err.Error()}
	}
	if nestedDeeperThan(msg, maxNestingDepth) {
		return &rpcError{null, codeParseError, fmt.Sprintf("Parse error: the body nests objects and arrays deeper than %d levels", maxNestingDepth)}
	}
	return nil
}

// request is what the method and params checks read of a JSON-RPC message, or the
// message's refusal as one (err), or neither: a message without a method (a response to
// the server, the SDK's to judge).
type request struct {
	err    *rpcError
	id     json.RawMessage // nil when the message has none
	method []byte          // decoded; nil: none
	params []byte          // nil when the message has none
}

// decodedRequest reads a JSON message (valid, Unicode, without a member named twice) as
// encoding/json decodes it into structs: checkMessage, then the id, method and params.
func decodedRequest(msg []byte) request {
	if id, why := checkMessage(msg); why != "" {
		return request{err: &rpcError{id, codeInvalidRequest, "Invalid Request: " + why}}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method == "" {
		return request{} // a response to the server
	}
	return request{id: m.ID, method: []byte(m.Method), params: m.Params}
}

// messageFields are the members the struct decodes of checkMessage and decodedRequest
// read.
var messageFields = [...][]byte{[]byte("jsonrpc"), []byte("id"), []byte("method"), []byte("params")}

// request reads a clean message from its members as decodedRequest would decode it; ok is
// false for a message it leaves to decodedRequest: not an object, or of more members than
// the scan kept. A member named as a JSON-RPC member but for case (encoding/json would
// match it, the SDK would not) is refused, as checkMessage refuses it.
func (m *message) request() (q request, ok bool) {
	top, ok := m.topMembers()
	if !ok {
		return request{}, false
	}
	var jsonrpc, id, method, params, variant []byte
	var field string
	for _, mb := range top {
		name := mb.decodedName(m.body)
		switch string(name) {
		case "jsonrpc":
			jsonrpc = mb.value.of(m.body)
		case "id":
			id = mb.value.of(m.body)
		case "method":
			method = mb.value.of(m.body)
		case "params":
			params = mb.value.of(m.body)
		default:
			if f := caseVariant(name); f != "" && variant == nil {
				variant, field = name, f
			}
		}
	}
	// checkMessage's checks, in its order.
	invalid := func(id json.RawMessage, why string) (request, bool) {
		return request{err: &rpcError{id, codeInvalidRequest, "Invalid Request: " + why}}, true
	}
	null := json.RawMessage("null")
	if variant != nil {
		if id != nil && scannedIDValid(id) {
			return invalid(id, caseRule(variant, field))
		}
		return invalid(null, caseRule(variant, field))
	}
	if jsonrpc != nil && jsonrpc[0] != '"' && jsonrpc[0] != 'n' {
		return invalid(null, "a message must be a JSON object") // not a *string
	}
	if id != nil && !scannedIDValid(id) {
		if c := id[0]; c == '-' || c >= '0' && c <= '9' {
			return invalid(id, idRangeRule)
		}
		return invalid(null, "id must be a string, an integer or null")
	}
	answerID := null
	if id != nil {
		answerID = id
	}
	if jsonrpc == nil || jsonrpc[0] == 'n' || !bytes.Equal(decodedString(jsonrpc), []byte("2.0")) {
		return invalid(answerID, `"jsonrpc" must be "2.0"`)
	}
	if method == nil {
		return request{}, true // a response to the server
	}
	if method[0] != '"' || len(method) == 2 {
		return invalid(answerID, "method must be a non-empty string")
	}
	return request{id: id, method: decodedString(method), params: params}, true
}

// scannedIDValid is validID for the value of a clean message: a string, an integer within
// ±maxExactID (as strconv.ParseInt reads its digits) or null.
func scannedIDValid(v []byte) bool {
	switch c := v[0]; {
	case c == '"' || c == 'n':
		return true
	case c == '-' || c >= '0' && c <= '9':
		return exactInt(v)
	}
	return false
}

// decodedString is the value of a string of a clean message.
func decodedString(v []byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1]
	}
	var s string
	_ = json.Unmarshal(v, &s) // clean: it decodes
	return []byte(s)
}

// check is the method's and params' verdict on q; members are the params' members in
// body when the caller has them (inbound.go), else nil.
func (q request) check(body []byte, members []member) *rpcError {
	if q.err != nil || q.method == nil {
		return q.err
	}
	id := q.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	rule, ok := serverMethods[string(q.method)]
	if !ok {
		return &rpcError{id, codeMethodNotFound, fmt.Sprintf("Method not found: %q", truncate(string(q.method), 128))}
	}
	switch isCall := len(q.id) > 0; {
	case rule.notification && isCall:
		return &rpcError{id, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s is a notification and takes no id", string(q.method))}
	case !rule.notification && !isCall:
		return &rpcError{id, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s is a request and needs an id", string(q.method))}
	case !rule.notification && string(bytes.TrimSpace(q.id)) == "null":
		return &rpcError{id, codeInvalidRequest, fmt.Sprintf("Invalid Request: %s is a request: its id must be a string or an integer, not null", string(q.method))}
	}
	if p := bytes.TrimSpace(q.params); !rule.paramsOptional && (len(p) == 0 || string(p) == "null") {
		return &rpcError{id, codeInvalidParams, fmt.Sprintf("Invalid params: %s needs params", string(q.method))}
	}
	if why := checkParams(string(q.method), q.params, body, members); why != "" {
		return &rpcError{id, codeInvalidParams, "Invalid params: " + why}
	}
	return nil
}

// nestedDeeperThan reports whether the objects and arrays of a JSON text nest deeper than
// max, skipping the contents of strings.
func nestedDeeperThan(msg []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range msg {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// statelessLane reports whether a request speaks the stateless protocol (2026-07-28 and
// later), whose transport rules give protocol errors their own HTTP statuses (SEP-2575).
func statelessLane(r *http.Request) bool {
	return r.Header.Get("Mcp-Protocol-Version") >= statelessProtocolVersion
}

// statelessProtocolVersion is the first MCP protocol version without initialize or
// sessions: every request carries its protocol version, client info and capabilities in
// _meta.
const statelessProtocolVersion = "2026-07-28"

// httpStatus is the HTTP status of the answer to e. A message that is not one JSON-RPC
// request (unparseable, invalid, or a notification the server cannot accept) is 400. On
// the stateless lane, method not found is 404 and invalid params 400 (SEP-2575); on the
// session lane an error answering a request is an ordinary JSON-RPC response, 200, as the
// SDK answers its own.
func (e *rpcError) httpStatus(r *http.Request) int {
	switch {
	case e.code == codeParseError || e.code == codeInvalidRequest || string(e.id) == "null":
		return http.StatusBadRequest
	case !statelessLane(r):
		return http.StatusOK
	case e.code == codeMethodNotFound:
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

// write answers the request with e.
func (e *rpcError) write(w http.ResponseWriter, r *http.Request) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": e.id, "error": map[string]any{"code": e.code, "message": e.message}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.httpStatus(r))
	w.Write(b)
}
