//go:build knownissue

package integration

import (
	"net/http"
	"testing"
	"time"
)

// TestRollingUpgradeWorkbenchDeletedWhileVersionsAreMixedStaysDeleted: with one node
// upgraded and leading the shard, a workbench is deleted through it (a command the
// previous release does not know: op 19, DeleteWorkspace), then the leadership moves to a
// node of the previous release. The workbench must read as deleted through every node —
// or the delete must have been refused until every replica runs the new release.
//
// It does not hold yet: a follower of the previous release decodes the unknown op as an
// InvalidArguments result and applies nothing, so its state diverges and the workbench
// comes back when it leads. It fails until the new release gates its new commands (a
// cluster version, raised once every replica runs the new release), so it is built only
// with the knownissue tag (`go test -tags knownissue -run Mixed ./integration`), not by
// `make test`: a reproduction of a known divergence, not a check that passes today.
func TestRollingUpgradeWorkbenchDeletedWhileVersionsAreMixedStaysDeleted(t *testing.T) {
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
	deleted := delCode/100 == 2
	if !deleted && (delCode == 0 || delCode >= 500) {
		t.Fatalf("the delete met %d %s: neither done nor refused as the cluster's state", delCode, b)
	}
	// The leadership moves to a node of the previous release.
	bounce(t, nodes, 0, shards)
	if l := shardLeader(t, nodes, 0, 3); l == nodes[0] {
		t.Fatalf("the upgraded node leads again after its bounce; the test needs a leader of the previous release")
	}
	for i, s := range nodes {
		code, got := clusterDo(http.MethodGet, fileURL(s.URL, agent, "doomed", "input/a"), nil, upgradeWriteBound)
		switch {
		case deleted && code == http.StatusOK:
			t.Fatalf("KNOWN-ISSUE (issue 17, deliverable 7): workbench doomed, deleted (%d) through a leader of the new release, "+
				"reads back through node %d (%s) once a node of the previous release leads: %q. The previous release's FSM "+
				"answers op 19 (DeleteWorkspace) with InvalidArguments and applies nothing, so replicas diverge; the new "+
				"release must not propose commands the previous one lacks until every replica runs it", delCode, i, s.URL, got)
		case deleted && code != http.StatusNotFound:
			t.Fatalf("read of deleted workbench doomed through node %d: %d %s", i, code, got)
		case !deleted && (code != http.StatusOK || string(got) != "doomed"):
			t.Fatalf("the delete was refused, yet doomed reads through node %d: %d %q", i, code, got)
		}
	}
	// Every node upgraded: the delete is done (again, or for the first time) and holds.
	for i := 1; i < 3; i++ {
		upgradeNode(t, nodes, i, shards)
	}
	if code, b := clusterDo(http.MethodDelete, nodes[1].URL+"/v1/agents/"+agent+"/workbenches/doomed", nil, upgradeWriteBound); code/100 != 2 && code != http.StatusNotFound {
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
