package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestShardRecoveryRefusesABadShardNamingIt: a shard that is not a whole number, or is
// negative, is InvalidArguments naming the field shard and its rule, before anything else
// (the node here is embedded: well-formed input is refused as not_a_cluster).
func TestShardRecoveryRefusesABadShardNamingIt(t *testing.T) {
	n, _ := serveNode(t, testConfig(t))
	u := "http://" + n.AdminAddr().String() + ShardRecoveryPath
	for _, tc := range []struct {
		name, method, query, body string
		status                    int
		field, says               string
	}{
		{"a shard that is not a number", "GET", "?shard=abc&node=n1", "", 400, "shard", `must be a whole number, at least 0, got "abc"`},
		{"a negative shard", "GET", "?shard=-3&node=n1", "", 400, "shard", "must be a whole number, at least 0, got -3"},
		{"a negative shard posted", "POST", "", `{"shard":-3,"node":"n1"}`, 400, "shard", "must be a whole number, at least 0, got -3"},
		{"no shard", "GET", "?node=n1", "", 400, "shard", "shard is required"},
		{"no node", "GET", "?shard=0", "", 400, "node", "node is required"},
		{"well formed, on the embedded node", "GET", "?shard=0&node=n1", "", 409, "", "not a cluster node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, b := send(t, tc.method, u+tc.query, nil, tc.body)
			var e struct {
				Code    string         `json:"code"`
				Message string         `json:"message"`
				Details map[string]any `json:"details"`
			}
			if err := json.Unmarshal(b, &e); err != nil || code != tc.status || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("%d %s, want %d saying %q", code, b, tc.status, tc.says)
			}
			if tc.status == http.StatusBadRequest && (e.Code != "InvalidArguments" || e.Details["field"] != tc.field) {
				t.Fatalf("%s, want InvalidArguments naming %s", b, tc.field)
			}
		})
	}
}
