package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/cairnstore/cairn/internal/strictjson"
)

// A message above Options.MaxMessageBytes (an HTTP body, a stdio line) is not read whole:
// it is answered with a JSON-RPC invalid request (-32600) whose data names the limit that
// was applied (docs/workbench.md, Common rules), over streamable HTTP with HTTP 413. A
// payload one byte above the payload cap fits far below that limit and reaches the
// Service, which answers it with the PayloadTooLarge envelope.

// idPrefixBytes is how much of the start of an oversized message is read for its id.
const idPrefixBytes = 64 << 10

// messageLimitName names the limit in the answer's data (limit).
const messageLimitName = "max_message_bytes"

// messageTooLarge is the answer to a message above the limit of max bytes: id is the
// message's (leadingID), actual its size in bytes, -1 when it is not known (an HTTP body
// of undeclared length is read only up to the limit).
type messageTooLarge struct {
	id          json.RawMessage
	actual, max int64
}

func (e messageTooLarge) answer() []byte {
	data := map[string]any{"limit": messageLimitName, "max_bytes": e.max}
	msg := fmt.Sprintf("Invalid Request: the message is more than the %d-byte limit of one MCP message", e.max)
	if e.actual >= 0 {
		data["actual_bytes"] = e.actual
		msg = fmt.Sprintf("Invalid Request: the message is %d bytes, more than the %d-byte limit of one MCP message", e.actual, e.max)
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": e.id, "error": map[string]any{"code": codeInvalidRequest, "message": msg, "data": data}})
	return b
}

// write answers an HTTP request with e and status 413.
func (e messageTooLarge) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	w.Write(e.answer())
}

// leadingID is the id of a message of which prefix is the start: the value of its
// top-level member "id" when that member is complete in prefix, comes before any member
// prefix cuts off, is named once there, and is an id the surface answers (a string of
// Unicode text, an integer within ±maxExactID written in plain digits, or null); else
// null.
func leadingID(prefix []byte) json.RawMessage {
	null := json.RawMessage("null")
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return null
	}
	var id json.RawMessage
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break // cut off: the members after it are not known
		}
		if k == "id" {
			if id != nil {
				return null // named twice: which one is meant is not ours to pick
			}
			id = v
		}
	}
	if id == nil || strictjson.Check(id) != nil || !validID(id) {
		return null
	}
	return id
}
