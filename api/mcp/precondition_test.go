package mcp

import (
	"testing"
)

// Every failed precondition a caller named over MCP is final (issue 25 item 7): the same
// call fails the same way until the caller reads again, so its envelope says
// retryable: false. The conditions MCP takes: workbench_put_file's expected_generation,
// cairn_workbench_delete's if_revision, and a proposal's base (cairn_decide of a proposal
// whose head moved: Conflict, details.reason "stale", details.head_generation).
func TestEveryFailedPreconditionOverMCPIsNotRetryable(t *testing.T) {
	ts := newHTTPServer(t, newService(t, 0))
	wb := connectHTTP(t, ts.URL+"/v1/agents/a/mcp")
	cs := connectHTTP(t, ts.URL+"/v1/agents/a/mcp/cairn")
	file := args{"id": "w", "section": "outputs", "path": "draft.md"}
	base := ok(t, wb, "workbench_put_file", with(file, "text", "first\n")).int(t, "generation")

	// A proposal on base, then the head moves: its accept is stale.
	p := ok(t, cs, "cairn_propose", args{"id": "w", "path": "outputs/draft.md", "base_generation": base, "request_id": "p1", "text": "second\n"})
	head := ok(t, wb, "workbench_put_file", with(file, "text", "moved\n", "replace", true)).int(t, "generation")

	notRetryable := func(what string, e obj) {
		t.Helper()
		if e["retryable"] != false {
			t.Errorf("%s: retryable %v, want false: %v", what, e["retryable"], e)
		}
	}
	stale := fails(t, cs, "cairn_decide", args{"id": "w", "proposal_id": p.str("proposal_id"), "disposition": "accept", "submission_id": "d1"}, "Conflict")
	if stale.details().str("reason") != "stale" || stale.details().int(t, "head_generation") != head {
		t.Errorf("stale accept: %v", stale)
	}
	notRetryable("a stale accept", stale)

	notRetryable("put_file at a past expected_generation",
		fails(t, wb, "workbench_put_file", with(file, "text", "late\n", "replace", true, "expected_generation", base), "Conflict"))

	rev := int64(0)
	for _, w := range ok(t, cs, "cairn_workbench_list", args{}).list(t, "workbenches") {
		if w.str("workbench_id") == "w" {
			rev = w.int(t, "revision")
		}
	}
	if rev < 2 {
		t.Fatalf("workbench revision %d", rev)
	}
	notRetryable("workbench delete at a past if_revision",
		fails(t, cs, "cairn_workbench_delete", args{"id": "w", "if_revision": rev - 1}, "Conflict"))
	ok(t, wb, "workbench_stat", file) // nothing deleted
}
