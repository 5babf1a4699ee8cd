package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP clients of the linearizability tests: the same operations as the REST clients, made
// with the contract's tools through every node's MCP endpoint, into the same history:
//
//   - get: workbench_read, format bytes, page after page under the first page's generation
//     (a page of another generation answers ReadFenceChanged, and the read starts over);
//   - conditional put: workbench_put_file with replace and expected_generation (Conflict:
//     the generation did not match, recorded as failed);
//   - put: workbench_put_file with replace, which applies at the generation the server
//     observed (recorded as a put when it applied; its Conflict changed nothing and is left
//     out of the history);
//   - append: workbench_append.
//
// The tools take no idempotency key, so a write whose outcome is unknown (no answer,
// OutcomeUnknown) is never sent again: it is recorded as pending, which the model allows
// to have applied or not. A retryable refusal that applied nothing (RoutingUnavailable,
// a shard without a leader) is sent again through the next node.

// mcpLinClient is one MCP client: a session per node, opened on first use and again after
// a failure.
type mcpLinClient struct {
	r        *linRecorder
	sessions map[int]*sdk.ClientSession
}

func newMCPLinClient(r *linRecorder) *mcpLinClient {
	return &mcpLinClient{r: r, sessions: map[int]*sdk.ClientSession{}}
}

// close ends every session.
func (c *mcpLinClient) close() {
	for n, cs := range c.sessions {
		_ = cs.Close()
		delete(c.sessions, n)
	}
}

// do runs in over MCP through node first (then the others in turn) and records it.
func (c *mcpLinClient) do(t *testing.T, client, first int, in linInput) linOutput {
	return c.r.run(t, client, first, in, "mcp", func(n int) (linOutput, bool, bool, error) { return c.attempt(n, in) })
}

// session returns the session to node n, opening it.
func (c *mcpLinClient) session(n int) (*sdk.ClientSession, error) {
	if cs := c.sessions[n]; cs != nil {
		return cs, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "cairn-linearizability", Version: "v0"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: c.r.lc.url(n) + "/v1/agents/" + c.r.agent + "/mcp"}, nil)
	if err != nil {
		return nil, err
	}
	c.sessions[n] = cs
	return cs, nil
}

// attempt makes one try through node n. definite: the answer settles the operation;
// unknown: a write may have applied (never sent again); err: an answer no correct cluster
// gives.
func (c *mcpLinClient) attempt(n int, in linInput) (out linOutput, definite, unknown bool, err error) {
	section, path, _ := strings.Cut(in.Path, "/")
	args := map[string]any{"id": c.r.wb, "section": section, "path": path}
	if in.Kind == linGet {
		return c.read(n, args)
	}
	tool := "workbench_put_file"
	args["text"] = in.Value
	switch in.Kind {
	case linPut:
		args["replace"] = true
	case linCAS:
		args["replace"], args["expected_generation"] = true, in.Match
	case linAppend:
		tool = "workbench_append"
	}
	res, e, ok := c.call(n, tool, args)
	switch {
	case !ok && e != nil:
		return out, false, false, nil // never sent: no session to the node
	case !ok:
		return out, false, true, nil // sent, perhaps applied, no answer
	case e == nil:
		out.Gen = generationOf(res)
		if out.Gen == 0 {
			return out, false, false, fmt.Errorf("%s %s through node %d: no generation: %v", tool, in.Path, n, res)
		}
		return out, true, false, nil
	case e.Code == "Conflict" && (in.Kind == linCAS || in.Kind == linPut):
		out.Failed = true
		return out, true, false, nil
	case e.Code == "OutcomeUnknown":
		return out, false, true, nil
	case e.Retryable:
		c.r.mu.Lock()
		c.r.counts["mcp retry "+e.Code]++
		c.r.mu.Unlock()
		return out, false, false, nil
	}
	return out, false, false, fmt.Errorf("%s %s through node %d: unexpected %s: %s", tool, in.Path, n, e.Code, e.Message)
}

// read reads the whole file through node n, page after page at one generation.
func (c *mcpLinClient) read(n int, args map[string]any) (out linOutput, definite, unknown bool, err error) {
	args["format"] = "bytes"
	var body []byte
	for page := 0; ; page++ {
		res, e, ok := c.call(n, "workbench_read", args)
		switch {
		case !ok:
			return out, false, false, nil
		case e != nil && e.Code == "NotFound" && page == 0:
			out.NotFound = true
			return out, true, false, nil
		case e != nil && (e.Retryable || e.Code == "ReadFenceChanged"):
			return out, false, false, nil
		case e != nil:
			return out, false, false, fmt.Errorf("workbench_read %v through node %d: unexpected %s: %s", args["path"], n, e.Code, e.Message)
		}
		data, derr := base64.StdEncoding.DecodeString(fmt.Sprint(res["bytes"]))
		if derr != nil {
			return out, false, false, fmt.Errorf("workbench_read through node %d: bytes: %v", n, derr)
		}
		body = append(body, data...)
		if page == 0 {
			out.Gen = generationOf(res)
			if out.Gen == 0 {
				return out, false, false, fmt.Errorf("workbench_read through node %d: no generation: %v", n, res)
			}
		}
		next, _ := res["next_cursor"].(string)
		if next == "" {
			out.Body = string(body)
			return out, true, false, nil
		}
		args["cursor"] = next
	}
}

// generationOf is a tool result's generation (0: none).
func generationOf(res map[string]any) uint64 {
	g, _ := res["generation"].(float64)
	return uint64(g)
}

// mcpToolErr is a tool's error envelope.
type mcpToolErr struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// call calls tool through node n: its result, or its error envelope; ok is false when no
// answer came (the session is dropped and opened again next time), with an envelope of
// code "unsent" when the call never left (no session could be opened).
func (c *mcpLinClient) call(n int, tool string, args map[string]any) (map[string]any, *mcpToolErr, bool) {
	cs, err := c.session(n)
	if err != nil {
		return nil, &mcpToolErr{Code: "unsent", Message: err.Error()}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		_ = cs.Close()
		delete(c.sessions, n)
		return nil, nil, false
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if res.IsError {
		var e mcpToolErr
		if json.Unmarshal(raw, &e) != nil || e.Code == "" {
			return nil, &mcpToolErr{Code: "untyped", Message: string(raw)}, true
		}
		return nil, &e, true
	}
	var out map[string]any
	if json.Unmarshal(raw, &out) != nil {
		return nil, &mcpToolErr{Code: "undecodable", Message: string(raw)}, true
	}
	return out, nil, true
}
