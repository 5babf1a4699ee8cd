package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/internal/retry"
)

// Working documents on a three-node cluster: each step through another node (the router
// sends it to the shard's leader), two edits on one base racing through two nodes (one
// applies, the other is StaleBaseError), and the shard's leader stopped between the
// proposal and its decision: the decision, through a survivor, applies once, and its
// replay answers the same.
func TestClusterServesWorkingDocumentsAcrossNodesAndALeaderChange(t *testing.T) {
	nodes := startCluster(t, 3, oneShard)
	if code, b := request(t, http.MethodPut, nodes[0].url+"/v1/agents/default/workbenches/notes/files/input/a.md", []byte("notes")); code/100 != 2 {
		t.Fatalf("put: %d %s", code, b)
	}
	call := func(n *testClusterNode, method, route string, body any) (int, map[string]any) {
		t.Helper()
		var raw []byte
		if body != nil {
			raw, _ = json.Marshal(body)
		}
		code, b := request(t, method, n.url+"/api/workbench/"+route, raw)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return code, out
	}
	var origin string
	retry.SucceedsSoon(t, "the observation is a candidate on node 1", func() error {
		_, c := call(nodes[1], http.MethodGet, "candidates", nil)
		list, _ := c["candidates"].([]any)
		if len(list) == 0 {
			return errors.New("no candidates yet")
		}
		origin = list[0].(map[string]any)["eventId"].(string)
		return nil
	})
	code, created := call(nodes[1], http.MethodPost, "documents", map[string]any{"originEventId": origin, "title": "T", "body": "b\n", "requestId": "c"})
	if code != http.StatusCreated {
		t.Fatalf("create through node 1: %d %v", code, created)
	}
	doc, v1 := created["documentId"].(string), created["versionId"].(string)

	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, n := range []*testClusterNode{nodes[0], nodes[2]} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = call(n, http.MethodPost, "documents/"+doc+"/versions", map[string]any{"baseVersionId": v1, "title": "T",
				"body": fmt.Sprintf("edit through node %d\n", i), "requestId": fmt.Sprintf("race-%d", i)})
		}()
	}
	wg.Wait()
	if !(codes[0] == 200 && codes[1] == 409 || codes[0] == 409 && codes[1] == 200) {
		t.Fatalf("two racing edits through two nodes: %v, want one 200 and one 409", codes)
	}
	_, shown := call(nodes[2], http.MethodGet, "documents/"+doc, nil)
	head := shown["document"].(map[string]any)["versionId"].(string)
	if n := len(shown["versions"].([]any)); n != 2 {
		t.Fatalf("%d versions after the race, want 2", n)
	}
	code, sel := call(nodes[0], http.MethodPost, "documents/"+doc+"/selections", map[string]any{"selectedEventIds": []string{origin}, "selectedVersionIds": []string{}, "requestId": "s"})
	if code != 200 {
		t.Fatalf("select: %d %v", code, sel)
	}
	code, prop := call(nodes[2], http.MethodPost, "documents/"+doc+"/proposals", map[string]any{"selectionId": sel["selectionId"],
		"runnerId": "fixture-deterministic@1", "baseVersionId": head, "requestId": "p"})
	if code != 200 {
		t.Fatalf("propose: %d %v", code, prop)
	}

	leader := leaderOfVoters(t, nodes, 0, 3)
	leader.shutdown()
	var survivor *testClusterNode
	for _, n := range nodes {
		if n != leader {
			survivor = n
			break
		}
	}
	decisions := "proposals/" + prop["proposalEventId"].(string) + "/decisions"
	code, acc := call(survivor, http.MethodPost, decisions, map[string]any{"disposition": "accept", "submissionId": "d"})
	if code != 200 {
		t.Fatalf("accept after the leader stopped: %d %v", code, acc)
	}
	if code, again := call(survivor, http.MethodPost, decisions, map[string]any{"disposition": "accept", "submissionId": "d"}); code != 200 ||
		again["resultVersionId"] != acc["resultVersionId"] || again["decisionEventId"] != acc["decisionEventId"] {
		t.Fatalf("the accept's replay: %d %v", code, again)
	}
	_, shown = call(survivor, http.MethodGet, "documents/"+doc, nil)
	if shown["document"].(map[string]any)["versionId"] != acc["resultVersionId"] || len(shown["judgments"].([]any)) != 1 {
		t.Fatalf("after the accept: %v, judgments %v", shown["document"], shown["judgments"])
	}
}
