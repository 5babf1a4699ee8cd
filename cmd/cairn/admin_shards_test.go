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
			st := client.ClusterStatus{ClusterID: "c", Shards: shards, Replication: 3, Node: "n1"}
			for s := range shards {
				cs := client.ClusterShard{Shard: s, Leader: "n1"}
				switch {
				case s >= 2 && statuses == 2: // just grown: no group yet
					cs = client.ClusterShard{Shard: s, Error: "no known leader", Closed: true}
				case s >= 2 && statuses == 3: // a leader, still being built
					cs.Closed = true
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
	for _, want := range []string{"cluster grows from 2 to 4 shards (created with 2)", "waiting: shards [2 3] are being built",
		"every shard has a leader and takes roots: 4 shards"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output %q does not say %q", out, want)
		}
	}
	if statuses != 4 {
		t.Fatalf("%d status reads, want 4 (before, two while building, one open)", statuses)
	}
	if _, _, err := execCairn(t, "admin", "shards", "add", "0", "--admin-server", srv.URL); err == nil {
		t.Fatal("add 0 succeeded")
	}
}
