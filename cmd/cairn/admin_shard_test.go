package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeRecoveryServer answers the shard-recovery route as a survivor n1 of shard 0 would,
// and counts the recoveries asked of it.
func fakeRecoveryServer(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var posts atomic.Int32
	plan := map[string]any{"shard": 0, "node": "n1", "term": 4, "applied_index": 10, "applied_version": 9,
		"commit_index": 10, "last_index": 12, "epoch": 1, "members": []map[string]any{
			{"id": "n1", "voter": true, "registered": true}, {"id": "n2", "voter": true}, {"id": "n3", "voter": true}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/admin/cluster/shard-recovery" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("shard") == "7" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"status":"error","code":"NotFound","message":"no such shard 7: the cluster has shards 0 to 1","retryable":false,"details":{"field":"shard"}}`))
			return
		}
		body := map[string]any{"status": "success", "plan": plan}
		if r.Method == http.MethodPost {
			posts.Add(1)
			body["recovered"] = map[string]any{"last_index": 12, "last_term": 4, "version": 11}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &posts
}

func TestShardRecoverSaysWhatMayBeLostAndNeedsYesWithoutATerminal(t *testing.T) {
	url, posts := fakeRecoveryServer(t)
	out, _, err := execCairnIn(t.Context(), strings.NewReader("yes\n"), "admin", "shard", "recover", "0", "--from", "n1", "--admin-server", url)
	if err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("without a terminal and without --yes: %v, want a refusal naming --yes", err)
	}
	if posts.Load() != 0 {
		t.Fatal("the recovery ran without confirmation")
	}
	for _, want := range []string{"last log index 12", "n2  voter, not registered (lost)", "n1  voter, the survivor",
		"Entries 11 to 12 were not known committed here and become committed", "May be lost: whatever the other members committed after index 12"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan does not say %q:\n%s", want, out)
		}
	}

	out, _, err = execCairn(t, "admin", "shard", "recover", "0", "--from", "n1", "--yes", "--admin-server", url)
	if err != nil || posts.Load() != 1 || !strings.Contains(out, "shard 0 recovered: n1 is its only voter") {
		t.Fatalf("--yes: %v, %d recoveries, output:\n%s", err, posts.Load(), out)
	}
}

func TestShardRecoverRefusesBadArguments(t *testing.T) {
	url, posts := fakeRecoveryServer(t)
	for _, args := range [][]string{{"x", "--from", "n1"}, {"-1", "--from", "n1"}, {"0"}} {
		_, _, err := execCairn(t, append([]string{"admin", "shard", "recover", "--yes", "--admin-server", url}, args...)...)
		if _, ok := err.(usageError); !ok {
			t.Errorf("recover %v: %v, want a usage error", args, err)
		}
	}
	if posts.Load() != 0 {
		t.Fatal("a refused command recovered")
	}
	// A shard the cluster does not have is the server's NotFound, not "not a cluster node".
	_, _, err := execCairn(t, "admin", "shard", "recover", "7", "--from", "n1", "--yes", "--admin-server", url)
	if code, msg := describeError(err); code != "NotFound" || !strings.Contains(msg, "no such shard") || strings.Contains(msg, "not a cluster node") {
		t.Fatalf("shard 7: %s: %s; want NotFound naming the shard", code, msg)
	}
}
