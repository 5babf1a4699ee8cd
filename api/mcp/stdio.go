package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/workbench/auth"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// proxyMaxMessageBytes bounds one JSON-RPC message the stdio proxy accepts from its client
// (one line): room for a 16 MiB payload in base64 with JSON escaping to spare. The server
// behind the proxy enforces its own payload cap.
const proxyMaxMessageBytes = 4*DefaultMaxPayloadBytes + messageOverheadBytes

// stderrLogger is where the stdio servers log: stdout carries only protocol messages
// (docs/workbench.md).
func stderrLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// ServeStdio serves one MCP session over newline-delimited JSON-RPC on in/out, bound to the
// agent root agent (`cairn mcp --agent A`). out carries only protocol messages; logs go to
// stderr. When in ends, the requests already read are answered first (one still running
// 10 seconds later gets a JSON-RPC server error saying so: stdioconn.go); then it
// returns nil. It returns ctx.Err() when ctx ends, and an error
// for an invalid agent id (meta.ValidateName) before reading anything. A message (one line)
// that is not valid JSON is answered with a JSON-RPC parse error (-32700), one above
// Options.MaxMessageBytes with an invalid request naming that limit (-32600, oversize.go),
// and the session goes on. It closes neither in nor out; a read
// blocked on in when ctx ends returns when in does.
func ServeStdio(ctx context.Context, svc *workbench.Service, agent string, in io.Reader, out io.Writer) error {
	return ServeStdioProfile(ctx, svc, agent, "", nil, in, out)
}

// ServeStdioProfile is ServeStdio for the tools of profile: "" or "workbench" the 18
// Workbench tools, ProfileCairn the cairn profile's (`cairn mcp --profile cairn`). Another
// profile is an error before anything is read. docs, when not nil, serves the cairn
// profile's working-documents tools (the node's surface, in process).
func ServeStdioProfile(ctx context.Context, svc *workbench.Service, agent, profile string, docs DocumentsCaller, in io.Reader, out io.Writer) error {
	newServer, err := profileServer(profile)
	if err != nil {
		return err
	}
	if e := meta.ValidateName("agent", agent); e != nil {
		return fmt.Errorf("mcp: %w", e)
	}
	if _, ok := auth.FromContext(ctx); !ok {
		// The process's own user, like a request to an unauthenticated loopback node: its
		// writes are attributed to auth.Local.
		ctx = auth.WithPrincipal(ctx, auth.Local)
	}
	opts := Options{Logger: stderrLogger(), Documents: docs}.withDefaults(svc)
	srv := newServer(svc, agent, opts)
	lw := &lineWriter{w: out}
	t := &sdk.IOTransport{Reader: io.NopCloser(newStdioGuard(in, lw, int(opts.MaxMessageBytes))), Writer: lw, MaxLineLength: int(opts.MaxMessageBytes) + 1}
	return sessionEnd(srv.Run(ctx, &stdioTransport{io: t, drain: stdioDrainTimeout}))
}

// ServeStdioProxy serves an MCP session on in/out whose tools are those of a Cairn server:
// it forwards tools/list and tools/call to serverURL + "/v1/agents/" + agent + "/mcp" over
// streamable HTTP and returns the answers unchanged, tool errors included (`cairn mcp
// --agent A --server URL`). Transport failures reach the client as JSON-RPC errors. It fails
// before serving when the agent id is invalid, serverURL is not an http(s) URL, or the
// server cannot be reached. httpClient carries every request to the server (its TLS
// settings and API key: api/client.NewHTTPClient); nil means http.DefaultClient. Return
// values and the ownership of in/out are as for ServeStdio.
func ServeStdioProxy(ctx context.Context, serverURL, agent string, httpClient *http.Client, in io.Reader, out io.Writer) error {
	return ServeStdioProxyProfile(ctx, serverURL, agent, "", httpClient, in, out)
}

// ServeStdioProxyProfile is ServeStdioProxy for the tools of profile (as
// ServeStdioProfile): ProfileCairn forwards to the server's /v1/agents/{agent}/mcp/cairn.
func ServeStdioProxyProfile(ctx context.Context, serverURL, agent, profile string, httpClient *http.Client, in io.Reader, out io.Writer) error {
	if _, err := profileServer(profile); err != nil {
		return err
	}
	if e := meta.ValidateName("agent", agent); e != nil {
		return fmt.Errorf("mcp proxy: %w", e)
	}
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("mcp proxy: server URL %q must be http(s)://host[:port]", serverURL)
	}
	endpoint := strings.TrimSuffix(serverURL, "/") + "/v1/agents/" + agent + "/mcp"
	if profile == ProfileCairn {
		endpoint += "/" + ProfileCairn
	}
	log := stderrLogger()
	impl := &sdk.Implementation{Name: "cairn-mcp-proxy", Title: "Cairn Workbench (proxy)", Version: "dev"}
	client := sdk.NewClient(impl, &sdk.ClientOptions{Logger: sdkLogger(log)})
	upstream, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: httpClient, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return fmt.Errorf("mcp proxy: connecting to %s: %w", endpoint, err)
	}
	defer upstream.Close()
	instructions := ""
	if ir := upstream.InitializeResult(); ir != nil {
		instructions = ir.Instructions
	}
	srv := sdk.NewServer(impl, &sdk.ServerOptions{
		Logger:       sdkLogger(log),
		Instructions: instructions,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	srv.AddReceivingMiddleware(forwardTools(upstream))
	lw := &lineWriter{w: out}
	t := &sdk.IOTransport{Reader: io.NopCloser(newStdioGuard(in, lw, proxyMaxMessageBytes)), Writer: lw, MaxLineLength: proxyMaxMessageBytes + 1}
	return sessionEnd(srv.Run(ctx, &stdioTransport{io: t, drain: stdioDrainTimeout}))
}

// forwardTools answers tools/list and tools/call from the upstream session.
func forwardTools(upstream *sdk.ClientSession) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch r := req.(type) {
			case *sdk.ListToolsRequest:
				p := &sdk.ListToolsParams{}
				if r.Params != nil {
					p.Cursor = r.Params.Cursor
				}
				res, err := upstream.ListTools(ctx, p)
				if err != nil {
					return nil, err
				}
				// The client session may hand out one cached result to every caller, and
				// the sending side stamps fields on what it sends: send a copy.
				cp := *res
				return &cp, nil
			case *sdk.CallToolRequest:
				args := r.Params.Arguments
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				res, err := upstream.CallTool(ctx, &sdk.CallToolParams{Name: r.Params.Name, Arguments: args})
				if err != nil {
					return nil, err
				}
				keepStructuredBytes(res)
				return res, nil
			}
			return next(ctx, method, req)
		}
	}
}

// keepStructuredBytes restores structuredContent to the exact bytes the server sent. A
// Cairn result carries the same JSON object as its single text content and as
// structuredContent; decoding the latter into Go values would reorder its keys ("status"
// first is part of the contract) and round large integers through float64.
func keepStructuredBytes(res *sdk.CallToolResult) {
	if res.StructuredContent == nil || len(res.Content) != 1 {
		return
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok || !strings.HasPrefix(tc.Text, "{") {
		return
	}
	var fromText any
	if json.Unmarshal([]byte(tc.Text), &fromText) != nil || !reflect.DeepEqual(fromText, res.StructuredContent) {
		return // not the same object: leave the server's answer as decoded
	}
	res.StructuredContent = json.RawMessage(tc.Text)
}

// sessionEnd maps the end of a stdio session: the client closing its side is success.
func sessionEnd(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) {
		return nil
	}
	return err
}

// profileServer returns the server constructor of an MCP profile ("" = "workbench").
func profileServer(profile string) (func(*workbench.Service, string, Options) *sdk.Server, error) {
	switch profile {
	case "", "workbench":
		return NewServer, nil
	case ProfileCairn:
		return NewCairnServer, nil
	}
	return nil, fmt.Errorf("mcp: unknown profile %q (workbench or %s)", profile, ProfileCairn)
}
