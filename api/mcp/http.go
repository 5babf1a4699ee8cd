package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// maxCachedServers bounds the per-agent server cache of Handler. Servers hold no session
// state (the handler is stateless), so evicting one only costs rebuilding it.
const maxCachedServers = 1024

// Handler returns the streamable HTTP MCP endpoint (workbench/auth/doc.go). The caller mounts it at
// `/v1/agents/{agent}/mcp` and at `/mcp`: the agent root is r.PathValue("agent"), or
// DefaultAgent when the route has none. An agent id that fails meta.ValidateName is answered
// with HTTP 404 and the contract's NotFound envelope, exactly like a root the caller may not
// see (workbench/auth/doc.go).
//
// The endpoint serves both protocol lanes the go-sdk offers (StreamableHTTPOptions.Stateless),
// chosen per request by its protocol version, as the SDK reads it:
//
//   - the stateless lane (MCP 2026-07-28 and later): no initialize and no session; every
//     request names its protocol version, client info and capabilities in params._meta
//     and the version again in the Mcp-Protocol-Version header (a client learns the
//     server's with server/discover);
//   - the session lane (2025-11-25 and earlier): the initialize handshake is answered and
//     its protocol version negotiated; later requests may send Mcp-Protocol-Version.
//
// Neither lane keeps state on the server: no Mcp-Session-Id is issued (the session lane's
// specification makes it optional), every POST carries its own request, and GET (a
// standalone event stream) is 405, as any method but POST (transport.go: the SDK's
// refusals of a method or header keep their statuses and are JSON-RPC errors). So a session binds nothing: every request of either
// lane acts for the principal of its own request context (auth.FromContext, set by the
// node's key middleware), the Service decides what it may see and do, and the same limits
// hold; a session id sent by another principal is what an unknown one is, ignored
// (api/server's authmatrix and lanes tests check this through the assembled node). A
// stateful server (sessions held in memory, with the principal of the request that opened
// them) would have to refuse the stateless lane. Responses are application/json.
// Request bodies up to opts.MaxMessageBytes are read, so an oversized payload reaches the
// Service and is answered with PayloadTooLarge; a body above that is answered with a
// JSON-RPC invalid request naming the limit, HTTP 413 (oversize.go).
func Handler(svc *workbench.Service, opts Options) http.Handler {
	opts = opts.withDefaults(svc)
	h := &httpHandler{svc: svc, opts: opts, servers: make(map[string]cachedServer)}
	h.stream = sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		srv, _ := r.Context().Value(serverKey{}).(*sdk.Server)
		return srv
	}, &sdk.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              sdkLogger(opts.Logger),
		MaxRequestBodyBytes: opts.MaxMessageBytes,
		// The listener in front (api/server's guard) checks Host and Origin for REST and
		// MCP alike, against the configured names; the SDK's loopback-only check would
		// refuse the names an operator allows.
		DisableLocalhostProtection: true,
	})
	return h
}

type serverKey struct{}

type httpHandler struct {
	svc    *workbench.Service
	opts   Options
	stream *sdk.StreamableHTTPHandler

	mu      sync.Mutex
	servers map[string]cachedServer // profile and agent → server
}

// cachedServer is the SDK server of a profile and agent root, with its fast lane (nil:
// none; fastcall.go).
type cachedServer struct {
	srv  *sdk.Server
	lane *fastLane
}

// Admission of large MCP requests (issue 25: twelve 16 MiB workbench_put_file at once held
// 465 MB). A body above largeRequestBytes, or of unknown length, takes messageCopies times
// its size of the node's memory budget (workbench.Service.AdmitMemory) before it is read:
// the body, the SDK's decoded copy of its params, the payload's string, its base64-decoded
// bytes, the ingest's buffers and the answer; a body of unknown length counts as
// MaxMessageBytes. A share above the whole budget is cut to the budget, so such a message
// runs alone rather than never. When the budget stays taken for the queue timeout the
// request is answered 429 with the contract's ResourceExhausted envelope (retryable).
const (
	largeRequestBytes = 1 << 20
	messageCopies     = 6
)

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	if agent == "" {
		agent = DefaultAgent
	}
	if e := meta.ValidateName("agent", agent); e != nil {
		writeEnvelope(w, http.StatusNotFound, &workbench.Error{Code: workbench.CodeNotFound,
			Message: fmt.Sprintf("no agent root %q", truncate(agent, 128)), Details: map[string]any{}})
		return
	}
	if refuseTransport(w, r) {
		return
	}
	if r.ContentLength > h.opts.MaxMessageBytes {
		// A JSON-RPC error (oversize.go) rather than the transport's plain-text 413; only
		// the start of the body is read, for its id.
		prefix, _ := io.ReadAll(io.LimitReader(r.Body, idPrefixBytes))
		messageTooLarge{leadingID(prefix), r.ContentLength, h.opts.MaxMessageBytes}.write(w)
		return
	}
	// The memory shares of this request (the message's below, the tool's: a listing, a
	// history, a diff, a proposal page) are kept until the SDK has written the answer, as
	// REST keeps them (workbench.Service.HoldAdmissions): the answer's encoding is inside
	// the budget too.
	ctx, releaseMemory := h.svc.HoldAdmissions(r.Context())
	defer releaseMemory()
	r = r.WithContext(ctx)
	if r.Method == http.MethodPost && (r.ContentLength < 0 || r.ContentLength > largeRequestBytes) {
		size := r.ContentLength
		if size < 0 {
			size = h.opts.MaxMessageBytes
		}
		release, err := h.svc.AdmitMemory(r.Context(), min(messageCopies*size, h.svc.Config().QueryBudgetBytes), "the MCP message")
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			e := workbench.AsError(err)
			if ms, ok := e.Details["retry_after_ms"].(int64); ok {
				w.Header().Set("Retry-After", strconv.FormatInt(max(1, (ms+999)/1000), 10))
			}
			writeEnvelope(w, http.StatusTooManyRequests, e)
			return
		}
		defer release()
	}
	cs := h.server(r.PathValue("profile"), agent)
	if r.Method == http.MethodPost {
		body, err := readMessage(r.Body, r.ContentLength, h.opts.MaxMessageBytes)
		var m message
		if !h.checkBody(w, r, body, err, &m) || cs.lane.serve(w, r, &m) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	h.stream.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), serverKey{}, cs.srv)))
}

// readMessage reads a request body of declared length size (-1: not declared) until it
// ends or passes limit bytes (limit+1 read), as bytes.Buffer.ReadFrom reads it: the
// body's end is no error, any other error is returned with what was read. A declared
// length is read into one buffer of that length (and the one byte that would pass it);
// ReadFrom would grow one of at least 512 bytes free beyond the message's.
func readMessage(body io.Reader, size, limit int64) ([]byte, error) {
	lr := io.LimitReader(body, limit+1)
	if size < 0 || size > limit {
		buf := bytes.NewBuffer(make([]byte, 0, max(0, min(size, limit)+1)))
		_, err := buf.ReadFrom(lr)
		return buf.Bytes(), err
	}
	buf := make([]byte, size+1)
	n := 0
	for n < len(buf) {
		m, err := lr.Read(buf[n:])
		n += m
		if err == io.EOF {
			return buf[:n], nil
		}
		if err != nil {
			return buf[:n], err
		}
	}
	// More than declared (net/http never gives that): read on as ReadFrom would.
	rest := bytes.NewBuffer(buf)
	_, err := rest.ReadFrom(lr)
	return rest.Bytes(), err
}

// checkBody answers a POST whose body (read with err) is not one JSON-RPC message within
// the size limit, and reports whether it is one; m is what checkInbound read of it.
func (h *httpHandler) checkBody(w http.ResponseWriter, r *http.Request, body []byte, err error, m *message) bool {
	var we *workbench.Error
	switch {
	case errors.As(err, &we):
		// A body the surface cut off (below the minimum rate, api/deadline.Body).
		writeEnvelope(w, http.StatusBadRequest, we)
		return false
	case err != nil:
		writeEnvelope(w, http.StatusBadRequest, &workbench.Error{Code: workbench.CodeInvalidArguments,
			Message: "body: could not be read", Details: map[string]any{"field": "body"}})
		return false
	case int64(len(body)) > h.opts.MaxMessageBytes:
		// A body of undeclared length, read up to the limit (oversize.go).
		messageTooLarge{leadingID(body[:min(len(body), idPrefixBytes)]), -1, h.opts.MaxMessageBytes}.write(w)
		return false
	}
	if isBatch(body) {
		// The SDK runs the batches of protocol versions before 2025-06-18 concurrently
		// and decodes them whole (issue 10: one POST of 12 aggregates held 8.5 GB); the
		// Workbench profile needs none, so they are refused before the SDK sees the
		// body, as the stdio guard refuses them. A body that only starts like one but is
		// not JSON, or nests too deep, is a parse error first (docs/workbench.md).
		if e := textError(body); e != nil {
			e.write(w, r)
			return false
		}
		writeInvalidRequest(w, "batches are not supported: send one message per request")
		return false
	}
	if e := checkInbound(body, m); e != nil {
		// The SDK would answer these in plain text (or not as JSON-RPC errors); the
		// protocol's errors are JSON-RPC errors on every lane.
		e.write(w, r)
		return false
	}
	return true
}

// isBatch reports whether a POST body is a JSON-RPC batch: its first byte after JSON
// white space is '['.
func isBatch(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// writeInvalidRequest answers a POST that is not one JSON-RPC message with a JSON-RPC
// invalid-request error (-32600, id null) and HTTP 400.
func writeInvalidRequest(w http.ResponseWriter, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": "Invalid Request: " + msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}

// server returns the cached server of a profile ("" = workbench, ProfileCairn) and agent
// root, building it on first use.
func (h *httpHandler) server(profile, agent string) cachedServer {
	key := profile + "\x00" + agent
	h.mu.Lock()
	defer h.mu.Unlock()
	if cs, ok := h.servers[key]; ok {
		return cs
	}
	if len(h.servers) >= maxCachedServers {
		for k := range h.servers { // evict an arbitrary one
			delete(h.servers, k)
			break
		}
	}
	var cs cachedServer
	if profile == ProfileCairn {
		cs.srv = NewCairnServer(h.svc, agent, h.opts)
	} else {
		cs.srv, cs.lane = newWorkbenchServer(h.svc, agent, h.opts)
	}
	h.servers[key] = cs
	return cs
}

// writeEnvelope answers a plain HTTP request with the contract's error envelope.
func writeEnvelope(w http.ResponseWriter, status int, e *workbench.Error) {
	body, err := encodeObject(e.Envelope(), "status", "code", "message", "retryable", "details")
	if err != nil {
		body = []byte(`{"status":"error","code":"Internal","message":"internal error","retryable":false,"details":{}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(body)
}
