package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// postJSON POSTs body to u, retrying the same request on transport errors and answers
// marked retryable until bound has passed (proposals and decisions are idempotent by
// their request_id and submission_id); it returns the last status and decoded body.
func postJSON(t *testing.T, u, body string, bound time.Duration) (int, map[string]any) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	code, b := 0, []byte(nil)
	_, _ = retry.Until(bound, func() error {
		code, b = 0, nil
		resp, err := hc.Post(u, "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		code = resp.StatusCode
		if bytes.Contains(b, []byte(`"retryable":true`)) {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return code, m
}

func getJSON(t *testing.T, u string) (int, map[string]any) {
	t.Helper()
	code, b := clusterDo(http.MethodGet, u, nil, 30*time.Second)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return code, m
}

// TestProposalsSurviveKill9AndFailover: proposals, decisions and judgments are
// replicated metadata. On a 3-node cluster a pending and an accepted proposal are made
// through one node; the shard leader is killed with SIGKILL; through the survivors both
// read back as they were (the accepted one with its judgment, the file at its result),
// replays answer the first time, the pending one is refused as stale with the head, and a
// new proposal is accepted; the killed node restarts and serves the same answers.
func TestProposalsSurviveKill9AndFailover(t *testing.T) {
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: 1})
	servers := pc.Nodes
	const agent, wb = "reviewed", "docs"
	base := func(s *framework.Process) string { return s.URL + "/v1/agents/" + agent + "/workbenches/" + wb }
	if code, b := clusterDo(http.MethodPut, base(servers[0]), nil, 60*time.Second); code/100 != 2 {
		t.Fatalf("create workbench: %d %s", code, b)
	}
	code, b := putIdempotent(fileURL(servers[1].URL, agent, wb, "outputs/plan.json"), `{"v":1}`, "plan-v1", 30*time.Second)
	if code/100 != 2 {
		t.Fatalf("put: %d %s", code, b)
	}
	_, st := getJSON(t, base(servers[2])+"/list?path=outputs")
	gen := st["entries"].([]any)[0].(map[string]any)["generation"].(float64)

	propose := func(s *framework.Process, reqID, text string) (int, map[string]any) {
		return postJSON(t, base(s)+"/proposals", fmt.Sprintf(`{"path":"outputs/plan.json","base_generation":%d,"text":%q,"request_id":%q,"reason":"review me"}`,
			int64(gen), text, reqID), 30*time.Second)
	}
	code, p1 := propose(servers[0], "p1", `{"v":2}`)
	if code != http.StatusCreated {
		t.Fatalf("propose p1: %d %v", code, p1)
	}
	code, p2 := propose(servers[1], "p2", `{"v":3}`)
	if code != http.StatusCreated {
		t.Fatalf("propose p2: %d %v", code, p2)
	}
	id1, id2 := p1["proposal_id"].(string), p2["proposal_id"].(string)
	accept := func(s *framework.Process, id, sub string) (int, map[string]any) {
		return postJSON(t, base(s)+"/proposals/"+id+"/decision", fmt.Sprintf(`{"disposition":"accept","submission_id":%q}`, sub), 30*time.Second)
	}
	code, d1 := accept(servers[2], id1, "s1")
	if code != http.StatusOK || d1["state"] != "accepted" {
		t.Fatalf("accept p1: %d %v", code, d1)
	}
	head := d1["result_generation"].(float64)

	leader := shardLeader(t, servers, 0, 3)
	survivors := others(servers, leader)
	leader.Kill()

	check := func(s *framework.Process, when string) {
		t.Helper()
		retry.Within(t, clusterFailoverBound, "proposals read back through "+s.URL+" "+when, func() error {
			code, got := getJSON(t, base(s)+"/proposals/"+id1)
			if code != http.StatusOK || got["state"] != "accepted" || got["judgment"] == nil {
				return fmt.Errorf("p1: %d %v", code, got)
			}
			if j := got["judgment"].(map[string]any); j["result_generation"] != head || j["submission_id"] != "s1" {
				return fmt.Errorf("p1's judgment: %v", j)
			}
			code, got = getJSON(t, base(s)+"/proposals/"+id2)
			if code != http.StatusOK || got["state"] != "pending" || got["stale"] != true || got["head_generation"] != head {
				return fmt.Errorf("p2: %d %v", code, got)
			}
			code, body := clusterDo(http.MethodGet, fileURL(s.URL, agent, wb, "outputs/plan.json"), nil, 10*time.Second)
			if code != http.StatusOK || string(body) != `{"v":2}` {
				return fmt.Errorf("file: %d %s", code, body)
			}
			return nil
		})
	}
	for _, s := range survivors {
		check(s, "after the leader's kill -9")
	}
	// Replays answer the first time.
	if code, again := propose(survivors[0], "p1", `{"v":2}`); code != http.StatusOK || again["proposal_id"] != id1 || again["replayed"] != true {
		t.Fatalf("replayed propose: %d %v", code, again)
	}
	if code, again := accept(survivors[1], id1, "s1"); code != http.StatusOK || again["replayed"] != true || again["result_generation"] != head {
		t.Fatalf("replayed decide: %d %v", code, again)
	}
	// The pending one is stale now; a fresh proposal at the head is accepted.
	if code, stale := accept(survivors[0], id2, "s2"); code != http.StatusConflict || stale["details"].(map[string]any)["head_generation"] != head {
		t.Fatalf("stale accept: %d %v", code, stale)
	}
	gen = head
	code, p3 := propose(survivors[1], "p3", `{"v":4}`)
	if code != http.StatusCreated {
		t.Fatalf("propose p3: %d %v", code, p3)
	}
	if code, d3 := accept(survivors[0], p3["proposal_id"].(string), "s3"); code != http.StatusOK || d3["state"] != "accepted" {
		t.Fatalf("accept p3: %d %v", code, d3)
	}
	_, js := getJSON(t, base(survivors[1])+"/judgments")
	if n := len(js["judgments"].([]any)); n != 2 {
		t.Fatalf("%d judgments after the failover, want 2: %v", n, js)
	}

	// The killed node comes back on its data directory and serves the same state.
	leader.Restart()
	retry.Within(t, 60*time.Second, "the restarted node serves the accepted p3", func() error {
		code, got := getJSON(t, base(leader)+"/proposals/"+p3["proposal_id"].(string))
		if code != http.StatusOK || got["state"] != "accepted" {
			return fmt.Errorf("p3 through the restarted node: %d %v", code, got)
		}
		return nil
	})
}
