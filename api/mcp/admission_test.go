package mcp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestLargeMessagesTakeTheNodesMemoryBudget (issue 25 finding 11: twelve 16 MiB
// workbench_put_file at once held 465 MB, outside the node's memory budget): a large MCP
// message holds messageCopies times its size of the budget while it is decoded and
// served, and while the budget stays taken it waits QueryQueueTimeout and is answered 429
// with the ResourceExhausted envelope, retryable.
func TestLargeMessagesTakeTheNodesMemoryBudget(t *testing.T) {
	const budget = 64 << 20
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: budget, QueryQueueTimeout: 50 * time.Millisecond}).Service
	ts := newHTTPServer(t, svc)

	text := strings.Repeat("x", 2<<20)
	cs := connectHTTP(t, ts.URL+"/v1/agents/a/mcp")
	ok(t, cs, "workbench_create", args{"id": "w"})
	ok(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "big.txt", "text": text})
	if peak := svc.AdmissionHighWater(); peak < messageCopies*int64(len(text)) || peak > budget {
		t.Errorf("high-water mark %d bytes after a %d-byte message, want at least %d and at most the budget %d",
			peak, len(text), messageCopies*len(text), budget)
	}

	release, err := svc.AdmitMemory(t.Context(), budget, "the test's hold")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "workbench_put_file", "arguments": args{"id": "w", "section": "outputs", "path": "b2.txt", "text": text}}})
	status, _, b := postRaw(t, ts.URL+"/v1/agents/a/mcp", string(msg))
	var env map[string]any
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("status %d: %.200q is not JSON", status, b)
	}
	if status != http.StatusTooManyRequests || env["code"] != workbench.CodeResourceExhausted || env["retryable"] != true {
		t.Errorf("with the budget taken: %d %v", status, env)
	}
}

// TestListingsHistoriesAndDiffsOverMCPTakeTheNodesMemoryBudget (issue 25 finding 11):
// workbench_list, cairn_history and a state diff (cairn_diff without path) hold their
// estimate of the node's memory budget, so while the budget stays taken each waits the
// queue timeout and is answered ResourceExhausted, retryable.
func TestListingsHistoriesAndDiffsOverMCPTakeTheNodesMemoryBudget(t *testing.T) {
	const budget = 64 << 20
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: budget, QueryQueueTimeout: 50 * time.Millisecond}).Service
	wb, cs := connectLanes(t, svc)
	file := args{"id": "w", "section": "outputs", "path": "a.txt"}
	ok(t, wb, "workbench_put_file", with(file, "text", "one"))
	ok(t, wb, "workbench_snapshot", args{"id": "w", "name": "before"})
	ok(t, wb, "workbench_put_file", with(file, "text", "two", "replace", true))
	calls := []struct {
		cs   *sdk.ClientSession
		tool string
		args args
	}{
		{wb, "workbench_list", args{"id": "w", "section": "outputs"}},
		{cs, "cairn_history", file},
		{cs, "cairn_diff", args{"id": "w", "from": "snapshot:before"}},
	}
	for _, c := range calls {
		ok(t, c.cs, c.tool, c.args)
	}
	release, err := svc.AdmitMemory(t.Context(), budget, "the test's hold")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, c := range calls {
		if e := fails(t, c.cs, c.tool, c.args, workbench.CodeResourceExhausted); e["retryable"] != true {
			t.Errorf("%s with the budget taken: %v", c.tool, e)
		}
	}
}
