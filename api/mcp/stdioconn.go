package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioDrainTimeout bounds how long a stdio session whose input has ended waits for the
// answers of the requests it had already read (docs/workbench.md, Common rules): as long
// as a node's graceful shutdown waits for its requests by default (--shutdown-timeout).
// A variable so that tests can shorten it.
var stdioDrainTimeout = 10 * time.Second

// stdioTransport is the transport of a stdio session: the SDK's IOTransport (on the
// stdio guard), whose connection keeps account of the requests the SDK has read and not
// yet answered (stdioConn).
type stdioTransport struct {
	io    *sdk.IOTransport
	drain time.Duration
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.io.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stdioConn{Connection: c, drain: t.drain, pending: map[jsonrpc.ID]pendingCall{},
		given: map[jsonrpc.ID]bool{}, changed: make(chan struct{}, 1), closed: make(chan struct{})}, nil
}

// stdioConn is the connection of a stdio session. It keeps the requests the SDK has read
// and not answered, so that:
//
//   - when the input ends, the end is handed to the SDK (which then writes nothing more
//     and ends the session) only once every one of them is answered, or stdioDrainTimeout
//     has passed; one still unanswered then is answered here with a server error saying
//     so, and a later answer of the SDK to it is dropped: every request read gets exactly
//     one answer;
//   - a request the SDK refuses because it came before initialize was answered (its
//     session gate answers a plain error, which goes out as JSON-RPC code 0) is answered
//     as an invalid request (-32600) saying what to send first.
//
// The SDK's IOTransport connection also tracks the negotiated protocol version, which it
// needs only for JSON-RPC batches; the stdio guard refuses those before the SDK reads them.
type stdioConn struct {
	sdk.Connection
	drain time.Duration

	mu          sync.Mutex
	pending     map[jsonrpc.ID]pendingCall // read by the SDK, not yet answered
	given       map[jsonrpc.ID]bool        // answered here when the input ended
	initialized bool                       // initialize was answered with a result
	changed     chan struct{}              // a pending request was answered

	closeOnce sync.Once
	closed    chan struct{}
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
		if ctx.Err() == nil {
			c.drainPending(ctx)
		}
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

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// answering takes the SDK's answer resp off the pending requests and returns what to
// write instead of it; drop when the request was answered already (drainPending).
func (c *stdioConn) answering(resp *jsonrpc.Response) (_ *jsonrpc.Response, drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.given[resp.ID] {
		return nil, true
	}
	p, ok := c.pending[resp.ID]
	if !ok {
		return resp, false
	}
	delete(c.pending, resp.ID)
	select {
	case c.changed <- struct{}{}:
	default:
	}
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

// drainPending waits, once the input has ended, until every request read is answered,
// for at most c.drain (or until ctx ends or the connection closes), and answers each one
// still pending with a server error (-32000) saying why.
func (c *stdioConn) drainPending(ctx context.Context) {
	timer := time.NewTimer(c.drain)
	defer timer.Stop()
	why := fmt.Sprintf("was not answered within %s after the session's input ended", c.drain)
wait:
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.changed:
		case <-timer.C:
			break wait
		case <-ctx.Done():
			why = "was not answered before the server stopped"
			break wait
		case <-c.closed:
			why = "was not answered before the session closed"
			break wait
		}
	}
	c.mu.Lock()
	left := make(map[jsonrpc.ID]string, len(c.pending))
	for id, p := range c.pending {
		left[id] = p.method
		c.given[id] = true
		delete(c.pending, id)
	}
	c.mu.Unlock()
	for id, method := range left {
		_ = c.Connection.Write(context.WithoutCancel(ctx), &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: codeServerError,
			Message: fmt.Sprintf("Server error: the %s request %s, and the session ends without its answer: a change it makes may or may not apply, so read the state back before sending it again",
				truncate(method, 128), why)}})
	}
}
