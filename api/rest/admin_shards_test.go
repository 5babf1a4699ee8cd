package rest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/shard/control"
)

// fakeGrower answers GrowShards with a fixed error, or grows its own count.
type fakeGrower struct {
	c     control.Cluster
	err   error
	calls []string
}

func (f *fakeGrower) GrowShards(_ context.Context, add, expect int) (control.Cluster, error) {
	f.calls = append(f.calls, fmt.Sprintf("add %d expect %d", add, expect))
	if f.err != nil {
		return f.c, f.err
	}
	if f.c.InitialShards == 0 {
		f.c.InitialShards = f.c.Shards
	}
	f.c.Shards += add
	return f.c, nil
}

func TestAdminShardsAddsShardsAndMapsEveryRefusal(t *testing.T) {
	serve := func(g rest.ShardGrower) string {
		opts := rest.Options{}
		if g != nil {
			opts.Shards = g
		}
		return serveAdmin(t, opts, "/v1/admin/cluster/shards")
	}
	g := &fakeGrower{c: control.Cluster{Shards: 2}}
	u := serve(g)
	r := do(t, "POST", u, strings.NewReader(`{"add":2,"expect_shards":2}`))
	if r.status != 200 || r.json["status"] != "success" || r.json["shards"] != float64(4) ||
		r.json["initial_shards"] != float64(2) || r.json["added"] != float64(2) {
		t.Fatalf("add 2: %d %s", r.status, r.body)
	}
	if strings.Join(g.calls, ";") != "add 2 expect 2" {
		t.Fatalf("the grower was called %q", g.calls)
	}

	for _, tc := range []struct {
		name, body string
		err        error
		status     int
		code       string
		detail     string // key=value of details, "" for none checked
	}{
		{"no shard to add is refused before the grower", `{"add":0}`, nil, 400, "InvalidArguments", "field=add"},
		{"a negative expected count is refused", `{"add":1,"expect_shards":-1}`, nil, 400, "InvalidArguments", "field=expect_shards"},
		{"an expected count of 0 is refused", `{"add":1,"expect_shards":0}`, nil, 400, "InvalidArguments", "field=expect_shards"},
		{"no expected count is refused: a resend could add twice", `{"add":1}`, nil, 400, "InvalidArguments", "field=expect_shards"},
		{"an unknown field is refused", `{"add":1,"shards":9}`, nil, 400, "InvalidArguments", ""},
		{"another count than expected is a conflict naming the count", `{"add":1,"expect_shards":3}`,
			fmt.Errorf("x: %w", control.ErrShardCountChanged), 409, "Conflict", "current_shards=2"},
		{"an old node holds the grow back", `{"add":1,"expect_shards":2}`, &control.VersionError{Node: "n7", Version: 3}, 409, "InvalidState", "node=n7"},
		{"etcd unavailable is retryable", `{"add":1,"expect_shards":2}`, fmt.Errorf("%w: down", control.ErrControlPlaneUnavailable), 503, "RoutingUnavailable", ""},
		{"past the maximum is bad input", `{"add":5000,"expect_shards":2}`,
			fmt.Errorf("grow: %w", control.Refuse(control.ErrInvalidArgument, "2 shards plus 5000 is more than the maximum 4096 in total")), 400, "InvalidArguments", "field=add"},
		{"an unexpected error is Internal", `{"add":1,"expect_shards":2}`, errors.New("control: etcd said no"), 500, "Internal", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &fakeGrower{c: control.Cluster{Shards: 2}, err: tc.err}
			r := do(t, "POST", serve(g), strings.NewReader(tc.body))
			expectRefusal(t, r, tc.status, tc.code, tc.detail, "control:", "grow:")
		})
	}

	r = do(t, "POST", serve(nil), strings.NewReader(`{"add":1,"expect_shards":1}`))
	if d, _ := r.json["details"].(map[string]any); r.status != 409 || d["reason"] != "not_a_cluster" {
		t.Fatalf("the embedded node: %d %s, want 409 not_a_cluster", r.status, r.body)
	}
	// Every cluster route of the embedded node says so; a route no node has is a 404.
	for _, path := range []string{"/v1/admin/cluster", "/v1/admin/cluster/leaving"} {
		r := do(t, "GET", strings.Replace(serve(nil), "/v1/admin/cluster/shards", path, 1), nil)
		if d, _ := r.json["details"].(map[string]any); r.status != 409 || r.json["code"] != "InvalidState" || d["reason"] != "not_a_cluster" {
			t.Fatalf("the embedded node's %s: %d %s, want 409 not_a_cluster", path, r.status, r.body)
		}
	}
	if r := do(t, "GET", strings.Replace(u, "/v1/admin/cluster/shards", "/v1/admin/cluster/nosuch", 1), nil); r.status != 404 {
		t.Fatalf("a cluster node's unknown cluster route: %d %s, want 404", r.status, r.body)
	}
	if r := do(t, "GET", u, nil); r.status != 405 || r.header.Get("Allow") != "POST" {
		t.Fatalf("GET: %d %v", r.status, r.header)
	}
}

// TestClientStatesTheClusterShardBound: the client's bound, which the CLI checks before it
// asks, is the server's.
func TestClientStatesTheClusterShardBound(t *testing.T) {
	if client.MaxClusterShards != control.MaxShards {
		t.Fatalf("client.MaxClusterShards = %d, control.MaxShards = %d", client.MaxClusterShards, control.MaxShards)
	}
}
