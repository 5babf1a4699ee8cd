package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP tool mix: per 100 calls, how many go to each tool. An agent at work mostly
// reads and looks around, and writes now and then.
var mcpMix = []struct {
	tool   string
	weight int
}{
	{"workbench_read", 30},
	{"workbench_stat", 15},
	{"workbench_list", 15},
	{"workbench_put_file", 15},
	{"workbench_append", 10},
	{"workbench_grep", 10},
	{"workbench_search", 5},
}

// mcpTool returns the tool call seq makes: a deterministic draw from mcpMix.
func mcpTool(seq uint64) string {
	r := int(mix(seq^0x6d6370) % 100)
	for _, m := range mcpMix {
		if r < m.weight {
			return m.tool
		}
		r -= m.weight
	}
	return mcpMix[0].tool
}

// Paths of the MCP scenario, relative to their section.
const (
	mcpDocDir     = "bench/mcp"   // in input: the Files documents read, stat'ed, listed, grepped
	mcpReadLimit  = 50            // text lines per read
	mcpListLimit  = 100           // entries per list page
	mcpGrepLimit  = 20            // matching lines per grep
	mcpSearchSize = 10            // hits per search (the contract's maximum)
	mcpGrepWord   = "error"       // a word of textBody, in about one line of three
	mcpClientName = "cairn-bench" // the MCP client implementation name
)

func mcpDocPath(i uint64) string { return fmt.Sprintf("%s/doc-%09d.txt", mcpDocDir, i) }

// textWords are the words textBody draws from.
var textWords = []string{"alpha", "build", "cache", "delta", "epoch", "error", "fetch", "graph", "index", "merge",
	"model", "output", "parse", "query", "retry", "score", "train", "update", "value", "write"}

// textBody is size bytes of numbered text lines of words, determined by (nonce, seq): what
// an agent's notes and logs look like to read and grep.
func textBody(nonce, seq uint64, size int64) []byte {
	r := rand.New(rand.NewChaCha8(seed(nonce, seq)))
	b := make([]byte, 0, size+64)
	for line := 1; int64(len(b)) < size; line++ {
		b = fmt.Appendf(b, "%d", line)
		for range 8 {
			b = append(b, ' ')
			b = append(b, textWords[r.IntN(len(textWords))]...)
		}
		b = append(b, '\n')
	}
	b = b[:size]
	if size > 0 {
		b[size-1] = '\n'
	}
	return b
}

// MCPError is a tool call the server answered with the contract's error envelope
// (docs/workbench.md#errors). ErrorClass buckets it as "MCP <code>".
type MCPError struct {
	Tool    string
	Code    string
	Message string
}

func (e *MCPError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Tool, e.Code, e.Message) }

// mcpSessions is a pool of MCP client sessions to one agent's endpoint: a call takes an
// idle session or connects a new one, and gives it back when done, so concurrent calls
// never share a session (as concurrent agents would not).
type mcpSessions struct {
	client   *sdk.Client
	endpoint string
	hc       *http.Client

	mu   sync.Mutex
	idle []*sdk.ClientSession
	all  []*sdk.ClientSession
}

func newMCPSessions(server, agent string, hc *http.Client) *mcpSessions {
	return &mcpSessions{
		client:   sdk.NewClient(&sdk.Implementation{Name: mcpClientName, Version: "1"}, nil),
		endpoint: server + "/v1/agents/" + url.PathEscape(agent) + "/mcp",
		hc:       hc,
	}
}

// connect opens n sessions ahead of the run, so that no measured call pays for one.
func (p *mcpSessions) connect(ctx context.Context, n int) error {
	for range n {
		cs, err := p.dial(ctx)
		if err != nil {
			return err
		}
		p.put(cs)
	}
	return nil
}

func (p *mcpSessions) dial(ctx context.Context) (*sdk.ClientSession, error) {
	cs, err := p.client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: p.endpoint, HTTPClient: p.hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP connect to %s: %w", p.endpoint, err)
	}
	p.mu.Lock()
	p.all = append(p.all, cs)
	p.mu.Unlock()
	return cs, nil
}

func (p *mcpSessions) get(ctx context.Context) (*sdk.ClientSession, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		cs := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return cs, nil
	}
	p.mu.Unlock()
	return p.dial(ctx)
}

func (p *mcpSessions) put(cs *sdk.ClientSession) {
	p.mu.Lock()
	p.idle = append(p.idle, cs)
	p.mu.Unlock()
}

// Close closes every session.
func (p *mcpSessions) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, cs := range p.all {
		if err := cs.Close(); err != nil && !errors.Is(err, io.EOF) {
			errs = append(errs, err)
		}
	}
	p.all, p.idle = nil, nil
	return errors.Join(errs...)
}

// call runs tool with args on a pooled session; a result with isError becomes an
// *MCPError carrying the envelope's code.
func (p *mcpSessions) call(ctx context.Context, tool string, args map[string]any) error {
	cs, err := p.get(ctx)
	if err != nil {
		return err
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		// A session whose call failed at the protocol level is not reused.
		cs.Close()
		return fmt.Errorf("%s: %w", tool, err)
	}
	p.put(cs)
	return checkToolResult(tool, res)
}

// checkToolResult reads a tool result's outcome: a result with isError, or whose
// "status" is not "success", becomes an *MCPError carrying the envelope's code. It reads
// the structured content, which the go-sdk client has already decoded (Cairn sends every
// result both as structuredContent and as its JSON text); only a result without it has
// its text decoded here.
func checkToolResult(tool string, res *sdk.CallToolResult) error {
	var env struct {
		Status  string `json:"status"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if sc, ok := res.StructuredContent.(map[string]any); ok {
		env.Status, _ = sc["status"].(string)
		env.Code, _ = sc["code"].(string)
		env.Message, _ = sc["message"].(string)
	} else {
		var text string
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*sdk.TextContent); ok {
				text = tc.Text
			}
		}
		if err := json.NewDecoder(strings.NewReader(text)).Decode(&env); err != nil {
			return fmt.Errorf("%s: result is not a JSON object (%v): %w", tool, err, io.ErrUnexpectedEOF)
		}
	}
	if res.IsError || env.Status != "success" {
		return &MCPError{Tool: tool, Code: env.Code, Message: env.Message}
	}
	return nil
}

// setupMCP writes the documents the tool mix reads and connects the session pool.
func (s *scenario) setupMCP(ctx context.Context) error {
	err := s.writeFiles(ctx, func(i uint64) string { return "input/" + mcpDocPath(i) }, func(i uint64) io.Reader {
		return bytes.NewReader(textBody(s.nonce, ^i, s.sizeBytes))
	}, "text/plain; charset=utf-8")
	if err != nil {
		return err
	}
	return s.mcp.connect(ctx, s.workers)
}

// mcpOp is the MCP scenario's Op for phase: the tool of each call is mcpTool(seq).
func (s *scenario) mcpOp(phase int) Op {
	nonce := s.nonce + uint64(phase+1)*0x9e3779b97f4a7c15
	doc := func(seq uint64) string { return mcpDocPath(mix(seq) % uint64(s.files)) }
	return labeledOp{label: mcpTool, op: OpFunc(func(ctx context.Context, seq uint64) error {
		tool := mcpTool(seq)
		args := map[string]any{"id": s.wb}
		switch tool {
		case "workbench_read":
			args["section"], args["path"], args["limit"] = "input", doc(seq), mcpReadLimit
		case "workbench_stat":
			args["section"], args["path"] = "input", doc(seq)
		case "workbench_list":
			args["section"], args["path"], args["limit"] = "input", mcpDocDir, mcpListLimit
		case "workbench_put_file":
			args["section"] = "outputs"
			args["path"] = fmt.Sprintf("bench/p%d/note-%09d.txt", phase, seq)
			args["text"] = string(textBody(nonce, seq, s.sizeBytes))
		case "workbench_append":
			args["section"] = "logs"
			args["path"] = fmt.Sprintf("bench/p%d/agent-%d.log", phase, seq%4)
			args["text"] = string(logRecord(seq, mcpAppendBytes))
		case "workbench_grep":
			args["pattern"], args["recursive"], args["section"], args["path"], args["limit"] = mcpGrepWord, true, "input", mcpDocDir, mcpGrepLimit
		case "workbench_search":
			args["section"], args["path"], args["limit"] = "input", mcpDocDir, mcpSearchSize
			args["predicates"] = []map[string]any{{"field": "artifact.ext", "op": "eq", "value": "txt"}}
		}
		return s.mcp.call(ctx, tool, args)
	})}
}

// mcpAppendBytes is the size of the MCP mix's appended log lines.
const mcpAppendBytes = 128
