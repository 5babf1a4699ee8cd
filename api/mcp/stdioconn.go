package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is the transport of a stdio session: the SDK's IOTransport (on the
// stdio guard), whose connection keeps account of the requests the SDK has read and not
// yet answered (stdioConn).
type stdioTransport struct {
	io *sdk.IOTransport
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.io.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stdioConn{Connection: c, pending: map[jsonrpc.ID]pendingCall{}}, nil
}

// stdioConn is the connection of a stdio session. It keeps the requests the SDK has read
// and not answered, so that a request the SDK refuses because it came before initialize
// was answered (its session gate answers a plain error, which goes out as JSON-RPC code
// 0) is answered as an invalid request (-32600) saying what to send first.
//
// The SDK's IOTransport connection also tracks the negotiated protocol version, which it
// needs only for JSON-RPC batches; the stdio guard refuses those before the SDK reads them.
type stdioConn struct {
	sdk.Connection

	mu          sync.Mutex
	pending     map[jsonrpc.ID]pendingCall // read by the SDK, not yet answered
	initialized bool                       // initialize was answered with a result
}

// pendingCall is a request the SDK has read: its method, and the request itself when it
// came before initialize was answered (for the answer's code, answering).
type pendingCall struct {
	method string
	early  *jsonrpc.Request
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		// An id already in flight is the SDK's to refuse; its answer carries no id.
		if _, inFlight := c.pending[req.ID]; !inFlight {
			p := pendingCall{method: req.Method}
			if !c.initialized {
				p.early = req
			}
			c.pending[req.ID] = p
		}
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		resp, drop := c.answering(resp)
		if drop {
			return nil
		}
		msg = resp
	}
	return c.Connection.Write(ctx, msg)
}

// answering takes the SDK's answer resp off the pending requests and returns what to
// write instead of it.
func (c *stdioConn) answering(resp *jsonrpc.Response) (_ *jsonrpc.Response, drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[resp.ID]
	if !ok {
		return resp, false
	}
	delete(c.pending, resp.ID)
	switch {
	case p.method == "initialize" && resp.Error == nil:
		c.initialized = true
	case p.early != nil && !c.initialized && refusedBeforeInitialize(p.early, resp.Error):
		return &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{Code: codeInvalidRequest, Message: fmt.Sprintf(
			"Invalid Request: %s before initialize: a session begins with initialize (only ping may come before it), "+
				"then notifications/initialized once it is answered", truncate(p.method, 128))}}, false
	}
	return resp, false
}

// beforeInitializeMethods are the requests the go-sdk server (v1.8.0,
// ServerSession.handle) serves before initialize; it refuses any other request of the
// session protocol (not the stateless one) until initialize is answered.
var beforeInitializeMethods = map[string]bool{"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "server/discover": true}

// refusedBeforeInitialize reports whether err is the SDK's refusal of req for coming
// before initialize: a plain error (not a JSON-RPC error with a code) answering a request
// the SDK's session gate holds back, of the session protocol.
func refusedBeforeInitialize(req *jsonrpc.Request, err error) bool {
	var wire *jsonrpc.Error
	if err == nil || errors.As(err, &wire) || beforeInitializeMethods[req.Method] {
		return false
	}
	// The stateless protocol (2026-07-28) names its version in params._meta and needs no
	// initialize (message.go, statelessProtocolVersion).
	var p struct {
		Meta struct {
			Version any `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &p) == nil {
		if v, ok := p.Meta.Version.(string); ok && v >= statelessProtocolVersion {
			return false
		}
	}
	return true
}
