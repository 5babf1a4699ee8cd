package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRollingUpgradeRefusesWhatTheOlderReleaseLacksWhileVersionsAreMixed: with one node
// upgraded and leading the shard, a workbench is deleted through it (a command the
// previous release does not know: op 19, DeleteWorkspace), then the leadership moves to a
// node of the previous release. A follower of the previous release would answer the
// unknown op with an error and apply nothing while the upgraded nodes applied it, so the
// new release refuses the command before proposing it (the cluster-version gate,
// meta/clusterversion.go): a retryable RoutingUnavailable that says the cluster is being
// upgraded, with nothing applied anywhere. Once every node runs the new release the delete
// is done and holds through every node.
func TestRollingUpgradeRefusesWhatTheOlderReleaseLacksWhileVersionsAreMixed(t *testing.T) {
	const shards = 1
	nodes := startReleaseCluster(t, buildRelease(t, previousRelease), shards)
	const agent = "mixed"
	for _, wb := range []string{"doomed", "kept"} {
		if code, b := clusterDo(http.MethodPut, fileURL(nodes[0].URL, agent, wb, "input/a"), []byte(wb), 60*time.Second); code/100 != 2 {
			t.Fatalf("put into %s on the previous release: %d %s", wb, code, b)
		}
	}
	for i := range 3 {
		caughtUp(t, nodes, nodes[i], shards)
	}
	upgradeNode(t, nodes, 0, shards)
	// Bounce the leader (previous release) until the upgraded node leads the shard.
	for try := 0; shardLeader(t, nodes, 0, 3) != nodes[0]; try++ {
		if try == 8 {
			t.Fatalf("the upgraded node did not take the shard's leadership in %d bounces of the leader", try)
		}
		for i, s := range nodes {
			if s == shardLeader(t, nodes, 0, 3) {
				bounce(t, nodes, i, shards)
				break
			}
		}
	}
	delCode, b := clusterDo(http.MethodDelete, nodes[0].URL+"/v1/agents/"+agent+"/workbenches/doomed", nil, upgradeWriteBound)
	t.Logf("DELETE of workbench doomed through the upgraded leader while the followers run the previous release: %d %s", delCode, b)
	var env struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	}
	if delCode != http.StatusServiceUnavailable || json.Unmarshal(b, &env) != nil || env.Code != "RoutingUnavailable" ||
		!env.Retryable || !strings.Contains(env.Message, "being upgraded") {
		t.Fatalf("DELETE while versions are mixed: %d %s; want 503 RoutingUnavailable, retryable, saying the cluster is being upgraded", delCode, b)
	}
	// The leadership moves to a node of the previous release.
	bounce(t, nodes, 0, shards)
	if l := shardLeader(t, nodes, 0, 3); l == nodes[0] {
		t.Fatalf("the upgraded node leads again after its bounce; the test needs a leader of the previous release")
	}
	for i, s := range nodes {
		code, got := clusterDo(http.MethodGet, fileURL(s.URL, agent, "doomed", "input/a"), nil, upgradeWriteBound)
		if code != http.StatusOK || string(got) != "doomed" {
			t.Fatalf("the delete was refused, so doomed must read through node %d, led by the previous release: %d %q", i, code, got)
		}
	}
	// Every node upgraded: the delete is done and holds.
	for i := 1; i < 3; i++ {
		upgradeNode(t, nodes, i, shards)
	}
	if code, b := clusterDo(http.MethodDelete, nodes[1].URL+"/v1/agents/"+agent+"/workbenches/doomed", nil, upgradeWriteBound); code/100 != 2 {
		t.Fatalf("DELETE of workbench doomed after the upgrade: %d %s", code, b)
	}
	for i, s := range nodes {
		if code, got := clusterDo(http.MethodGet, fileURL(s.URL, agent, "doomed", "input/a"), nil, upgradeWriteBound); code != http.StatusNotFound {
			t.Errorf("doomed after the upgrade, through node %d: %d %q, want 404", i, code, got)
		}
		if code, got := clusterDo(http.MethodGet, fileURL(s.URL, agent, "kept", "input/a"), nil, upgradeWriteBound); code != http.StatusOK || string(got) != "kept" {
			t.Errorf("kept after the upgrade, through node %d: %d %q", i, code, got)
		}
	}
}
