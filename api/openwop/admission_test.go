package openwop_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/workbench"
)

// TestProposalPagesTakeTheNodesMemoryBudget (issue 25 finding 11: only the queries were
// under the node's memory budget): GET /proposals holds its page's share of the budget
// (four copies of the 8 MiB page bound) while it answers, and while the budget stays taken
// it waits the queue timeout and is answered 429 rate_limited.
func TestProposalPagesTakeTheNodesMemoryBudget(t *testing.T) {
	const budget = 64 << 20
	opt := testOptions()
	opt.Readback = true
	url, n := newFacadeNode(t, opt, workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: budget, QueryQueueTimeout: 50 * time.Millisecond,
		ReservedWorkbenches: map[string]string{openwop.PacksWorkbench: openwop.Surface}})
	a := packsClient{t: t, base: url, owner: tenantA}
	a.create("agent-pack", agentPack(packP, "1.0.0", agentP, "Summarise."))
	if r := a.do(http.MethodGet, "/proposals", nil); r.status != http.StatusOK {
		t.Fatalf("GET /proposals: %d %s", r.status, r.body)
	}
	if peak := n.Service.AdmissionHighWater(); peak < 4*(8<<20) || peak > budget {
		t.Errorf("high-water mark %d bytes after one page, want at least %d and at most the budget %d", peak, 4*(8<<20), budget)
	}
	release, err := n.Service.AdmitMemory(t.Context(), budget, "the test's hold")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if r := a.do(http.MethodGet, "/proposals", nil); r.status != http.StatusTooManyRequests || r.json["error"] != "rate_limited" {
		t.Errorf("GET /proposals with the budget taken: %d %s", r.status, r.body)
	}
}

// TestFileListingsTakeTheNodesMemoryBudget (issue 25 finding 11): a listing of the
// workspace's files (one answer, no pages), a run (with its workspace's files) and a run's
// file listing hold their estimate
// of the node's memory budget, counted on the view they list, while they answer; while the
// budget stays taken each waits the queue timeout and is answered 429 rate_limited.
func TestFileListingsTakeTheNodesMemoryBudget(t *testing.T) {
	const budget = 64 << 20
	url, n := newFacadeNode(t, testOptions(), workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: budget, QueryQueueTimeout: 50 * time.Millisecond})
	files := url + "/v1/host/workspace/files"
	if a := call(t, http.MethodPut, files+"/notes.md", map[string]any{"content": "hello"}); a.status/100 != 2 {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	run := call(t, http.MethodPost, url+"/v1/runs", map[string]any{"workflowId": "wf"})
	if run.status/100 != 2 {
		t.Fatalf("POST /v1/runs: %d %s", run.status, run.body)
	}
	runURL := url + "/v1/runs/" + run.json["runId"].(string)
	runFiles := runURL + "/workspace/files"
	for _, u := range []string{files, runURL, runFiles} {
		if a := call(t, http.MethodGet, u, nil); a.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", u, a.status, a.body)
		}
	}
	if peak := n.Service.AdmissionHighWater(); peak < 16<<10 || peak > budget {
		t.Errorf("high-water mark %d bytes after the listings, want at least a listing's fixed part and at most the budget %d", peak, budget)
	}
	release, err := n.Service.AdmitMemory(t.Context(), budget, "the test's hold")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, u := range []string{files, runURL, runFiles} {
		if a := call(t, http.MethodGet, u, nil); a.status != http.StatusTooManyRequests || a.json["error"] != "rate_limited" {
			t.Errorf("GET %s with the budget taken: %d %s", u, a.status, a.body)
		}
	}
}
