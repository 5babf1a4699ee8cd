package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestCollectGarbagePostsTheRequestAndDecodesTheReport(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != AdminGCPath || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("got %s %s (%s), want POST %s with a JSON body", r.Method, r.URL.Path, r.Header.Get("Content-Type"), AdminGCPath)
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Error(err)
		}
		fmt.Fprint(w, `{"status":"success","dry_run":true,"candidates":1,"candidate_bytes":42,"more":false,
			"roots":[{"agent":"a","candidates":[{"digest":"sha256:ab","stored_bytes":42,"orphan":true,"taken_over":false}],"more":true}]}`)
	}))
	t.Cleanup(srv.Close)
	rep, err := NewAdmin(srv.URL, nil).CollectGarbage(t.Context(), GCRequest{DryRun: true, Agent: "a", MaxBatch: 7})
	if err != nil {
		t.Fatal(err)
	}
	if got["dry_run"] != true || got["agent"] != "a" || got["max_batch"] != float64(7) {
		t.Errorf("request body %v, want dry_run, agent a, max_batch 7", got)
	}
	if rep.CandidateBytes != 42 || len(rep.Roots) != 1 || !rep.Roots[0].More || len(rep.Roots[0].Candidates) != 1 ||
		!rep.Roots[0].Candidates[0].Orphan || len(rep.Raw) == 0 {
		t.Errorf("report %+v does not hold what the server sent", rep)
	}
	if _, err := NewAdmin(srv.URL, nil).CollectGarbage(t.Context(), GCRequest{MaxBatch: -1}); err == nil {
		t.Error("a negative MaxBatch was sent")
	}
}

func TestAdminErrorsCarryTheEnvelope(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"error","code":"RoutingUnavailable","message":"not the leader","retryable":true,"details":{"leader":"n2"}}`)
	}))
	t.Cleanup(srv.Close)
	_, err := NewAdmin(srv.URL, nil).CollectGarbage(t.Context(), GCRequest{})
	if e := asError(t, err); e.Code != "RoutingUnavailable" || !e.Retryable || e.Details["leader"] != "n2" {
		t.Fatalf("got %+v, want the server's envelope", e)
	}
}

func TestClusterStatusOfAnEmbeddedNodeIsErrNotCluster(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		fmt.Fprint(w, `{"status":"error","code":"InvalidState","message":"not a cluster node","retryable":false,"details":{"reason":"not_a_cluster"}}`)
	}))
	t.Cleanup(srv.Close)
	_, err := NewAdmin(srv.URL, nil).ClusterStatus(t.Context())
	if !errors.Is(err, ErrNotCluster) || errors.Is(err, ErrNoAdminRoutes) || ErrorCode(err) != "InvalidState" {
		t.Fatalf("got %v, want ErrNotCluster wrapping the InvalidState", err)
	}
}

// TestClusterStatusOfAURLWithoutAdminRoutesIsErrNoAdminRoutes: a 404 (the client port
// serves no admin route) is not taken for an embedded node.
func TestClusterStatusOfAURLWithoutAdminRoutesIsErrNoAdminRoutes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"status":"error","code":"NotFound","message":"no such route","retryable":false,"details":{}}`)
	}))
	t.Cleanup(srv.Close)
	_, err := NewAdmin(srv.URL, nil).ClusterStatus(t.Context())
	if !errors.Is(err, ErrNoAdminRoutes) || errors.Is(err, ErrNotCluster) || ErrorCode(err) != "NotFound" {
		t.Fatalf("got %v, want ErrNoAdminRoutes wrapping the NotFound", err)
	}
}

func TestClusterStatusDecodesNodesAndShards(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != AdminClusterPath {
			t.Errorf("got %s %s, want GET %s", r.Method, r.URL.Path, AdminClusterPath)
		}
		fmt.Fprint(w, `{"cluster_id":"c1","shards":1,"replication":3,"node":"n1",
			"nodes":[{"id":"n1","client_url":"http://a","peer_addr":"a:1","started_at":"2025-01-02T03:04:05Z"}],
			"shard_status":[{"shard":0,"leader":"n1","members":[{"id":"n1","voter":true,"lag":0},{"id":"n3","voter":true,"lag":-1}]}]}`)
	}))
	t.Cleanup(srv.Close)
	st, err := NewAdmin(srv.URL, nil).ClusterStatus(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.ClusterID != "c1" || len(st.ShardStatus) != 1 || st.ShardStatus[0].Members[1].Lag != -1 || st.Nodes[0].StartedAt.Year() != 2025 {
		t.Errorf("status %+v does not hold what the server sent", st)
	}
	if !st.Registered("n1") || st.Registered("n3") {
		t.Errorf("Registered: n1 %t, n3 %t; want true, false", st.Registered("n1"), st.Registered("n3"))
	}
}

func TestAddShardsSendsItsRequestAndRetriesOnlyWithAnExpectedCount(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != AdminShardsPath {
			t.Errorf("got %s %s, want POST %s", r.Method, r.URL.Path, AdminShardsPath)
		}
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if len(bodies)%2 == 1 { // every first try: etcd did not answer
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"status":"error","code":"RoutingUnavailable","message":"retry","retryable":true,"details":{}}`)
			return
		}
		fmt.Fprint(w, `{"status":"success","shards":4,"initial_shards":2,"added":2}`)
	}))
	t.Cleanup(srv.Close)
	c := NewAdmin(srv.URL, nil).WithRetry(RetryPolicy{MaxAttempts: 3, MaxElapsed: 10 * time.Second, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	got, err := c.AddShards(t.Context(), 2, 2)
	if err != nil || got.Shards != 4 || got.InitialShards != 2 || got.Added != 2 {
		t.Fatalf("AddShards with an expected count: %+v, %v", got, err)
	}
	if len(bodies) != 2 || bodies[0] != `{"add":2,"expect_shards":2}` {
		t.Fatalf("bodies sent: %q; want the same request twice", bodies)
	}
	bodies = nil
	if _, err := c.AddShards(t.Context(), 2, 0); ErrorCode(err) != "RoutingUnavailable" || len(bodies) != 1 {
		t.Fatalf("AddShards without an expected count: %v after %d tries; want one try, RoutingUnavailable", err, len(bodies))
	}
}
