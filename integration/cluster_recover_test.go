package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// TestClusterShardRecoversFromALostMajority: three nodes hold the one shard; two are
// killed (kill -9) and their data directories deleted. The shard has no leader: a write
// fails with a retryable error. `cairn admin shard recover` is refused while the shard is
// healthy, for a node that is not the one asked, for a shard the cluster does not have,
// and while the lost nodes are still registered; then it makes the survivor the only
// voter. Every acknowledged file reads back byte for byte, writes succeed, and the two
// nodes, restarted on empty data directories (so under new ids), are added back by the
// controller as voters. The second case keeps one lost node's data directory: it comes
// back under its old id after the recovery, moves its replica of the old group aside and
// joins the recovered group empty.
func TestClusterShardRecoversFromALostMajority(t *testing.T) {
	t.Run("both lost data directories destroyed", func(t *testing.T) { recoverLostMajority(t, false) })
	t.Run("one lost node back with its data directory", func(t *testing.T) { recoverLostMajority(t, true) })
}

// recoverLostMajority runs the scenario above; keepOne keeps the first lost node's data
// directory.
func recoverLostMajority(t *testing.T, keepOne bool) {
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: 1})
	servers := pc.Nodes
	leader := shardLeader(t, servers, 0, 3)
	// The survivor is a follower, the leader is among the lost.
	survivor := others(servers, leader)[0]
	lost := others(servers, survivor)
	ids := map[*framework.Process]string{}
	for _, s := range servers {
		st, err := getClusterStatus(s.AdminURL)
		if err != nil {
			t.Fatal(err)
		}
		ids[s] = st.Node
	}

	const agent, wb = "survivor", "w"
	createClusterWorkbench(t, servers[0].URL, agent, wb)
	acked := map[string]string{} // path → acknowledged body
	put := func(through *framework.Process, path, body string) {
		t.Helper()
		code, b := clusterDoKey(http.MethodPut, fileURL(through.URL, agent, wb, path), []byte(body), 60*time.Second, "rec-"+path)
		if code/100 != 2 {
			t.Fatalf("put %s through %s: %d %s", path, through.URL, code, b)
		}
		acked[path] = body
	}
	readAll := func(through *framework.Process) {
		t.Helper()
		for path, body := range acked {
			code, b := clusterDo(http.MethodGet, fileURL(through.URL, agent, wb, path), nil, 60*time.Second)
			if code != http.StatusOK || string(b) != body {
				t.Fatalf("read %s through %s: %d, %d bytes; want the %d acknowledged bytes", path, through.URL, code, len(b), len(body))
			}
		}
	}
	for i := range 30 {
		put(servers[i%3], fmt.Sprintf("input/before-%02d.txt", i), fmt.Sprintf("before the loss %d %s", i, strings.Repeat("x", i*37)))
	}

	recoverCLI := func(args ...string) cliResult {
		return runCLI(t, cliOptions{}, append([]string{"admin", "shard", "recover", "--admin-server", survivor.AdminURL}, args...)...)
	}
	refused := func(what string, r cliResult, code, detail string) {
		t.Helper()
		if r.code == 0 || !strings.Contains(r.stderr, code) || !strings.Contains(r.stderr+r.stdout, detail) {
			t.Fatalf("%s: want a refusal %s naming %q:\n%s", what, code, detail, r)
		}
	}
	refused("a healthy shard", recoverCLI("0", "--from", ids[survivor], "--yes"), "InvalidState", "has a leader")
	refused("another node than the one asked", recoverCLI("0", "--from", ids[lost[0]], "--yes"), "InvalidArguments", "run the recovery on the survivor")
	refused("a shard the cluster does not have", recoverCLI("7", "--from", ids[survivor], "--yes"), "NotFound", "no such shard")

	// Everything acknowledged is applied on the survivor before the loss: what a recovery
	// keeps is what the survivor holds.
	const applied = `cairn_shard_applied_version{shard="0"}`
	target := metricValue(t, leader, applied)
	retry.Within(t, 30*time.Second, "the survivor applied what the leader had", func() error {
		if got := metricValue(t, survivor, applied); got < target {
			return fmt.Errorf("survivor at %v, leader at %v", got, target)
		}
		return nil
	})
	for i, s := range lost {
		s.Kill()
		if keepOne && i == 0 {
			continue
		}
		if err := os.RemoveAll(s.DataDir); err != nil {
			t.Fatal(err)
		}
	}

	// No leader: a write fails with a retryable error.
	hc := &http.Client{Timeout: 30 * time.Second}
	req, _ := http.NewRequest(http.MethodPut, fileURL(survivor.URL, agent, wb, "input/during-the-loss.txt"), strings.NewReader("x"))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Code      string `json:"code"`
		Retryable bool   `json:"retryable"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !env.Retryable || env.Code != "RoutingUnavailable" && env.Code != "OutcomeUnknown" {
		t.Fatalf("a write without a majority: %d %+v, want a retryable 503", resp.StatusCode, env)
	}

	// Until the lost nodes' registrations lapse (their 10 s lease), the shard may still
	// have a majority as far as etcd can tell: refused.
	refused("the lost nodes still registered", recoverCLI("0", "--from", ids[survivor], "--yes"), "InvalidState", "a majority of live voters")
	retry.Within(t, 60*time.Second, "the lost nodes are no longer registered", func() error {
		if reg, err := clusterNodes(survivor.AdminURL); err != nil || len(reg) != 1 {
			return fmt.Errorf("registered %v (%v)", reg, err)
		}
		return nil
	})
	r := recoverCLI("0", "--from", ids[survivor])
	refused("no terminal and no --yes", r, "--yes", "May be lost")
	r = mustCLI(t, cliOptions{}, "admin", "shard", "recover", "0", "--from", ids[survivor], "--yes", "--admin-server", survivor.AdminURL)
	if !strings.Contains(r.stdout, "shard 0 recovered: "+ids[survivor]+" is its only voter") || !strings.Contains(r.stdout, "not registered (lost)") {
		t.Fatalf("recover:\n%s", r)
	}
	t.Logf("recover:\n%s", r.stdout)

	readAll(survivor)
	put(survivor, "input/after-recovery.txt", "written by the recovered shard")
	readAll(survivor)

	// The lost nodes come back empty, under new ids (or, kept, under its old id); the
	// controller adds them back.
	for _, s := range lost {
		s.Restart()
	}
	shardLeader(t, servers, 0, 3)
	old := func(id string) bool { return id == ids[lost[1]] || id == ids[lost[0]] && !keepOne }
	retry.Within(t, 60*time.Second, "three voters: the survivor and the lost nodes (new ids for those that lost their disk)", func() error {
		st, err := getClusterStatus(survivor.AdminURL)
		if err != nil {
			return err
		}
		var voters []string
		for _, m := range st.ShardStatus[0].Members {
			if m.Voter {
				voters = append(voters, m.ID)
			}
		}
		if len(voters) != 3 || !slices.Contains(voters, ids[survivor]) || slices.ContainsFunc(voters, old) ||
			keepOne && !slices.Contains(voters, ids[lost[0]]) {
			return fmt.Errorf("voters %v", voters)
		}
		return nil
	})
	if keepOne {
		// Its replica of the group before the recovery was moved aside, not opened.
		if _, err := os.Stat(filepath.Join(lost[0].DataDir, "shards", "0.before-epoch-1", "raft.db")); err != nil {
			t.Fatalf("the kept node's old replica was not moved aside: %v", err)
		}
		if !strings.Contains(lost[0].Output(), "replica directory predates the shard's recovery") {
			t.Fatal("the kept node did not log that it moved its old replica aside")
		}
	}
	for _, s := range lost {
		readAll(s)
	}
	put(lost[0], "input/after-rejoin.txt", "written with three voters again")
	readAll(lost[1])
}

// clusterNodes returns the ids of the registered nodes, from the cluster status at
// adminURL.
func clusterNodes(adminURL string) ([]string, error) {
	code, b := clusterDo(http.MethodGet, adminURL+"/v1/admin/cluster", nil, 10*time.Second)
	if code != http.StatusOK {
		return nil, fmt.Errorf("cluster status: %d %s", code, b)
	}
	var st struct {
		Nodes []struct {
			ID string `json:"id"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range st.Nodes {
		out = append(out, n.ID)
	}
	return out, nil
}
