package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"
)

// mcpCaller makes the MCP scenario's tool calls: the go-sdk's client sessions
// (mcpSessions), or the lean lane (leanMCP).
type mcpCaller interface {
	// connect prepares n concurrent callers ahead of the run, so that no measured call
	// pays for a handshake.
	connect(ctx context.Context, n int) error
	// call runs tool with args; a result with isError, or whose status is not
	// "success", is an *MCPError carrying the envelope's code.
	call(ctx context.Context, tool string, args map[string]any) error
	Close() error
}

// leanMCP is the MCP scenario's lean lane (Config.LeanHTTP): each tool call is one
// JSON-RPC request POSTed over fasthttp's client on the protocol's stateless lane, where
// the go-sdk's client spends more CPU per call than the server on a shared machine (it
// decodes every result into its types, then into a map). The protocol version is the one
// a go-sdk client session negotiates with the server at connect; each request carries it,
// with the client's name and capabilities, in params._meta and the standard headers
// (Mcp-Protocol-Version, Mcp-Method, Mcp-Name), which the server checks. Each answer is
// checked as checkToolResult checks the go-sdk's: a JSON-RPC response to this request's
// id whose result's structuredContent has status "success".
type leanMCP struct {
	hc        *fasthttp.HostClient
	endpoint  string
	sdk       *mcpSessions // negotiates the protocol version
	opTimeout time.Duration

	version string         // the negotiated protocol version; set by connect
	meta    map[string]any // params._meta of every request; set by connect
	ids     atomic.Uint64
}

// newLeanMCP returns the lean lane to cfg.Server's MCP endpoint of cfg.Agent for workers
// concurrent calls; sessions negotiates the protocol version.
func newLeanMCP(cfg Config, workers int, sessions *mcpSessions) (*leanMCP, error) {
	hc, err := leanHostClient(cfg.Server, workers)
	if err != nil {
		return nil, err
	}
	return &leanMCP{hc: hc, endpoint: sessions.endpoint, sdk: sessions, opTimeout: cfg.OpTimeout}, nil
}

// connect negotiates the protocol version with one go-sdk session; the lane's calls need
// no connection of their own beyond fasthttp's.
func (l *leanMCP) connect(ctx context.Context, _ int) error {
	cs, err := l.sdk.dial(ctx)
	if err != nil {
		return err
	}
	res := cs.InitializeResult()
	if res == nil || res.ProtocolVersion == "" {
		return fmt.Errorf("MCP connect to %s: no protocol version negotiated", l.endpoint)
	}
	l.version = res.ProtocolVersion
	l.meta = map[string]any{
		sdk.MetaKeyProtocolVersion:    l.version,
		sdk.MetaKeyClientInfo:         map[string]string{"name": mcpClientName, "version": "1"},
		sdk.MetaKeyClientCapabilities: map[string]any{},
	}
	return nil
}

// leanToolCall is a tools/call request.
type leanToolCall struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id"`
	Method  string `json:"method"`
	Params  struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
		Meta      map[string]any `json:"_meta"`
	} `json:"params"`
}

// leanToolAnswer is what the lane reads of a tools/call response.
type leanToolAnswer struct {
	ID     *uint64 `json:"id"`
	Result *struct {
		IsError    bool `json:"isError"`
		Structured *struct {
			Status  string `json:"status"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (l *leanMCP) call(ctx context.Context, tool string, args map[string]any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	call := leanToolCall{JSONRPC: "2.0", ID: l.ids.Add(1), Method: "tools/call"}
	call.Params.Name, call.Params.Arguments, call.Params.Meta = tool, args, l.meta
	body, err := json.Marshal(&call)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(l.endpoint)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", l.version)
	req.Header.Set("Mcp-Method", call.Method)
	req.Header.Set("Mcp-Name", tool)
	req.SetBodyRaw(body)
	if err := l.hc.DoDeadline(req, resp, leanDeadline(ctx, l.opTimeout)); err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if st := resp.StatusCode(); st != fasthttp.StatusOK {
		return fmt.Errorf("%s: status %d, want 200", tool, st)
	}
	if mt, _, err := mime.ParseMediaType(string(resp.Header.ContentType())); err != nil || mt != "application/json" {
		return fmt.Errorf("%s: Content-Type %q, want application/json", tool, resp.Header.ContentType())
	}
	return readToolAnswer(tool, call.ID, resp.Body())
}

// readToolAnswer checks the JSON-RPC response body to the tools/call of id.
func readToolAnswer(tool string, id uint64, body []byte) error {
	var ans leanToolAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Errorf("%s: the response is not JSON-RPC: %w", tool, err)
	}
	switch {
	case ans.ID == nil || *ans.ID != id:
		return fmt.Errorf("%s: the response answers another request than id %d", tool, id)
	case ans.Error != nil:
		return fmt.Errorf("%s: JSON-RPC error %d: %s", tool, ans.Error.Code, ans.Error.Message)
	case ans.Result == nil || ans.Result.Structured == nil:
		return fmt.Errorf("%s: the result has no structured content: %w", tool, errors.ErrUnsupported)
	}
	if sc := ans.Result.Structured; ans.Result.IsError || sc.Status != "success" {
		return &MCPError{Tool: tool, Code: sc.Code, Message: sc.Message}
	}
	return nil
}

// Close drops the lane's connections and the negotiating session.
func (l *leanMCP) Close() error {
	l.hc.CloseIdleConnections()
	return l.sdk.Close()
}
