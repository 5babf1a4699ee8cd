package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
)

// dyingAdminServer answers its first write (the command's request: a move recorded, a node
// marked leaving) with body, then breaks the connection of every read, as a node killed
// right after it answered would: the command's polls get no answer.
func dyingAdminServer(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// shortUnansweredLimit lowers adminUnansweredLimit for one test.
func shortUnansweredLimit(t *testing.T) {
	old := adminUnansweredLimit
	adminUnansweredLimit = 100 * time.Millisecond
	t.Cleanup(func() { adminUnansweredLimit = old })
}

// TestAdminRootMoveEndsWhenItsAdminServerStopsAnswering: the node the command follows its
// move through dies right after recording the move. The wait ends once its polls have
// gone unanswered for adminUnansweredLimit, with Unavailable naming the move, the step it
// last saw and that starting it again is safe, rather than waiting out --timeout and then
// reporting that stale step as the move's state (Timeout).
func TestAdminRootMoveEndsWhenItsAdminServerStopsAnswering(t *testing.T) {
	shortUnansweredLimit(t)
	srv := dyingAdminServer(t, `{"status":"success","move":{"id":"m1","root":"a","source":0,"target":1,
		"step":"requested","started":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z"}}`)
	out, _, err := execCairn(t, "admin", "root", "move", "a", "--to", "1", "--timeout", "10s", "--admin-server", srv.URL)
	code, msg := describeError(err)
	if code != "Unavailable" || !strings.Contains(msg, "the admin server has not answered since") ||
		!strings.Contains(msg, "move m1 was at step requested when it last answered") ||
		!strings.Contains(msg, "starting the move again is safe") {
		t.Fatalf("error %s: %q, want Unavailable naming the move, its last step and that a retry is safe", code, msg)
	}
	if !strings.Contains(out, "the admin server does not answer") {
		t.Fatalf("output %q does not say the admin server stopped answering", out)
	}
}

// TestAdminNodeRemoveEndsWhenItsAdminServerStopsAnswering: the same for node remove's
// wait (followStatus, which shards add shares): Unavailable, saying the node stays marked
// leaving and that running the command again is safe.
func TestAdminNodeRemoveEndsWhenItsAdminServerStopsAnswering(t *testing.T) {
	shortUnansweredLimit(t)
	srv := dyingAdminServer(t, `{"status":"success","node":"n3-full-id","leaving":true,"registered":true,"shards":[0]}`)
	out, _, err := execCairn(t, "admin", "node", "remove", "n3", "--timeout", "10s", "--admin-server", srv.URL)
	code, msg := describeError(err)
	if code != "Unavailable" || !strings.Contains(msg, "the admin server has not answered since") ||
		!strings.Contains(msg, "node n3-full-id stays marked leaving") || !strings.Contains(msg, "running node remove again is safe") {
		t.Fatalf("error %s: %q (output %q), want Unavailable saying the node stays leaving and a retry is safe", code, msg, out)
	}
}

// TestAdminNodeRemoveSaysWhenNoNodeCanTakeTheReplicas: three nodes, replication 3, and
// one of them leaving: its replicas have nowhere to go until a node joins. The wait says
// so, and its timeout is a Timeout (not the transport's Unavailable) saying the node stays
// leaving.
func TestAdminNodeRemoveSaysWhenNoNodeCanTakeTheReplicas(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != client.AdminClusterPath {
			fmt.Fprint(w, `{"status":"success","node":"n3","leaving":true,"registered":true,"shards":[0]}`)
			return
		}
		st := client.ClusterStatus{ClusterID: "c", Shards: 1, Replication: 3, Node: "n1", Leaving: []string{"n3"},
			Nodes: []client.ClusterNode{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}},
			ShardStatus: []client.ClusterShard{{Shard: 0, Leader: "n1",
				Members: []client.ClusterMember{{ID: "n1", Voter: true}, {ID: "n2", Voter: true}, {ID: "n3", Voter: true}}}}}
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	out, _, err := execCairn(t, "admin", "node", "remove", "n3", "--timeout", "300ms", "--admin-server", srv.URL)
	if want := "the cluster has 2 node(s) not leaving for a replication of 3: its replicas move once another node joins"; !strings.Contains(out, want) {
		t.Fatalf("output %q does not say %q", out, want)
	}
	code, msg := describeError(err)
	if code != "Timeout" || !strings.Contains(msg, "node n3 still holds replicas after 300ms (it stays marked leaving") {
		t.Fatalf("error %s: %q, want Timeout saying the node stays leaving", code, msg)
	}
}
