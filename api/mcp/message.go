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
// of the wrong shape (invalid params). Client responses (no method) pass.
func checkInbound(msg []byte) *rpcError {
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
	if id, why := checkMessage(msg); why != "" {
		return &rpcError{id, codeInvalidRequest, "Invalid Request: " + why}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method == "" {
		return nil // a response to the server: the SDK's to judge
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
	}
	if p := bytes.TrimSpace(m.Params); !rule.paramsOptional && (len(p) == 0 || string(p) == "null") {
		return &rpcError{id, codeInvalidParams, fmt.Sprintf("Invalid params: %s needs params", m.Method)}
	}
	if why := checkParams(m.Method, m.Params); why != "" {
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
