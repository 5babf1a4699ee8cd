package mcp

import (
	"encoding/json"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP-level refusals of the streamable endpoint. The go-sdk's handler (v1.8.0,
// StreamableHTTPHandler.ServeHTTP and serveStateless) refuses, in this order, a
// Mcp-Protocol-Version it does not know (400), a method other than POST (405; DELETE is
// served when MCPGODEBUG has allowsessionsinstateless=1), a Content-Type other than
// application/json (415) and an Accept without both application/json and
// text/event-stream (400), each in plain text. refuseTransport makes exactly those checks
// first and answers them with the same statuses as JSON-RPC errors (id null), so that
// every request the SDK serves still reaches it and no refusal is plain text.

// codeServerError is JSON-RPC's implementation-defined server error, for a request the
// endpoint does not serve at all (a method other than POST) or not yet (WriteUnavailable).
const codeServerError = -32000

// refuseTransport answers r when the SDK's handler would refuse it for its method or
// headers, and reports whether it did.
func refuseTransport(w http.ResponseWriter, r *http.Request) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && v < statelessProtocolVersion && !slices.Contains(sdk.SupportedProtocolVersions(), v) {
		writeTransportError(w, http.StatusBadRequest, codeInvalidRequest, "Invalid Request: the Mcp-Protocol-Version header "+truncateQuoted(v)+
			" is not a protocol version this server speaks: send one of "+strings.Join(sdk.SupportedProtocolVersions(), ", ")+", or leave the header out before initialize")
		return true
	}
	if r.Method != http.MethodPost && !(r.Method == http.MethodDelete && sessionsInStateless) {
		w.Header().Set("Allow", http.MethodPost)
		writeTransportError(w, http.StatusMethodNotAllowed, codeServerError, "Method Not Allowed: the MCP endpoint takes POST requests only (HTTP method "+truncateQuoted(r.Method)+")")
		return true
	}
	if r.Method != http.MethodPost {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeTransportError(w, http.StatusUnsupportedMediaType, codeInvalidRequest, "Invalid Request: the Content-Type header must be application/json")
		return true
	}
	if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
		writeTransportError(w, http.StatusBadRequest, codeInvalidRequest, "Invalid Request: the Accept header must name both application/json and text/event-stream")
		return true
	}
	return false
}

// accepts reports whether Accept values take JSON and an event stream, as the SDK reads
// them (streamableAccepts): base media types, case-insensitive, wildcards included.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for _, token := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(token), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// sessionsInStateless is whether the SDK's compatibility setting
// allowsessionsinstateless=1 is on, with which its stateless handler serves DELETE: read
// once from MCPGODEBUG (comma-separated name=value pairs, the last one of a name winning),
// as the SDK reads it when it starts (a malformed one panics there).
var sessionsInStateless = func() bool {
	on := false
	for _, kv := range strings.Split(os.Getenv("MCPGODEBUG"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == "allowsessionsinstateless" {
			on = strings.TrimSpace(v) == "1"
		}
	}
	return on
}()

// truncateQuoted is a header value or method as an answer quotes it.
func truncateQuoted(s string) string {
	b, _ := json.Marshal(truncate(s, 64))
	return string(b)
}

// WriteUnavailable answers a request for the MCP endpoint that the node cannot serve yet
// (a cluster node that is still joining its cluster, api/server) as the endpoint's other
// HTTP-level refusals are answered: a JSON-RPC error of id null, here the server error,
// "Service Unavailable: " and msg, with HTTP 503 and Retry-After: 1.
func WriteUnavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "1")
	writeTransportError(w, http.StatusServiceUnavailable, codeServerError, "Service Unavailable: "+msg)
}

// writeTransportError answers with a JSON-RPC error of id null and HTTP status.
func writeTransportError(w http.ResponseWriter, status, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b)
}
