package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/host"
)

func TestAdminRoutesAreServedOnTheAdminListenerOnly(t *testing.T) {
	n, base := serveNode(t, testConfig(t))
	admin := "http://" + n.AdminAddr().String()
	if admin == base {
		t.Fatalf("the admin listener is the client listener (%s)", base)
	}
	if code, b := httpDo(t.Context(), http.MethodPut, base+"/v1/agents/a/workbenches/w/files/input/x", bytes.Repeat([]byte("x"), 8<<10)); code != http.StatusCreated {
		t.Fatalf("put: %d %s", code, b)
	}
	// The tenant listener does not serve the dry run that lists every agent's digests.
	code, b := httpDo(t.Context(), http.MethodPost, base+"/v1/admin/gc", []byte(`{"dry_run":true}`))
	if code != http.StatusNotFound || !bytes.Contains(b, []byte(`"NotFound"`)) {
		t.Fatalf("admin GC on the client listener: %d %s, want 404 NotFound", code, b)
	}
	code, b = httpDo(t.Context(), http.MethodPost, admin+"/v1/admin/gc", []byte(`{"dry_run":true}`))
	if code != http.StatusOK || !bytes.Contains(b, []byte(`"dry_run":true`)) {
		t.Fatalf("admin GC on the admin listener: %d %s", code, b)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, b := httpDo(t.Context(), http.MethodGet, admin+path, nil); code != http.StatusOK {
			t.Errorf("%s on the admin listener: %d %.200s", path, code, b)
		}
	}
	if code, _ := httpDo(t.Context(), http.MethodGet, admin+"/v1/agents/a/workbenches/w", nil); code != http.StatusNotFound {
		t.Errorf("a tenant route on the admin listener: %d, want 404", code)
	}
	// The admin listener checks Host and Origin like the client listener.
	code, _, b = send(t, http.MethodPost, admin+"/v1/admin/gc", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}, `{}`)
	wantForbidden(t, "a cross-site admin GC", code, b, "Sec-Fetch-Site")
	if !strings.HasPrefix(n.AdminAddr().String(), "127.0.0.1:") {
		t.Errorf("the admin listener is not on loopback: %s", n.AdminAddr())
	}
}

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

// TestShardRecoveryRefusalsAnswerTheirReasonWithoutPackageNames: every refusal of a
// recovery answers its public reason; an unexpected error answers Internal without its
// text (which names packages); neither begins with a package prefix.
func TestShardRecoveryRefusalsAnswerTheirReasonWithoutPackageNames(t *testing.T) {
	n := &Node{log: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		err        error
		status     int
		code, says string
	}{
		{control.Refuse(host.ErrNoSuchShard, "no such shard 9: the cluster has shards 0 to 3"), 404, "NotFound", "no such shard 9: the cluster has shards 0 to 3"},
		{control.Refuse(host.ErrNotSurvivor, "node n2 is not a voter of shard 1"), 400, "InvalidArguments", "node n2 is not a voter of shard 1"},
		{fmt.Errorf("plan: %w", control.Refuse(host.ErrShardHasQuorum, "shard 1 has a leader (n1)")), 409, "InvalidState", "shard 1 has a leader (n1)"},
		{host.ErrShardHasQuorum, 409, "InvalidState", "the shard has a leader or a majority of live voters"},
		{errors.New("shard: not the leader"), 500, "Internal", "the recovery failed: internal error"},
	} {
		rec := httptest.NewRecorder()
		n.recoveryError(rec, tc.err)
		var e struct{ Code, Message string }
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != tc.status || e.Code != tc.code || !strings.HasPrefix(e.Message, tc.says) {
			t.Errorf("%v: %d %s, want %d %s saying %q", tc.err, rec.Code, rec.Body, tc.status, tc.code, tc.says)
		}
		for _, prefix := range []string{"host:", "control:", "shard:"} {
			if strings.Contains(e.Message, prefix) {
				t.Errorf("%v: message %q names a package (%s)", tc.err, e.Message, prefix)
			}
		}
	}
}
