package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpAgent is the agent root every MCP session of the test works in.
const mcpAgent = "mcp-agent"

// TestMCPSessionOverStdioAndHTTP runs one scripted Workbench session with the official
// go-sdk client over each way an agent reaches Cairn: `cairn mcp` over real stdio on an
// embedded node, streamable HTTP at /v1/agents/{agent}/mcp of `cairn serve`, and `cairn mcp
// --server` proxying stdio to that endpoint. Afterwards the files written over MCP are read
// over REST from the same agent root, byte for byte.
func TestMCPSessionOverStdioAndHTTP(t *testing.T) {
	t.Parallel()

	t.Run("stdio with an embedded node", func(t *testing.T) {
		dataDir := t.TempDir()
		cs, closeSession := connectStdio(t, "mcp", "--agent", mcpAgent, "--data-dir", dataDir)
		files := runWorkbenchSession(t, cs, "viastdio")
		closeSession()
		// The node is gone with the session; a server on its data directory serves the files.
		srv := framework.StartProcess(t, cairnRaceBin, dataDir)
		checkOverREST(t, srv.URL, "viastdio", files)
	})

	srv := framework.StartProcess(t, cairnRaceBin, t.TempDir())
	t.Run("streamable HTTP", func(t *testing.T) {
		cs := framework.MCP(t, srv.URL, mcpAgent, "")
		files := runWorkbenchSession(t, cs, "viahttp")
		if err := cs.Close(); err != nil {
			t.Errorf("closing the HTTP session: %v", err)
		}
		checkOverREST(t, srv.URL, "viahttp", files)
		// The session was bound to its agent root: another agent does not see the files.
		if r := doHTTP(t, "GET", fileURL(srv.URL, "other-agent", "viahttp", "input/notes.txt"), nil); r.status != 404 {
			t.Errorf("a file written over MCP as %s is visible to another agent root: %d %q", mcpAgent, r.status, r.body)
		}
	})
	t.Run("stdio proxy to a server", func(t *testing.T) {
		cs, closeSession := connectStdio(t, "mcp", "--agent", mcpAgent, "--server", srv.URL)
		files := runWorkbenchSession(t, cs, "viaproxy")
		closeSession()
		checkOverREST(t, srv.URL, "viaproxy", files)
	})
}

// connectStdio starts cairn with args as an MCP server on its stdin/stdout and connects
// the go-sdk client to it. closeSession closes stdin and requires a prompt exit with
// status 0; the child's stderr is shown when the test fails.
func connectStdio(t *testing.T, args ...string) (cs *sdk.ClientSession, closeSession func()) {
	t.Helper()
	var log framework.Log
	cmd := exec.Command(cairnRaceBin, args...)
	cmd.Env = framework.ChildEnv()
	cmd.Stderr = &framework.LineWriter{Log: &log, Prefix: "[cairn mcp] "}
	cmd.SysProcAttr = framework.ChildSysProcAttr()
	const terminate = 20 * time.Second
	transport := &sdk.CommandTransport{Command: cmd, TerminateDuration: terminate}
	closed := false
	closeSession = func() {
		t.Helper()
		if closed {
			return
		}
		closed = true
		start := time.Now()
		err := cs.Close()
		if d := time.Since(start); d >= terminate {
			t.Errorf("cairn %s did not exit within %v of its stdin closing (took %v)", strings.Join(args, " "), terminate, d)
		}
		if err != nil {
			t.Errorf("cairn %s: exit after stdin closed: %v", strings.Join(args, " "), err)
		}
	}
	t.Cleanup(func() {
		if cs != nil {
			closeSession()
		}
		out := log.String()
		if strings.Contains(out, framework.DataRaceMarker) {
			t.Errorf("the race detector reported a data race in cairn %s:\n%s", strings.Join(args, " "), out)
		} else if t.Failed() && out != "" {
			t.Logf("stderr of cairn %s:\n%s", strings.Join(args, " "), log.Tail(16<<10))
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "cairn-integration", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect to cairn %s over stdio: %v\nstderr:\n%s", strings.Join(args, " "), err, log.String())
	}
	return cs, closeSession
}

// toolResult is a decoded tool answer (numbers as json.Number).
type toolResult map[string]any

func (r toolResult) str(key string) string { s, _ := r[key].(string); return s }

func (r toolResult) num(t *testing.T, key string) int64 {
	t.Helper()
	n, ok := r[key].(json.Number)
	if !ok {
		t.Fatalf("result field %q is %T %v, want a number: %v", key, r[key], r[key], r)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("result field %q = %s is not an integer", key, n)
	}
	return i
}

func (r toolResult) obj(t *testing.T, key string) toolResult {
	t.Helper()
	m, ok := r[key].(map[string]any)
	if !ok {
		t.Fatalf("result field %q is %T, want an object: %v", key, r[key], r)
	}
	return m
}

func (r toolResult) list(t *testing.T, key string) []any {
	t.Helper()
	l, ok := r[key].([]any)
	if !ok {
		t.Fatalf("result field %q is %T, want an array: %v", key, r[key], r)
	}
	return l
}

func decodeJSON(b []byte) (toolResult, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON object")
	}
	return m, nil
}

// mcpCaller calls tools on one session and checks the contract's result shape.
type mcpCaller struct {
	t  *testing.T
	cs *sdk.ClientSession
}

// callTool calls tool on cs and checks the shape every answer has: one text content
// holding one JSON object whose first key is "status" ("success" exactly when isError is
// false). It returns the answer, its text and the text decoded (numbers as json.Number,
// written exactly as the server wrote them).
func callTool(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (*sdk.CallToolResult, string, toolResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error (tool errors must be results): %v", tool, args, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items, want one text item", tool, len(res.Content))
	}
	text, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", tool, res.Content[0])
	}
	fromText, err := decodeJSON([]byte(text.Text))
	if err != nil {
		t.Fatalf("%s: text content is not one JSON object (%v): %q", tool, err, text.Text)
	}
	wantStatus := "success"
	if res.IsError {
		wantStatus = "error"
	}
	if !strings.HasPrefix(text.Text, `{"status":"`+wantStatus+`"`) {
		t.Errorf("%s: isError %v but the result does not start with {\"status\":%q: %.200s", tool, res.IsError, wantStatus, text.Text)
	}
	return res, text.Text, fromText
}

// call returns the decoded result and whether it is an error. Every answer has callTool's
// shape, and structuredContent must be the text's JSON object exactly (numbers compared
// as written).
func (c mcpCaller) call(tool string, args map[string]any) (toolResult, bool) {
	c.t.Helper()
	res, text, fromText := callTool(c.t, c.cs, tool, args)
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		c.t.Fatal(err)
	}
	structured, err := decodeJSON(raw)
	if err != nil {
		c.t.Fatalf("%s: structuredContent is not a JSON object (%v): %s", tool, err, raw)
	}
	if !reflect.DeepEqual(fromText, structured) {
		c.t.Errorf("%s: text content and structuredContent differ:\ntext:       %s\nstructured: %s", tool, text, raw)
	}
	return structured, res.IsError
}

// ok requires success.
func (c mcpCaller) ok(tool string, args map[string]any) toolResult {
	c.t.Helper()
	r, isErr := c.call(tool, args)
	if isErr {
		c.t.Fatalf("%s %v: want success, got %v", tool, args, r)
	}
	return r
}

// fails requires an error envelope with code.
func (c mcpCaller) fails(tool string, args map[string]any, code string) toolResult {
	c.t.Helper()
	r, isErr := c.call(tool, args)
	if !isErr || r["code"] != code {
		c.t.Errorf("%s %v: want an error with code %s, got isError %v: %v", tool, args, code, isErr, r)
		return r
	}
	if _, ok := r["retryable"].(bool); !ok || r.str("message") == "" {
		c.t.Errorf("%s: error envelope without message or retryable: %v", tool, r)
	}
	if _, ok := r["details"].(map[string]any); !ok {
		c.t.Errorf("%s: error envelope without a details object: %v", tool, r)
	}
	return r
}

func sha256URI(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// runWorkbenchSession runs the scripted session in workbench wb and returns the files it
// left (path inside the workbench → bytes) for checkOverREST.
func runWorkbenchSession(t *testing.T, cs *sdk.ClientSession, wb string) map[string][]byte {
	t.Helper()
	c := mcpCaller{t: t, cs: cs}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// tools/list advertises the Workbench tools, each with an input schema.
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil {
			t.Errorf("tool %s has no input schema", tool.Name)
		}
	}
	for _, want := range sessionTools { // the 18 of docs/workbench.md
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}

	// create, and its exact retry.
	wbPath := "/agents/" + mcpAgent + "/wb/" + wb
	created := c.ok("workbench_create", map[string]any{"id": wb})
	sections := fmt.Sprint(created["sections"])
	if created.str("workbench_id") != wb || created.str("path") != wbPath || sections != "[input scripts outputs logs metadata]" {
		t.Errorf("workbench_create: %v; want workbench_id %s, path %s, sections [input scripts outputs logs metadata]", created, wb, wbPath)
	}
	if again := c.ok("workbench_create", map[string]any{"id": wb}); !reflect.DeepEqual(again, created) {
		t.Errorf("workbench_create retried: %v, want the same result %v", again, created)
	}

	// put_file: create-only by default, replace-only with replace=true.
	notes := []byte("hello\nworld\n")
	put := c.ok("workbench_put_file", map[string]any{"id": wb, "section": "input", "path": "notes.txt", "text": string(notes)})
	if put.str("section") != "input" || put.str("relative_path") != "notes.txt" || put.str("path") != wbPath+"/input/notes.txt" ||
		put.num(t, "size_bytes") != int64(len(notes)) || put.str("digest_uri") != sha256URI(notes) ||
		put.str("content_type") != "text/plain; charset=utf-8" || put["replace"] != false || put.num(t, "generation") < 1 {
		t.Errorf("workbench_put_file: %v", put)
	}
	c.fails("workbench_put_file", map[string]any{"id": wb, "section": "input", "path": "notes.txt", "text": "again"}, "AlreadyExists")
	c.fails("workbench_put_file", map[string]any{"id": wb, "section": "input", "path": "missing.txt", "text": "x", "replace": true}, "NotFound")
	c.fails("workbench_put_file", map[string]any{"id": wb, "section": "input", "path": "both.txt", "text": "x", "base64": "eA=="}, "InvalidArguments")
	notes = []byte("hello\nworld\nagain\n")
	replaced := c.ok("workbench_put_file", map[string]any{"id": wb, "section": "input", "path": "notes.txt", "text": string(notes), "replace": true})
	if replaced.num(t, "generation") <= put.num(t, "generation") || replaced["replace"] != true || replaced.str("digest_uri") != sha256URI(notes) {
		t.Errorf("workbench_put_file replace=true: %v (first write: generation %d)", replaced, put.num(t, "generation"))
	}
	notesGen := replaced.num(t, "generation")

	// append: creates, then appends; digest covers the appended bytes only.
	a1 := c.ok("workbench_append", map[string]any{"id": wb, "section": "logs", "path": "run.log", "text": "one\n"})
	if a1["created"] != true || a1.num(t, "appended_bytes") != 4 || a1.num(t, "size_bytes") != 4 || a1.str("digest") != sha256URI([]byte("one\n")) {
		t.Errorf("first workbench_append: %v", a1)
	}
	a2 := c.ok("workbench_append", map[string]any{"id": wb, "section": "logs", "path": "run.log", "text": "two\n"})
	if a2["created"] != false || a2.num(t, "appended_bytes") != 4 || a2.num(t, "size_bytes") != 8 ||
		a2.str("digest") != sha256URI([]byte("two\n")) || a2.num(t, "generation") <= a1.num(t, "generation") {
		t.Errorf("second workbench_append: %v; want created false, 4 appended, 8 total, digest %s (of \"two\\n\" only)", a2, sha256URI([]byte("two\n")))
	}

	// edit: a unique match, an ambiguous one, none, an identical result, and a binary file.
	c.ok("workbench_put_file", map[string]any{"id": wb, "section": "scripts", "path": "edit.txt", "text": "alpha beta alpha\n"})
	edited := c.ok("workbench_edit", map[string]any{"id": wb, "section": "scripts", "path": "edit.txt", "old_string": "beta", "new_string": "gamma"})
	if edited.num(t, "replacements") != 1 || edited["no_change"] != false || edited.num(t, "size_bytes") != int64(len("alpha gamma alpha\n")) {
		t.Errorf("workbench_edit: %v", edited)
	}
	amb := c.fails("workbench_edit", map[string]any{"id": wb, "section": "scripts", "path": "edit.txt", "old_string": "alpha", "new_string": "x"}, "AmbiguousEdit")
	if d, ok := amb["details"].(map[string]any); !ok || fmt.Sprint(d["matches"]) != "2" {
		t.Errorf("AmbiguousEdit: want details.matches 2: %v", amb)
	}
	c.fails("workbench_edit", map[string]any{"id": wb, "section": "scripts", "path": "edit.txt", "old_string": "zzz", "new_string": "x"}, "NoMatch")
	same := c.ok("workbench_edit", map[string]any{"id": wb, "section": "scripts", "path": "edit.txt", "old_string": "gamma", "new_string": "gamma"})
	if same["no_change"] != true || same.num(t, "generation") != edited.num(t, "generation") {
		t.Errorf("workbench_edit to an identical body: %v; want no_change and generation %d", same, edited.num(t, "generation"))
	}
	binary := []byte{0xff, 0xfe, 'a', '\n', 0x00}
	bin := c.ok("workbench_put_file", map[string]any{"id": wb, "section": "outputs", "path": "bin.dat", "base64": base64.StdEncoding.EncodeToString(binary)})
	if bin.str("content_type") != "application/octet-stream" || bin.str("digest_uri") != sha256URI(binary) {
		t.Errorf("workbench_put_file base64: %v", bin)
	}
	c.fails("workbench_edit", map[string]any{"id": wb, "section": "outputs", "path": "bin.dat", "old_string": "a", "new_string": "b"}, "InvalidUtf8")

	// list, stat, read.
	c.fails("workbench_list", map[string]any{"id": wb, "section": "input", "path": "notes.txt"}, "NotDirectory")
	listed := c.ok("workbench_list", map[string]any{"id": wb, "section": "input"})
	entries := listed.list(t, "entries")
	if len(entries) != 1 {
		t.Errorf("workbench_list input: want only notes.txt (nothing else may have been written): %v", listed)
	} else if e := toolResult(entries[0].(map[string]any)); e.str("name") != "notes.txt" || e.str("kind") != "file" || e.num(t, "size_bytes") != int64(len(notes)) {
		t.Errorf("workbench_list input: entry %v", e)
	}
	stat := c.ok("workbench_stat", map[string]any{"id": wb, "section": "input", "path": "notes.txt"})
	st := stat.obj(t, "card")
	if stat.str("workbench_id") != wb || stat.str("path") != wbPath+"/input/notes.txt" || stat.str("section") != "input" || stat.str("relative_path") != "notes.txt" ||
		st.str("kind") != "file" || st.str("name") != "notes.txt" || st.num(t, "size_bytes") != int64(len(notes)) || st.num(t, "generation") != notesGen ||
		st.str("digest_uri") != sha256URI(notes) || st.str("content_type") != "text/plain; charset=utf-8" {
		t.Errorf("workbench_stat: %v; want file notes.txt, %d bytes, generation %d", stat, len(notes), notesGen)
	}
	rd := c.ok("workbench_read", map[string]any{"id": wb, "section": "input", "path": "notes.txt"})
	items := rd.list(t, "items")
	var lines []string
	for i, it := range items {
		item := toolResult(it.(map[string]any))
		if item.num(t, "index") != int64(i) {
			t.Errorf("workbench_read: item %d has index %v", i, item["index"])
		}
		lines = append(lines, item.str("value"))
	}
	if rd.str("record_type") != "text_lines" || rd.num(t, "record_count") != 3 || rd["truncated"] != false ||
		!slices.Equal(lines, []string{"hello", "world", "again"}) || rd.num(t, "generation") != notesGen {
		t.Errorf("workbench_read: %v; want text_lines hello, world, again", rd)
	}

	// Paths outside the jail rules, and the reserved manifest path, are InvalidArguments.
	for _, bad := range []struct{ section, path string }{
		{"input", "../x"}, {"input", "a//b"}, {"input", "/abs"}, {"logs", "logs/x"}, {"metadata", "run_manifest.json"},
	} {
		c.fails("workbench_put_file", map[string]any{"id": wb, "section": bad.section, "path": bad.path, "text": "x"}, "InvalidArguments")
	}
	for _, s := range []string{"logs", "metadata"} {
		l := c.ok("workbench_list", map[string]any{"id": wb, "section": s})
		for _, e := range l.list(t, "entries") {
			if name := toolResult(e.(map[string]any)).str("name"); s != "logs" || name != "run.log" {
				t.Errorf("a rejected write left %s/%s behind", s, name)
			}
		}
	}

	return map[string][]byte{
		"input/notes.txt":  notes,
		"logs/run.log":     []byte("one\ntwo\n"),
		"scripts/edit.txt": []byte("alpha gamma alpha\n"),
		"outputs/bin.dat":  binary,
	}
}

// checkOverREST reads each file of the MCP session over REST, in the same agent root.
func checkOverREST(t *testing.T, base, wb string, files map[string][]byte) {
	t.Helper()
	for p, want := range files {
		r := doHTTP(t, "GET", fileURL(base, mcpAgent, wb, p), nil)
		if r.status != 200 || !bytes.Equal(r.body, want) || r.header.Get("Cairn-Digest") != sha256URI(want) {
			t.Errorf("REST GET %s/%s after MCP: status %d, body %q, Cairn-Digest %s; want 200, %q, %s",
				wb, p, r.status, r.body, r.header.Get("Cairn-Digest"), want, sha256URI(want))
		}
	}
}
