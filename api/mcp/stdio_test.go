package mcp

import (
	"io"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// stdioPipes connects an SDK client to a stdio server function over two io.Pipes and
// returns the client session and the server's result channel.
func stdioPipes(t *testing.T, serve func(in io.Reader, out io.Writer) error) (*sdk.ClientSession, <-chan error) {
	t.Helper()
	return stdioPipesRecording(t, serve, io.Discard)
}

// stdioPipesRecording is stdioPipes, copying every byte the server writes to record.
func stdioPipesRecording(t *testing.T, serve func(in io.Reader, out io.Writer) error, record io.Writer) (*sdk.ClientSession, <-chan error) {
	t.Helper()
	pipeIn, serverOut := io.Pipe()
	clientIn := readCloser{io.TeeReader(pipeIn, record), pipeIn}
	serverIn, clientOut := io.Pipe()
	t.Cleanup(func() { serverOut.Close(); serverIn.Close() })
	done := make(chan error, 1)
	go func() { done <- serve(serverIn, serverOut) }()
	cs, err := sdk.NewClient(testClient, nil).Connect(t.Context(), &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, done
}

func TestServeStdioServesTheAgentAndEndsWhenTheClientCloses(t *testing.T) {
	svc := newService(t, 0)
	cs, done := stdioPipes(t, func(in io.Reader, out io.Writer) error {
		return ServeStdio(t.Context(), svc, "stdio-agent", in, out)
	})
	r := ok(t, cs, "workbench_create", args{"id": "w"})
	if r.str("path") != "/agents/stdio-agent/wb/w" {
		t.Errorf("create: %v", r)
	}
	invalid(t, cs, "workbench_put_file", args{"id": "w", "section": "input", "path": "../x", "text": "x"}, "path")
	fails(t, cs, "workbench_nope", args{}, "UnknownTool")
	// A payload one byte above the cap, in base64, fits the stdio line limit.
	e := fails(t, cs, "workbench_put_file", args{"id": "w", "section": "input", "path": "big",
		"base64": strings.Repeat("QUJD", (DefaultMaxPayloadBytes+3)/3)}, "PayloadTooLarge")
	if e.details().int(t, "actual_bytes") != DefaultMaxPayloadBytes+2 {
		t.Errorf("details: %v", e.details())
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("ServeStdio after the client closed: %v", err)
	}
}

func TestServeStdioRejectsAnInvalidAgent(t *testing.T) {
	if err := ServeStdio(t.Context(), newService(t, 0), "../etc", strings.NewReader(""), io.Discard); err == nil {
		t.Error("ServeStdio accepted agent ../etc")
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

func TestServeStdioProxyForwardsToTheServerUnchanged(t *testing.T) {
	svc := newService(t, 0)
	ts := newHTTPServer(t, svc)
	var wire workbenchtest.LogBuffer
	cs, done := stdioPipesRecording(t, func(in io.Reader, out io.Writer) error {
		return ServeStdioProxy(t.Context(), ts.URL+"/", "proxied", nil, in, out)
	}, &wire)
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(tools) {
		t.Errorf("proxy lists %d tools, want %d", len(list.Tools), len(tools))
	}

	r := ok(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "r.txt", "text": "hi"})
	if r.str("path") != "/agents/proxied/wb/w/outputs/r.txt" {
		t.Errorf("put via proxy: %v", r)
	}
	e := fails(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "r.txt", "text": "again"}, "AlreadyExists")
	if e.details().int(t, "current_generation") != r.int(t, "generation") {
		t.Errorf("AlreadyExists via proxy: %v", e)
	}
	invalid(t, cs, "workbench_list", args{"id": "w", "limit": 0}, "limit")
	fails(t, cs, "workbench_history", args{"id": "w"}, "UnknownTool")

	// The same call straight to the server answers the same bytes.
	direct := connectHTTP(t, ts.URL+"/v1/agents/proxied/mcp")
	viaProxy, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "workbench_stat", Arguments: args{"id": "w", "section": "outputs", "path": "r.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	straight, err := direct.CallTool(t.Context(), &sdk.CallToolParams{Name: "workbench_stat", Arguments: args{"id": "w", "section": "outputs", "path": "r.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if viaProxy.Content[0].(*sdk.TextContent).Text != straight.Content[0].(*sdk.TextContent).Text {
		t.Errorf("proxy changed the result:\n%s\n%s", viaProxy.Content[0].(*sdk.TextContent).Text, straight.Content[0].(*sdk.TextContent).Text)
	}

	// structuredContent crosses the proxy as the server's bytes, "status" first.
	if !strings.Contains(wire.String(), `"structuredContent":`+straight.Content[0].(*sdk.TextContent).Text) {
		t.Errorf("structuredContent was re-encoded by the proxy")
	}

	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdioProxy after the client closed: %v", err)
	}
}

func TestServeStdioProxyFailsFastOnBadArguments(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	cases := []struct{ url, agent string }{
		{ts.URL, "bad agent"},
		{"ftp://example.com", "a"},
		{"not a url", "a"},
		{"http://127.0.0.1:1", "a"}, // nothing listens on port 1
	}
	for _, c := range cases {
		if err := ServeStdioProxy(t.Context(), c.url, c.agent, nil, strings.NewReader(""), io.Discard); err == nil {
			t.Errorf("ServeStdioProxy(%q, %q) = nil", c.url, c.agent)
		}
	}
}

// `cairn mcp --profile cairn` over stdio: the cairn profile's tools (the 18 Workbench tools
// plus Cairn's own) in one session; an unknown profile fails before reading.
func TestServeStdioServesTheCairnProfile(t *testing.T) {
	svc := newService(t, 0)
	cs, done := stdioPipes(t, func(in io.Reader, out io.Writer) error {
		return ServeStdioProfile(t.Context(), svc, "stdio-agent", ProfileCairn, nil, in, out)
	})
	ok(t, cs, "workbench_create", args{"id": "w"})
	ok(t, cs, "workbench_put_file", args{"id": "w", "section": "input", "path": "a.md", "text": "one"})
	if r := ok(t, cs, "cairn_workbench_list", args{}); len(r["workbenches"].([]any)) != 1 {
		t.Errorf("cairn_workbench_list over stdio: %v", r)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("ServeStdioProfile after the client closed: %v", err)
	}
	if err := ServeStdioProfile(t.Context(), svc, "a", "nope", nil, strings.NewReader(""), io.Discard); err == nil || !strings.Contains(err.Error(), `unknown profile "nope"`) {
		t.Errorf("unknown profile: %v", err)
	}
}
