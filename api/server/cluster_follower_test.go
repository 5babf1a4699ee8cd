package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/internal/retry"
)

// answer is one HTTP response, read whole.
type answer struct {
	code int
	hdr  http.Header
	body []byte
}

func (a answer) servedBy() string { return a.hdr.Get(ServedByHeader) }

// getOnce sends one GET, without retries.
func getOnce(t *testing.T, u string) answer {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if n := len(resp.Header.Values(ServedByHeader)); n != 1 {
		t.Fatalf("GET %s: %d %s headers (%v), want exactly one", u, n, ServedByHeader, resp.Header.Values(ServedByHeader))
	}
	return answer{code: resp.StatusCode, hdr: resp.Header, body: b}
}

// getSettled is getOnce retried while the answer is a retryable 503, for up to 30 s.
func getSettled(t *testing.T, u string) answer {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := getOnce(t, u)
		if a.code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return a
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mint creates a snapshot named name through n and returns its id.
func mint(t *testing.T, n *testClusterNode, ws, name string) uint64 {
	t.Helper()
	code, b := request(t, http.MethodPost, n.url+ws+"/snapshots", []byte(`{"name":"`+name+`"}`))
	var res struct {
		SnapshotID uint64 `json:"snapshot_id"`
	}
	if code != http.StatusCreated || json.Unmarshal(b, &res) != nil || res.SnapshotID == 0 {
		t.Fatalf("mint snapshot %s: %d %s", name, code, b)
	}
	return res.SnapshotID
}

func TestClusterFollowerServesEveryReadAndReadsAtASnapshotIDEvenWithoutALeader(t *testing.T) {
	nodes := startCluster(t, 3, oneShard)
	const shardID = 0
	ws := "/v1/agents/alice/workbenches/w1"
	mustSend(t, "create workbench", http.MethodPut, nodes[0].url+ws, nil)
	mustSend(t, "put", http.MethodPut, nodes[0].url+ws+"/files/input/a", []byte("before"))
	snap := mint(t, nodes[1], ws, "s1")
	mustSend(t, "overwrite", http.MethodPut, nodes[2].url+ws+"/files/input/a", []byte("after"))

	// The leader, and two followers that have applied everything it has.
	var leader *testClusterNode
	var followers []*testClusterNode
	retry.SucceedsSoon(t, "a leader with three voters", func() error {
		leader, followers = nil, nil
		for _, n := range nodes {
			r := n.replica(shardID)
			if r == nil {
				return fmt.Errorf("%s hosts no replica yet", n.nodeID)
			}
			if r.Ready() {
				leader = n
			} else {
				followers = append(followers, n)
			}
		}
		if leader == nil || len(followers) != 2 {
			return fmt.Errorf("no caught-up leader yet")
		}
		members, err := leader.replica(shardID).Configuration()
		if err != nil {
			return err
		}
		for _, m := range members {
			if !m.Voter {
				return fmt.Errorf("%s is not a voter yet", m.ID)
			}
		}
		return nil
	})
	caughtUp := func() error {
		want := leader.replica(shardID).Stats().AppliedVersion
		for _, f := range followers {
			if got := f.replica(shardID).Stats().AppliedVersion; got < want {
				return fmt.Errorf("%s applied %d of %d", f.nodeID, got, want)
			}
		}
		return nil
	}
	retry.SucceedsSoon(t, "followers catch up", caughtUp)

	at := "?at_snapshot=" + strconv.FormatUint(snap, 10)
	for _, f := range followers {
		before := metricstest.Value(t, f.registry, "cairn_follower_reads_total", "shard=0")
		a := getOnce(t, f.url+ws+"/files/input/a"+at)
		if a.code != http.StatusOK || string(a.body) != "before" || a.servedBy() != f.nodeID {
			t.Fatalf("read at snapshot %d through follower %s: %d %q served by %q", snap, f.nodeID, a.code, a.body, a.servedBy())
		}
		a = getOnce(t, f.url+ws+"/list"+at+"&path=input")
		if a.code != http.StatusOK || !bytes.Contains(a.body, []byte(`"at_snapshot":`+strconv.FormatUint(snap, 10))) || a.servedBy() != f.nodeID {
			t.Fatalf("list at snapshot %d through follower %s: %d %s served by %q", snap, f.nodeID, a.code, a.body, a.servedBy())
		}
		a = getOnce(t, f.url+ws+at)
		if a.code != http.StatusOK || a.servedBy() != f.nodeID {
			t.Fatalf("stat at snapshot %d through follower %s: %d %s served by %q", snap, f.nodeID, a.code, a.body, a.servedBy())
		}
		if got := metricstest.Value(t, f.registry, "cairn_follower_reads_total", "shard=0"); got != before+3 {
			t.Fatalf("follower %s: cairn_follower_reads_total went from %v to %v after three follower reads", f.nodeID, before, got)
		}

		// Every other read is served by the follower too, from its replica after the
		// leader's read index (a linearizable read), not as a follower read.
		linearizable := []struct {
			what, target string
			code         int
			body         string
		}{
			{"a live read", "/files/input/a", http.StatusOK, "after"},
			{"a read at a snapshot name", "/files/input/a?at_snapshot=s1", http.StatusOK, "before"},
		}
		for _, tt := range linearizable {
			a := getSettled(t, f.url+ws+tt.target)
			if a.code != tt.code || !bytes.Contains(a.body, []byte(tt.body)) || a.servedBy() != f.nodeID {
				t.Fatalf("%s through follower %s: %d %q served by %q; want %d %q from the follower",
					tt.what, f.nodeID, a.code, a.body, a.servedBy(), tt.code, tt.body)
			}
		}
		if got := metricstest.Value(t, f.registry, "cairn_follower_reads_total", "shard=0"); got != before+3 {
			t.Fatalf("follower %s: cairn_follower_reads_total %v after linearizable reads, want %v", f.nodeID, got, before+3)
		}
		// An id this replica does not hold falls back to a linearizable read.
		if a := getSettled(t, f.url+ws+"/files/input/a?at_snapshot=999999"); a.code != http.StatusNotFound ||
			!bytes.Contains(a.body, []byte("SnapshotNotFound")) || a.servedBy() != f.nodeID {
			t.Fatalf("a read at a snapshot id nobody minted through follower %s: %d %q served by %q", f.nodeID, a.code, a.body, a.servedBy())
		}
	}
	// The leader serves a read at a snapshot id itself, as before: not a follower read.
	if a := getOnce(t, leader.url+ws+"/files/input/a"+at); a.code != http.StatusOK || string(a.body) != "before" ||
		a.servedBy() != leader.nodeID || metricstest.Value(t, leader.registry, "cairn_follower_reads_total", "shard=0") != 0 {
		t.Fatalf("read at snapshot %d through the leader: %d %q served by %q", snap, a.code, a.body, a.servedBy())
	}

	// A retired snapshot is not served from the applied state again: the linearizable
	// read answers for it.
	f := followers[0]
	snap2 := mint(t, leader, ws, "s2")
	retry.SucceedsSoon(t, "followers apply the second mint", caughtUp)
	if a := getOnce(t, f.url+ws+"/files/input/a?at_snapshot="+strconv.FormatUint(snap2, 10)); a.code != http.StatusOK || string(a.body) != "after" {
		t.Fatalf("read at snapshot %d through follower %s: %d %s", snap2, f.nodeID, a.code, a.body)
	}
	if code, b := request(t, http.MethodPost, leader.url+ws+"/snapshots/retire", []byte(`{"snapshot_id":`+strconv.FormatUint(snap2, 10)+`}`)); code != http.StatusOK {
		t.Fatalf("retire snapshot %d: %d %s", snap2, code, b)
	}
	retry.SucceedsSoon(t, "followers apply the retire", caughtUp)
	if a := getSettled(t, f.url+ws+"/files/input/a?at_snapshot="+strconv.FormatUint(snap2, 10)); a.code != http.StatusGone ||
		!bytes.Contains(a.body, []byte("SnapshotExpired")) {
		t.Fatalf("read at retired snapshot %d through follower %s: %d %s served by %q", snap2, f.nodeID, a.code, a.body, a.servedBy())
	}

	// Stop the other follower and the leader: the survivor has no quorum, hence no leader,
	// and still serves reads at a snapshot id.
	survivor := followers[0]
	followers[1].shutdown()
	leader.shutdown()
	rep := survivor.replica(shardID)
	retry.SucceedsSoon(t, "the survivor knows no leader", func() error {
		if id, _ := rep.Leader(); id != "" || rep.Ready() {
			return fmt.Errorf("leader %q, ready %v", id, rep.Ready())
		}
		return nil
	})
	before := metricstest.Value(t, survivor.registry, "cairn_follower_reads_total", "shard=0")
	if a := getOnce(t, survivor.url+ws+"/files/input/a"+at); a.code != http.StatusOK || string(a.body) != "before" || a.servedBy() != survivor.nodeID {
		t.Fatalf("read at snapshot %d without a leader: %d %q served by %q", snap, a.code, a.body, a.servedBy())
	}
	if got := metricstest.Value(t, survivor.registry, "cairn_follower_reads_total", "shard=0"); got != before+1 {
		t.Fatalf("cairn_follower_reads_total went from %v to %v", before, got)
	}
	// A live read has no one to answer it: a retryable RoutingUnavailable from the survivor.
	if a := getOnce(t, survivor.url+ws+"/files/input/a"); a.code != http.StatusServiceUnavailable ||
		!bytes.Contains(a.body, []byte("RoutingUnavailable")) || a.servedBy() != survivor.nodeID {
		t.Fatalf("live read without a leader: %d %s served by %q", a.code, a.body, a.servedBy())
	}
}
