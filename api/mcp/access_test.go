package mcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/api/workbench/workbenchtest"
)

// The authorization matrix of MCP over HTTP (issue 14, item 3): every tool with the
// principals of workbenchtest, on two nodes: full holds root a, twin does not (and signs
// cursors with another key). Root a on twin is the baseline "a root that does not exist".

func accessServer(t *testing.T, cursorKey []byte) *httptest.Server {
	t.Helper()
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, CursorKey: cursorKey}).Service
	h := Handler(svc, Options{})
	mux := http.NewServeMux()
	mux.Handle("/v1/agents/{agent}/mcp", h)
	mux.Handle("/mcp", h)
	ts := httptest.NewServer(workbenchtest.WithPrincipals(mux))
	t.Cleanup(ts.Close)
	return ts
}

type rpcAnswer struct {
	status int
	header http.Header
	body   []byte
}

// rawCall posts one tools/call for principal p ("" for none), with session id sid when
// not "".
func rawCall(t *testing.T, ts *httptest.Server, p, agent, sid, tool string, args any) rpcAnswer {
	t.Helper()
	a, _ := json.Marshal(args)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, a)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/v1/agents/"+agent+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if p != "" {
		req.Header.Set(workbenchtest.PrincipalHeader, p)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rpcAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}

// result decodes the tool result's structured content.
func (a rpcAnswer) result(t *testing.T) (obj, bool) {
	t.Helper()
	var m struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent obj  `json:"structuredContent"`
		} `json:"result"`
	}
	if a.status != 200 || json.Unmarshal(a.body, &m) != nil || m.Result.StructuredContent == nil {
		t.Fatalf("not a tool result: %d %s", a.status, a.body)
	}
	return m.Result.StructuredContent, m.Result.IsError
}

func sameRPC(t *testing.T, what string, got, want rpcAnswer) {
	t.Helper()
	g, w := got.header.Clone(), want.header.Clone()
	g.Del("Date")
	w.Del("Date")
	if got.status != want.status || string(got.body) != string(want.body) || fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("%s:\n got %d %v %s\nwant %d %v %s", what, got.status, g, got.body, want.status, w, want.body)
	}
}

// accessCall is one tool call of the matrix, on root a.
type accessCall struct {
	tool string
	args args
	// creates: on a root that does not exist the call succeeds (it creates the root).
	creates bool
}

func TestAccessMatrixOverEveryTool(t *testing.T) {
	full, twin := accessServer(t, nil), accessServer(t, []byte("another cursor key, 32 bytes...."))
	const all = "k-all"
	mustOK := func(tool string, a args) obj {
		t.Helper()
		r, isErr := rawCall(t, full, all, "a", "", tool, a).result(t)
		if isErr {
			t.Fatalf("%s: %v", tool, r)
		}
		return r
	}
	mustOK("workbench_put_file", args{"id": "w", "section": "input", "path": "dir/x.txt", "text": "hello x\nhello again\n"})
	mustOK("workbench_put_file", args{"id": "w", "section": "input", "path": "dir/y.txt", "text": "y"})
	snap := mustOK("workbench_snapshot", args{"id": "w", "name": "s1"})
	mustOK("workbench_snapshot", args{"id": "w", "name": "s2"})
	digest := "sha256:" + strings.Repeat("a", 64)
	mustOK("workbench_commit", args{"id": "w", "manifest": map[string]any{"run": 1}, "content_digest_uri": digest})
	mustOK("workbench_restore", args{"id": "w", "destination_id": "w2", "at_snapshot": "s1"})
	page := mustOK("workbench_read", args{"id": "w", "section": "input", "path": "dir/x.txt", "format": "bytes", "limit": 3})
	readCursor := page.str("next_cursor")
	if readCursor == "" {
		t.Fatalf("no read cursor: %v", page)
	}
	file := args{"id": "w", "section": "input", "path": "dir/x.txt"}
	with := func(base args, kv ...any) args {
		out := args{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	calls := []accessCall{
		{tool: "workbench_create", args: args{"id": "w9"}, creates: true},
		{tool: "workbench_put_file", args: args{"id": "w", "section": "input", "path": "new.txt", "text": "n"}, creates: true},
		{tool: "workbench_append", args: with(file, "text", "more"), creates: true},
		{tool: "workbench_edit", args: with(file, "old_string", "hello x", "new_string", "bye")},
		{tool: "workbench_list", args: args{"id": "w", "section": "input"}},
		{tool: "workbench_list", args: args{"id": "w", "section": "input", "at_snapshot": snap["snapshot_id"]}},
		{tool: "workbench_stat", args: file},
		{tool: "workbench_stat", args: args{"id": "w"}},
		{tool: "workbench_read", args: file},
		{tool: "workbench_read", args: with(file, "at_snapshot", "s1")},
		{tool: "workbench_read", args: with(file, "format", "bytes", "limit", 3, "cursor", readCursor)},
		{tool: "workbench_grep", args: args{"id": "w", "pattern": "hello", "recursive": true}},
		{tool: "workbench_search", args: args{"predicates": []any{map[string]any{"field": "artifact.ext", "op": "eq", "value": "txt"}}}},
		{tool: "workbench_aggregate", args: args{"measures": []any{map[string]any{"name": "n", "op": "count"}}, "group_by": []string{"artifact.section"}}},
		{tool: "workbench_catalog", args: args{"include_facets": true}},
		{tool: "workbench_find", args: args{"include_manifest": true}},
		{tool: "workbench_commit", args: args{"id": "w", "manifest": map[string]any{"run": 2}, "content_digest_uri": digest}, creates: true},
		{tool: "workbench_snapshot", args: args{"id": "w", "name": "s3"}},
		{tool: "workbench_snapshot_renew", args: args{"id": "w", "name": "s1", "ttl_days": 9}},
		{tool: "workbench_snapshot_retire", args: args{"id": "w", "name": "s2"}},
		{tool: "workbench_snapshot_list", args: args{"id": "w"}},
		{tool: "workbench_restore", args: args{"id": "w", "destination_id": "w3", "at_snapshot": "s1"}},
	}
	readOnly := map[string]bool{}
	for _, d := range tools {
		readOnly[d.name] = d.readOnly
	}
	covered := map[string]bool{}
	for _, c := range calls {
		covered[c.tool] = true
	}
	for _, d := range tools {
		if !covered[d.name] {
			t.Errorf("%s: not in the matrix", d.name)
		}
	}
	missingWorkbench := rawCall(t, twin, all, "a", "", "workbench_stat", args{"id": "w"})
	if r, isErr := missingWorkbench.result(t); !isErr || r.str("code") != "NotFound" || r.str("message") != `workbench "w" does not exist` {
		t.Fatalf("a missing root's workbench: %s", missingWorkbench.body)
	}
	denied := func(p, verb, scope string) string {
		return fmt.Sprintf(`{"status":"error","code":"PermissionDenied","message":"principal \"%s\" may not %s agent root \"a\": it lacks the %s scope","retryable":false,"details":{"scope":"%s"}}`, p, verb, scope, scope)
	}
	checkDenied := func(what string, a rpcAnswer, want string) {
		t.Helper()
		r, isErr := a.result(t)
		b, _ := json.Marshal(r)
		if !isErr || !strings.Contains(string(a.body), `"text":`+mustJSON(want)) || r.str("code") != "PermissionDenied" {
			t.Errorf("%s: %s (structured %s)", what, a.body, b)
		}
	}
	// Reads first: nothing changes either node until the writes below.
	for _, c := range calls {
		if !readOnly[c.tool] {
			continue
		}
		name := fmt.Sprintf("%s %v", c.tool, c.args)
		baseline := rawCall(t, full, all, "a", "", c.tool, c.args)
		if _, isErr := baseline.result(t); isErr {
			t.Errorf("%s: everything: %s", name, baseline.body)
		}
		if _, hasCursor := c.args["cursor"]; !hasCursor {
			sameRPC(t, name+": read-only key", rawCall(t, full, "k-ro", "a", "", c.tool, c.args), baseline)
		}
		missing := rawCall(t, twin, all, "a", "", c.tool, c.args)
		sameRPC(t, name+": another root's key vs a root that does not exist", rawCall(t, full, "k-b", "a", "", c.tool, c.args), missing)
		checkDenied(name+": write-only key", rawCall(t, full, "k-wo", "a", "", c.tool, c.args), denied("k-wo", "read", "workspace:read"))
	}
	for _, c := range calls {
		if readOnly[c.tool] {
			continue
		}
		name := fmt.Sprintf("%s %v", c.tool, c.args)
		checkDenied(name+": read-only key", rawCall(t, full, "k-ro", "a", "", c.tool, c.args), denied("k-ro", "change", "workspace:write"))
		other := rawCall(t, full, "k-b", "a", "", c.tool, c.args)
		if c.creates {
			want := missingWorkbench
			if c.args["id"] == "w9" {
				want = rawCall(t, twin, all, "a", "", "workbench_stat", args{"id": "w9"})
			}
			sameRPC(t, name+": another root's key", other, want)
			continue
		}
		sameRPC(t, name+": another root's key vs a root that does not exist", other, rawCall(t, twin, all, "a", "", c.tool, c.args))
	}
	// Nothing of the refused calls happened.
	if r := mustOK("workbench_read", file); r.list(t, "items")[0]["value"] != "hello x" {
		t.Errorf("the file changed: %v", r)
	}
	if r, isErr := rawCall(t, twin, all, "a", "", "workbench_list", args{"id": "w"}).result(t); !isErr || r.str("code") != "NotFound" {
		t.Errorf("twin: root a appeared: %v", r)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAccessSessionIsNoCredential: the endpoint is stateless (it issues no
// Mcp-Session-Id), so a session id carries no authority: the id a first principal used,
// sent by another principal, answers exactly as an id never seen, and as no id.
func TestAccessSessionIsNoCredential(t *testing.T) {
	ts := accessServer(t, nil)
	put := rawCall(t, ts, "k-all", "a", "sess-1", "workbench_put_file", args{"id": "w", "section": "input", "path": "x.txt", "text": "x"})
	if r, isErr := put.result(t); isErr {
		t.Fatalf("put: %v", r)
	}
	if sid := put.header.Get("Mcp-Session-Id"); sid != "" {
		t.Fatalf("the endpoint issued a session id %q", sid)
	}
	read := args{"id": "w", "section": "input", "path": "x.txt"}
	for _, p := range []string{"k-b", "k-wo", "k-ro"} {
		want := rawCall(t, ts, p, "a", "never-issued", "workbench_read", read)
		sameRPC(t, p+": the first principal's session id", rawCall(t, ts, p, "a", "sess-1", "workbench_read", read), want)
		sameRPC(t, p+": no session id", rawCall(t, ts, p, "a", "", "workbench_read", read), want)
	}
	if r, isErr := rawCall(t, ts, "k-b", "a", "sess-1", "workbench_read", read).result(t); !isErr || r.str("code") != "NotFound" {
		t.Errorf("another root's key with the session id: %v", r)
	}
}
