package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/api/client"
)

// TestAdminShardsAddSendsTheCountItReadAndWaitsForTheNewShards: the command reads the
// count, asks for the grow with it as expect_shards, and follows the status until the new
// shards have leaders and are open.
func TestAdminShardsAddSendsTheCountItReadAndWaitsForTheNewShards(t *testing.T) {
	var (
		mu       sync.Mutex
		shards   = 2
		statuses int
		grows    []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case client.AdminClusterPath:
			statuses++
			st := client.ClusterStatus{ClusterID: "c", Shards: shards, Replication: 3, Node: "n1",
				Nodes: []client.ClusterNode{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}}
			for s := range shards {
				cs := client.ClusterShard{Shard: s, Leader: "n1", Members: []client.ClusterMember{{ID: "n1", Voter: true}}}
				switch {
				case s >= 2 && statuses == 2: // just grown: no group yet
					cs = client.ClusterShard{Shard: s, Error: "no known leader", Closed: true}
				case s >= 2 && statuses == 3: // a leader, still being built
					cs.Closed = true
				default:
					cs.Members = append(cs.Members, client.ClusterMember{ID: "n2", Voter: true}, client.ClusterMember{ID: "n3", Voter: true})
				}
				st.ShardStatus = append(st.ShardStatus, cs)
			}
			_ = json.NewEncoder(w).Encode(st)
		case client.AdminShardsPath:
			var in map[string]int
			_ = json.NewDecoder(r.Body).Decode(&in)
			grows = append(grows, fmt.Sprintf("add %d expect %d", in["add"], in["expect_shards"]))
			shards += in["add"]
			fmt.Fprintf(w, `{"status":"success","shards":%d,"initial_shards":2,"added":%d}`, shards, in["add"])
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	out, _, err := execCairn(t, "admin", "shards", "add", "2", "--admin-server", srv.URL)
	if err != nil {
		t.Fatalf("admin shards add: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(grows, ";") != "add 2 expect 2" {
		t.Fatalf("grow requests %q, want one: add 2 expect 2", grows)
	}
	for _, want := range []string{"cluster grows from 2 to 4 shards (created with 2)",
		"for every new shard to have 3 voters: shard 2 no leader yet, shard 3 no leader yet\n",
		"for every new shard to have 3 voters: shard 2 1 of 3 voters, shard 3 1 of 3 voters\n",
		"every shard has a leader and takes roots: 4 shards"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output %q does not say %q", out, want)
		}
	}
	if statuses != 4 {
		t.Fatalf("%d status reads, want 4 (before, two while building, one open)", statuses)
	}
}

// TestAdminShardsAddRefusesABadCountAsUsage: N that is not a whole number from 1 to the
// cluster's maximum, or a wrong argument count, is InvalidArguments before any request,
// with the rule it broke.
func TestAdminShardsAddRefusesABadCountAsUsage(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests++ }))
	t.Cleanup(srv.Close)
	atLeastOne, atMost := "must be a whole number, at least 1, got", "must be at most 4096 in total"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"0"}, atLeastOne},
		{[]string{"abc"}, atLeastOne},
		{[]string{"1.5"}, atLeastOne},
		{[]string{""}, atLeastOne},
		{[]string{"-3"}, atLeastOne},
		{[]string{"-99999999999999999999"}, atLeastOne},
		{[]string{"4097"}, atMost},
		{[]string{"99999999999999999999"}, atMost},
		{nil, "cairn admin shards add: accepts 1 arg(s), received 0"},
		{[]string{"1", "2"}, "cairn admin shards add: accepts 1 arg(s), received 2"},
	} {
		_, _, err := execCairn(t, append([]string{"admin", "shards", "add", "--admin-server", srv.URL, "--"}, tc.args...)...)
		if code, msg := describeError(err); err == nil || code != "InvalidArguments" || !strings.Contains(msg, tc.want) {
			t.Errorf("add %q: %v (%s), want InvalidArguments saying %q", tc.args, err, code, tc.want)
		}
	}
	if requests != 0 {
		t.Fatalf("%d requests sent for bad arguments", requests)
	}
}

// TestArgumentCountErrorsAreUsageErrors: cobra's argument checks, on commands of every
// kind (a group, a leaf with NoArgs, with ExactArgs), are usage errors naming the command.
func TestArgumentCountErrorsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"admin", "cluster", "status", "extra"},
		{"admin", "node", "remove"},
		{"fork", "only-one"},
		{"admin", "shards", "nosuch"},
	} {
		_, _, err := execCairn(t, args...)
		if code, msg := describeError(err); err == nil || code != "InvalidArguments" || !strings.HasPrefix(msg, "cairn ") {
			t.Errorf("cairn %q: %v (%s), want InvalidArguments naming the command", args, err, code)
		}
	}
}

// TestAdminShardsAddWaitNamesTheDownNodeThatKeepsANewShardClosed: a node is down, so the
// new shard's leader reports 2 voters of 3 and the shard stays closed (a new shard opens
// only fully replicated): the wait says so, and its timeout is a Timeout error naming the
// shard, its voters and the down node.
func TestAdminShardsAddWaitNamesTheDownNodeThatKeepsANewShardClosed(t *testing.T) {
	srv := fakeGrowServer(t, 1, func(shards int) client.ClusterStatus {
		st := client.ClusterStatus{ClusterID: "c", Shards: shards, Replication: 3, Node: "n1",
			Nodes: []client.ClusterNode{{ID: "n1"}, {ID: "n2"}}}
		st.ShardStatus = append(st.ShardStatus, client.ClusterShard{Shard: 0, Leader: "n1",
			Members: []client.ClusterMember{{ID: "n1", Voter: true}, {ID: "n2", Voter: true}, {ID: "n3", Voter: true}}})
		if shards > 1 {
			st.ShardStatus = append(st.ShardStatus, client.ClusterShard{Shard: 1, Leader: "n2", Closed: true,
				Members: []client.ClusterMember{{ID: "n1", Voter: true}, {ID: "n2", Voter: true}}})
		}
		return st
	}, 0)
	out, _, err := execCairn(t, "admin", "shards", "add", "1", "--timeout", "200ms", "--admin-server", srv.URL)
	if want := "for every new shard to have 3 voters: shard 1 2 of 3 voters; down: n3"; !strings.Contains(out, want) {
		t.Fatalf("output %q does not say %q", out, want)
	}
	if strings.Contains(out, "takes roots") {
		t.Fatalf("output %q says the shards take roots", out)
	}
	code, msg := describeError(err)
	if code != "Timeout" || !strings.Contains(msg, "shards [1] still take no roots: shard 1 2 of 3 voters; down: n3") {
		t.Fatalf("error %s: %q, want Timeout naming shard 1's voters and the down node", code, msg)
	}
}

// TestAdminShardsAddReportsTheClusterCountWhenAnotherGrowRan: another grow lands while the
// command waits: the final line reports the cluster's count, and what this command added.
func TestAdminShardsAddReportsTheClusterCountWhenAnotherGrowRan(t *testing.T) {
	srv := fakeGrowServer(t, 2, func(shards int) client.ClusterStatus {
		st := client.ClusterStatus{ClusterID: "c", Shards: shards, Replication: 1, Node: "n1", Nodes: []client.ClusterNode{{ID: "n1"}}}
		for s := range shards {
			st.ShardStatus = append(st.ShardStatus, client.ClusterShard{Shard: s, Leader: "n1",
				Members: []client.ClusterMember{{ID: "n1", Voter: true}}})
		}
		return st
	}, 2) // another command's 2 land right after this one's grow
	out, _, err := execCairn(t, "admin", "shards", "add", "1", "--admin-server", srv.URL)
	if err != nil {
		t.Fatalf("admin shards add: %v\n%s", err, out)
	}
	if want := "every shard has a leader and takes roots: 5 shards (this command added 1)\n"; !strings.HasSuffix(out, want) {
		t.Fatalf("output %q does not end with %q", out, want)
	}
}

// fakeGrowServer is an admin listener whose cluster has shards shards: the status is
// status(count), and a grow adds what it asks, then others more (a concurrent grow).
func fakeGrowServer(t *testing.T, shards int, status func(shards int) client.ClusterStatus, others int) *httptest.Server {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case client.AdminClusterPath:
			_ = json.NewEncoder(w).Encode(status(shards))
		case client.AdminShardsPath:
			var in map[string]int
			_ = json.NewDecoder(r.Body).Decode(&in)
			initial := shards
			shards += in["add"]
			fmt.Fprintf(w, `{"status":"success","shards":%d,"initial_shards":%d,"added":%d}`, shards, initial, in["add"])
			shards += others
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
