package mcp

import (
	"strings"
	"testing"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// A root fenced for a move between shards refuses a tool's write with the retryable
// RoutingUnavailable, naming nothing internal; reads go on, and the write applies once the
// fence lifts.
func TestToolWriteToAMovingRootIsRetryable(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	ts := newHTTPServer(t, n.Service)
	cs := connectHTTP(t, ts.URL+"/v1/agents/a/mcp")
	ok(t, cs, "workbench_create", args{"id": "w"})
	ok(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "a.txt", "text": "one"})
	ref := meta.MoveRef{Agent: "a", MoveID: "m1"}
	n.MustPropose(t, meta.MoveFence{MoveRef: ref})
	e := fails(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "b.txt", "text": "two"}, workbench.CodeRoutingUnavailable)
	if e["retryable"] != true || strings.Contains(strings.ToLower(e["message"].(string)), "meta") || strings.Contains(e["message"].(string), "m1") {
		t.Fatalf("refused write: %v", e)
	}
	ok(t, cs, "workbench_read", args{"id": "w", "section": "outputs", "path": "a.txt"})
	n.MustPropose(t, meta.MoveLift{MoveRef: ref})
	ok(t, cs, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "b.txt", "text": "two"})
}
