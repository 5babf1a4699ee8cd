package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// TestClusterFollowerCatchesUpThroughOneSnapshotInstall takes a follower down (kill -9)
// while 50,000 writes ($CAIRN_CATCHUP_WRITES) are acknowledged by the other two nodes,
// restarts it while writes go on, and waits until it has applied what the leader had.
// The leader snapshots every 4,096 entries and keeps 10,240 behind each snapshot, so the
// follower's next entry is long gone from the leader's log: it must install a snapshot,
// exactly one (a second would mean the entries after the first were gone too: an install
// loop). The restarted follower then serves reads at a snapshot id from its own state.
func TestClusterFollowerCatchesUpThroughOneSnapshotInstall(t *testing.T) {
	total := envCount("CAIRN_CATCHUP_WRITES", 50000)
	servers := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 3, Shards: 1}, "--raft-snapshot-threshold", "4096", "--raft-snapshot-interval", "1s").Nodes
	const agent, wb = "catchup", "w"
	createClusterWorkbench(t, servers[0].URL, agent, wb)
	leader := shardLeader(t, servers, 0, 3)
	var follower *framework.Process
	var live []*framework.Process
	for _, s := range servers {
		if s != leader && follower == nil {
			follower = s
		} else {
			live = append(live, s)
		}
	}
	follower.Kill()

	// Writers: each owns its paths and writes them in turn, so the last acknowledged
	// body of every path is known. Every write carries an Idempotency-Key and is retried
	// until acknowledged (a write not acknowledged within 30 s fails the test).
	const writers, pathsPerWriter = 32, 50
	load := framework.StartLoad(t, framework.LoadOptions{
		Writers: writers,
		Next: func(w, i int) framework.Write {
			return framework.Write{Agent: agent, Workbench: wb, Path: fmt.Sprintf("input/w%02d-%02d", w, i%pathsPerWriter),
				Body: fmt.Sprintf("writer %d write %d %s", w, i, strings.Repeat(".", 128)), Key: fmt.Sprintf("cu-%d-%d", w, i)}
		},
		Target:   func(w, _, attempt int) (string, bool) { return live[(w+attempt)%len(live)].URL, true },
		Patience: 30 * time.Second,
		Required: true,
	})
	stopWriters := func() map[string]string {
		last := map[string]string{} // path → last acknowledged body
		for _, a := range load.Stop() {
			last[a.Path] = a.Body
		}
		if err := load.Err(); err != nil {
			t.Fatal(err)
		}
		return last
	}
	start := time.Now()
	retry.Within(t, 10*time.Minute, fmt.Sprintf("%d writes acknowledged with a follower down", total), func() error {
		if err := load.Err(); err != nil {
			return fmt.Errorf("%w: %v", retry.ErrStop, err)
		}
		if n := load.Acked(); n < int64(total) {
			return fmt.Errorf("%d acknowledged", n)
		}
		return nil
	})
	elapsed := time.Since(start)
	t.Logf("%d writes acknowledged with the follower down in %v (%.0f/s)", load.Acked(), elapsed.Round(time.Millisecond), float64(load.Acked())/elapsed.Seconds())

	// The follower restarts while the writers go on, and catches up.
	const applied = `cairn_shard_applied_version{shard="0"}`
	const installs = `cairn_shard_snapshot_installs_total{shard="0"}`
	follower.Restart()
	restarted := time.Now()
	before := load.Acked()
	target := metricValue(t, leader, applied)
	retry.Within(t, 3*time.Minute, "the restarted follower applies what the leader had applied at its restart", func() error {
		if got := metricValue(t, follower, applied); got < target {
			return fmt.Errorf("applied version %v, want %v", got, target)
		}
		return nil
	})
	t.Logf("caught up to version %.0f in %v while %d more writes were acknowledged", target, time.Since(restarted).Round(time.Millisecond), load.Acked()-before)
	retry.Within(t, 30*time.Second, "writes acknowledged after the catch-up", func() error {
		if n := load.Acked() - before; n < 100 {
			return fmt.Errorf("%d acknowledged since the restart", n)
		}
		return nil
	})
	last := stopWriters()
	if n := metricValue(t, follower, installs); n != 1 {
		t.Fatalf("the restarted follower installed %v snapshots, want exactly 1 (0: it caught up from the log, which the leader should have truncated; more: an install loop)", n)
	}
	t.Logf("the restarted follower installed exactly one snapshot")

	// The follower's own state: a snapshot minted now, read at its id through the
	// follower, which serves it without the leader (Cairn-Served-By).
	code, b := clusterDo(http.MethodPost, live[0].URL+"/v1/agents/"+agent+"/workbenches/"+wb+"/snapshots", []byte(`{"name":"after-catchup"}`), 30*time.Second)
	var snap struct {
		SnapshotID uint64 `json:"snapshot_id"`
	}
	if code != http.StatusCreated || json.Unmarshal(b, &snap) != nil || snap.SnapshotID == 0 {
		t.Fatalf("mint a snapshot: %d %s", code, b)
	}
	st, err := getClusterStatus(follower.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	followerID := st.Node
	checked, byFollower := 0, 0
	for k, v := range last {
		u := fileURL(follower.URL, agent, wb, k) + "?at_snapshot=" + strconv.FormatUint(snap.SnapshotID, 10)
		var resp *http.Response
		var body []byte
		retry.Within(t, 30*time.Second, "read "+k+" at the snapshot through the follower", func() error {
			r, err := http.Get(u)
			if err != nil {
				return err
			}
			defer r.Body.Close()
			body, _ = io.ReadAll(r.Body)
			if r.StatusCode != http.StatusOK {
				return fmt.Errorf("%d %s", r.StatusCode, body)
			}
			resp = r
			return nil
		})
		if string(body) != v {
			t.Fatalf("%s at snapshot %d through the follower: %q, want %q", k, snap.SnapshotID, body, v)
		}
		if resp.Header.Get("Cairn-Served-By") == followerID {
			byFollower++
		}
		checked++
		if checked == 200 {
			break
		}
	}
	t.Logf("%d paths read at snapshot %d through the restarted follower, %d served by the follower itself", checked, snap.SnapshotID, byFollower)
	if byFollower == 0 {
		t.Fatal("no read at the snapshot was served by the restarted follower itself")
	}
}
