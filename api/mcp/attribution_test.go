package mcp

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth/authtest"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestToolsRecordTheirPrincipalAndToolAndAuditEachChange: over streamable HTTP, each
// revision names the principal and tool that wrote it (workbench_stat's card.producer),
// every changing tool call writes one audit line, and reads write none.
func TestToolsRecordTheirPrincipalAndToolAndAuditEachChange(t *testing.T) {
	svc := newService(t, 0)
	logs := &workbenchtest.LogBuffer{}
	h := Handler(svc, Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	mux := http.NewServeMux()
	mux.Handle("/v1/agents/{agent}/mcp", h)
	ts := httptest.NewServer(authtest.TrustHeader(mux))
	t.Cleanup(ts.Close)
	connect := func(id string) *sdk.ClientSession {
		cs, err := sdk.NewClient(testClient, nil).Connect(t.Context(), &sdk.StreamableClientTransport{
			Endpoint: ts.URL + "/v1/agents/a/mcp", HTTPClient: &http.Client{Transport: authtest.As(id)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := connect("alice"), connect("bob")
	put := ok(t, alice, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "r.txt", "text": "one"})
	stat := func(cs *sdk.ClientSession) obj {
		return ok(t, cs, "workbench_stat", args{"id": "w", "section": "outputs", "path": "r.txt"}).card()
	}
	if c := stat(bob); c["producer"] != "alice via mcp/workbench_put_file" || c["producer_principal"] != "alice" || c["producer_surface"] != "mcp/workbench_put_file" {
		t.Fatalf("after alice's put: %v", c)
	}
	app := ok(t, bob, "workbench_append", args{"id": "w", "section": "outputs", "path": "r.txt", "text": "+two"})
	if c := stat(alice); c["producer"] != "bob via mcp/workbench_append" {
		t.Fatalf("after bob's append: %v", c)
	}
	ok(t, alice, "workbench_edit", args{"id": "w", "section": "outputs", "path": "r.txt", "old_string": "two", "new_string": "2"})
	if c := stat(bob); c["producer"] != "alice via mcp/workbench_edit" {
		t.Fatalf("after alice's edit: %v", c)
	}
	if c := ok(t, bob, "workbench_stat", args{"id": "w"}).card(); c["producer"] != "alice via mcp/workbench_edit" {
		t.Fatalf("the workbench's last change: %v", c)
	}
	if c := ok(t, bob, "workbench_stat", args{"id": "w", "section": "outputs"}).card(); c["producer"] != "" {
		t.Fatalf("a section has no producer: %v", c)
	}
	// Data written without a principal or surface (as before producers) shows "".
	if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "input/old", Body: bytes.NewReader([]byte("x"))}); err != nil {
		t.Fatal(err)
	}
	if c := ok(t, alice, "workbench_stat", args{"id": "w", "section": "input", "path": "old"}).card(); c["producer"] != "" || c["producer_principal"] != "" {
		t.Fatalf("old data: %v", c)
	}
	fails(t, bob, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "r.txt", "text": "again"}, workbench.CodeAlreadyExists)

	lines := logs.Audits(t)
	num := func(o obj, k string) float64 { return float64(o.int(t, k)) }
	want := []map[string]any{
		{"principal": "alice", "surface": "mcp/workbench_put_file", "workbench": "w", "path": "outputs/r.txt", "outcome": "ok", "generation": num(put, "generation")},
		{"principal": "bob", "surface": "mcp/workbench_append", "workbench": "w", "path": "outputs/r.txt", "outcome": "ok", "generation": num(app, "generation")},
		{"principal": "alice", "surface": "mcp/workbench_edit", "workbench": "w", "path": "outputs/r.txt", "outcome": "ok"},
		{"principal": "bob", "surface": "mcp/workbench_put_file", "workbench": "w", "path": "outputs/r.txt", "outcome": workbench.CodeAlreadyExists, "generation": float64(0)},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d audit lines, want %d: %v", len(lines), len(want), lines)
	}
	for i, w := range want {
		if lines[i]["agent"] != "a" || lines[i]["idempotency_key"] != "" {
			t.Errorf("line %d: %v", i, lines[i])
		}
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, lines[i][k], v, lines[i])
			}
		}
	}
}
