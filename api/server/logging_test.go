package server

import (
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// With --log-format json every line the node writes is JSON, the audit lines of every
// surface included: each part logs to the node's one configured logger (issue 25 finding
// 15: MCP's audit line fell back to slog.Default() in text).
func TestEveryLineOfANodeIsInItsLogFormat(t *testing.T) {
	cfg := testConfig(t)
	cfg.LogFormat, cfg.AccessLog = "json", true
	var out workbenchtest.LogBuffer
	n := openReadyLogged(t, cfg, ops.Credentials{}, ops.NewLogger(cfg, &out))
	srv := httptest.NewServer(n.Handler())
	defer srv.Close()

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "log-test", Version: "0"}, nil).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: srv.URL + "/v1/agents/demo/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "workbench_put_file",
		Arguments: map[string]any{"id": "wb", "section": "input", "path": "a.txt", "text": "over MCP"}})
	if err != nil || res.IsError {
		t.Fatalf("put_file: %v %v", err, res)
	}
	if _, err := client.New(srv.URL, nil).PutFile(t.Context(), "demo", "wb", "input/b.txt", strings.NewReader("over REST"), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	n.Close()

	audits := map[string]bool{}
	for _, m := range out.Audits(t) { // fails on a line that is not JSON
		audits[m["surface"].(string)] = true
	}
	for _, surface := range []string{"mcp/workbench_put_file", "rest/put"} {
		if !audits[surface] {
			t.Errorf("no JSON audit line of surface %s among %v:\n%s", surface, audits, out.String())
		}
	}
}
