package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/workbench/auth"
)

// The MCP columns of the authorization matrix (authmatrix_test.go): every tool the node
// lists, called over streamable HTTP with the go-sdk client, one session per key.

// bearer adds an Authorization header to every request.
type bearer struct{ authz string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.authz != "" {
		r.Header.Set("Authorization", b.authz)
	}
	return http.DefaultTransport.RoundTrip(r)
}

var matrixClient = &sdk.Implementation{Name: "cairn-authmatrix", Version: "0"}

// connect opens a go-sdk session on node n's /v1/agents/{agent}/mcp with column key.
func (m *matrix) connect(t *testing.T, n *matrixNode, key, agent string) (*sdk.ClientSession, error) {
	t.Helper()
	return m.connectTo(t, n, key, "/v1/agents/"+agent+"/mcp")
}

// connectTo opens a go-sdk session on node n's MCP endpoint path with column key.
func (m *matrix) connectTo(t *testing.T, n *matrixNode, key, path string) (*sdk.ClientSession, error) {
	t.Helper()
	transport := &sdk.StreamableClientTransport{Endpoint: n.url + path,
		HTTPClient: &http.Client{Transport: bearer{m.authz[key]}}, DisableStandaloneSSE: true}
	cs, err := sdk.NewClient(matrixClient, nil).Connect(t.Context(), transport, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// toolAnswer is a tool call's result as the client decoded it: its JSON (the bytes the
// matrix compares), whether it is a tool error, its text and its structured code.
type toolAnswer struct {
	raw   string
	isErr bool
	text  string
	code  string
	res   map[string]any
}

func callTool(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) toolAnswer {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	a := toolAnswer{raw: string(raw), isErr: res.IsError}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			a.text = tc.Text
		}
	}
	if m, ok := res.StructuredContent.(map[string]any); ok {
		a.res = m
		a.code, _ = m["code"].(string)
	}
	return a
}

// mcpCall is one tool call of the matrix, on root a.
type mcpCall struct {
	tool string
	args map[string]any
	// creates: on a root that does not exist the call succeeds (it creates the root).
	creates bool
}

func (c mcpCall) String() string { return fmt.Sprintf("%s %v", c.tool, c.args) }

func with(base map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// rawToolCall posts one tools/call to node n's MCP endpoint for root agent, outside any
// client library, with session id sid when not "": the bytes of the HTTP answer.
func (m *matrix) rawToolCall(t *testing.T, n *matrixNode, key, agent, sid, tool string, args map[string]any) reply {
	t.Helper()
	a, _ := json.Marshal(args)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, a)
	headers := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	if sid != "" {
		headers = append(headers, "Mcp-Session-Id", sid)
	}
	return m.on(t, n, key, "POST", "/v1/agents/"+agent+"/mcp", body, headers...)
}

func TestAuthMatrixOverEveryMCPTool(t *testing.T) {
	m := newMatrix(t)
	sessions := map[string]*sdk.ClientSession{}
	session := func(n *matrixNode, key string) *sdk.ClientSession {
		t.Helper()
		if cs := sessions[n.name+key]; cs != nil {
			return cs
		}
		cs, err := m.connect(t, n, key, "a")
		if err != nil {
			t.Fatalf("%s: %s: connect: %v", n.name, key, err)
		}
		sessions[n.name+key] = cs
		return cs
	}
	call := func(n *matrixNode, key string, c mcpCall) toolAnswer {
		t.Helper()
		return callTool(t, session(n, key), c.tool, c.args)
	}
	mustOK := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		a := call(m.full, keyAdmin, mcpCall{tool: tool, args: args})
		if a.isErr {
			t.Fatalf("%s: %s", tool, a.text)
		}
		return a.res
	}
	mustOK("workbench_put_file", map[string]any{"id": "w", "section": "input", "path": "dir/x.txt", "text": "hello x\nhello again\n"})
	mustOK("workbench_put_file", map[string]any{"id": "w", "section": "input", "path": "dir/y.txt", "text": "y"})
	snap := mustOK("workbench_snapshot", map[string]any{"id": "w", "name": "s1"})
	mustOK("workbench_snapshot", map[string]any{"id": "w", "name": "s2"})
	digest := "sha256:" + strings.Repeat("a", 64)
	mustOK("workbench_commit", map[string]any{"id": "w", "manifest": map[string]any{"run": 1}, "content_digest_uri": digest})
	mustOK("workbench_restore", map[string]any{"id": "w", "destination_id": "w2", "at_snapshot": "s1"})
	readCursor, _ := mustOK("workbench_read", map[string]any{"id": "w", "section": "input", "path": "dir/x.txt", "format": "bytes", "limit": 3})["next_cursor"].(string)
	if readCursor == "" {
		t.Fatal("no read cursor")
	}
	file := map[string]any{"id": "w", "section": "input", "path": "dir/x.txt"}
	calls := []mcpCall{
		{tool: "workbench_list", args: map[string]any{"id": "w", "section": "input"}},
		{tool: "workbench_list", args: map[string]any{"id": "w", "section": "input", "at_snapshot": snap["snapshot_id"]}},
		{tool: "workbench_stat", args: file},
		{tool: "workbench_stat", args: map[string]any{"id": "w"}},
		{tool: "workbench_read", args: file},
		{tool: "workbench_read", args: with(file, "at_snapshot", "s1")},
		{tool: "workbench_read", args: with(file, "format", "bytes", "limit", 3, "cursor", readCursor)},
		{tool: "workbench_grep", args: map[string]any{"id": "w", "pattern": "hello", "recursive": true}},
		{tool: "workbench_search", args: map[string]any{"predicates": []any{map[string]any{"field": "artifact.ext", "op": "eq", "value": "txt"}}}},
		{tool: "workbench_aggregate", args: map[string]any{"measures": []any{map[string]any{"name": "n", "op": "count"}}, "group_by": []string{"artifact.section"}}},
		{tool: "workbench_catalog", args: map[string]any{"include_facets": true}},
		{tool: "workbench_find", args: map[string]any{"include_manifest": true}},
		{tool: "workbench_snapshot_list", args: map[string]any{"id": "w"}},

		{tool: "workbench_create", args: map[string]any{"id": "w9"}, creates: true},
		{tool: "workbench_put_file", args: map[string]any{"id": "w", "section": "input", "path": "new.txt", "text": "n"}, creates: true},
		{tool: "workbench_append", args: with(file, "text", "more"), creates: true},
		{tool: "workbench_edit", args: with(file, "old_string", "hello x", "new_string", "bye")},
		{tool: "workbench_snapshot", args: map[string]any{"id": "w", "name": "s3"}},
		{tool: "workbench_snapshot_renew", args: map[string]any{"id": "w", "name": "s1", "ttl_days": 9}},
		{tool: "workbench_snapshot_retire", args: map[string]any{"id": "w", "name": "s2"}},
		{tool: "workbench_restore", args: map[string]any{"id": "w", "destination_id": "w3", "at_snapshot": "s1"}},
		{tool: "workbench_commit", args: map[string]any{"id": "w", "manifest": map[string]any{"run": 2}, "content_digest_uri": digest, "replace": true}, creates: true},
	}
	// Every tool the node lists is in the matrix; its read-only hint says which it is.
	listed, err := session(m.full, keyAdmin).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{}
	for _, tool := range listed.Tools {
		readOnly[tool.Name] = tool.Annotations != nil && tool.Annotations.ReadOnlyHint
	}
	covered := map[string]bool{}
	for _, c := range calls {
		covered[c.tool] = true
		if _, ok := readOnly[c.tool]; !ok {
			t.Errorf("%s: not listed by the node", c.tool)
		}
	}
	for name := range readOnly {
		if !covered[name] {
			t.Errorf("%s: not in the matrix", name)
		}
	}
	if len(readOnly) != 18 {
		t.Errorf("the node lists %d tools, want the 18 of the workbench profile", len(readOnly))
	}

	missingWorkbench := call(m.twin, keyAdmin, mcpCall{tool: "workbench_stat", args: map[string]any{"id": "w"}})
	if !missingWorkbench.isErr || missingWorkbench.code != "NotFound" || missingWorkbench.res["message"] != `workbench "w" does not exist` {
		t.Fatalf("a missing root's workbench: %s", missingWorkbench.raw)
	}
	denied := func(what, key, verb string, scope auth.Scope, a toolAnswer) {
		t.Helper()
		want := fmt.Sprintf(`{"status":"error","code":"PermissionDenied","message":"principal \"%s\" may not %s agent root \"a\": it lacks the %s scope","retryable":false,"details":{"scope":"%s"}}`,
			m.ids[key], verb, scope, scope)
		if !a.isErr || a.text != want || a.code != "PermissionDenied" {
			t.Errorf("%s: %s: %s", what, key, a.raw)
		}
	}
	same := func(what string, got, want toolAnswer) {
		t.Helper()
		if got.raw != want.raw {
			t.Errorf("%s:\n got %s\nwant %s", what, got.raw, want.raw)
		}
	}
	// sameBut: a root-wide query by a key bound to one workbench of root a reads root a,
	// which exists: its shard version is all the answer tells of it.
	sameBut := func(what string, got, want toolAnswer, ignore string) {
		t.Helper()
		g, w := maps.Clone(got.res), maps.Clone(want.res)
		delete(g, ignore)
		delete(w, ignore)
		if got.isErr != want.isErr || g == nil || fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s (but %s):\n got %s\nwant %s", what, ignore, got.raw, want.raw)
		}
	}
	cells := 0
	unauthenticated := func(c mcpCall) {
		t.Helper()
		for _, key := range unauthenticatedKeys {
			got := m.rawToolCall(t, m.full, key, "a", "", c.tool, c.args)
			wantUnauthenticated(t, c.String(), key, "POST", got)
			sameReply(t, c.String()+": "+key+": an existing root vs a missing one", got, m.rawToolCall(t, m.twin, key, "a", "", c.tool, c.args))
			cells += 2
		}
	}
	// Reads first: nothing changes either node until the writes below.
	for _, c := range calls {
		if !readOnly[c.tool] {
			continue
		}
		baseline := call(m.full, keyAdmin, c)
		if baseline.isErr {
			t.Errorf("%s: admin key: %s", c, baseline.raw)
		}
		if _, hasCursor := c.args["cursor"]; !hasCursor {
			same(c.String()+": read-only key", call(m.full, keyRO, c), baseline)
			cells++
		}
		missing := call(m.twin, keyAdmin, c)
		same(c.String()+": another root's key vs a root that does not exist", call(m.full, keyOther, c), missing)
		same(c.String()+": another root's key, the same on the twin", call(m.twin, keyOther, c), missing)
		sameBut(c.String()+": a key bound to another workbench vs a root that does not exist", call(m.full, keyBound, c), missing, "read_version")
		denied(c.String(), keyWO, "read", auth.ScopeRead, call(m.full, keyWO, c))
		unauthenticated(c)
		cells += 5
	}
	for _, c := range calls {
		if readOnly[c.tool] {
			continue
		}
		denied(c.String(), keyRO, "change", auth.ScopeWrite, call(m.full, keyRO, c))
		other, bound := call(m.full, keyOther, c), call(m.full, keyBound, c)
		if c.creates {
			want := missingWorkbench
			if c.args["id"] == "w9" {
				want = call(m.twin, keyAdmin, mcpCall{tool: "workbench_stat", args: map[string]any{"id": "w9"}})
			}
			same(c.String()+": another root's key", other, want)
			same(c.String()+": a key bound to another workbench", bound, want)
		} else {
			missing := call(m.twin, keyAdmin, c)
			same(c.String()+": another root's key vs a root that does not exist", other, missing)
			same(c.String()+": a key bound to another workbench vs a root that does not exist", bound, missing)
		}
		unauthenticated(c)
		cells += 3
	}
	// Nothing of the refused calls happened.
	r := mustOK("workbench_read", file)
	if items, _ := r["items"].([]any); len(items) == 0 || items[0].(map[string]any)["value"] != "hello x" {
		t.Errorf("the file changed: %v", r)
	}
	if a := call(m.twin, keyAdmin, mcpCall{tool: "workbench_list", args: map[string]any{"id": "w"}}); !a.isErr || a.code != "NotFound" {
		t.Errorf("twin: root a appeared: %s", a.raw)
	}
	// The admin key's calls succeed, in order.
	for _, c := range calls {
		if !readOnly[c.tool] {
			if a := call(m.full, keyAdmin, c); a.isErr {
				t.Errorf("%s: admin key: %s", c, a.raw)
			}
			cells++
		}
	}
	// A client without a live key cannot open a session.
	for _, key := range unauthenticatedKeys {
		if _, err := m.connect(t, m.full, key, "a"); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("%s: the go-sdk client connected (%v)", key, err)
		}
		cells++
	}
	t.Logf("MCP matrix: %d calls over %d tools, %d checked cells", len(calls), len(readOnly), cells)
}

// TestAuthMCPSessionIsNoCredential: the endpoint is stateless (it issues no
// Mcp-Session-Id), so a session id carries no authority: the id a first key used, sent
// with another key, answers exactly as an id never seen, and as no id.
func TestAuthMCPSessionIsNoCredential(t *testing.T) {
	m := newMatrix(t)
	put := m.rawToolCall(t, m.full, keyAdmin, "a", "sess-1", "workbench_put_file", map[string]any{"id": "w", "section": "input", "path": "x.txt", "text": "x"})
	if put.status != 200 || strings.Contains(string(put.body), `"isError":true`) {
		t.Fatalf("put: %d %s", put.status, put.body)
	}
	if sid := put.header.Get("Mcp-Session-Id"); sid != "" {
		t.Fatalf("the endpoint issued a session id %q", sid)
	}
	read := map[string]any{"id": "w", "section": "input", "path": "x.txt"}
	for _, key := range []string{keyOther, keyWO, keyRO} {
		want := m.rawToolCall(t, m.full, key, "a", "never-issued", "workbench_read", read)
		sameReply(t, key+": the first key's session id", m.rawToolCall(t, m.full, key, "a", "sess-1", "workbench_read", read), want)
		sameReply(t, key+": no session id", m.rawToolCall(t, m.full, key, "a", "", "workbench_read", read), want)
	}
	if r := m.rawToolCall(t, m.full, keyOther, "a", "sess-1", "workbench_read", read); !strings.Contains(string(r.body), `\"code\":\"NotFound\"`) {
		t.Errorf("another root's key with the session id: %s", r.body)
	}
	for _, key := range unauthenticatedKeys {
		wantUnauthenticated(t, "the first key's session id", key, "POST", m.rawToolCall(t, m.full, key, "a", "sess-1", "workbench_read", read))
	}
}
