package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// keyWatcher serves a node's REST API and keeps the Idempotency-Key of every POST, by the
// last segment of its path; armed (lose), it loses the answer to the next POST whose
// path ends in that suffix: the node applies it, the client is answered a retryable 503.
type keyWatcher struct {
	inner http.Handler
	mu    sync.Mutex
	keys  map[string][]string
	lose  string
	lost  bool
}

func newKeyWatcher(t *testing.T) (*keyWatcher, string) {
	t.Helper()
	_, inner := testHandler(t)
	k := &keyWatcher{inner: inner, keys: map[string][]string{}}
	srv := httptest.NewServer(k)
	t.Cleanup(srv.Close)
	return k, srv.URL
}

func (k *keyWatcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		k.inner.ServeHTTP(w, r)
		return
	}
	k.mu.Lock()
	route := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	k.keys[route] = append(k.keys[route], r.Header.Get("Idempotency-Key"))
	lose := k.lose != "" && strings.HasSuffix(r.URL.Path, k.lose)
	if lose {
		k.lose, k.lost = "", true
	}
	k.mu.Unlock()
	if !lose {
		k.inner.ServeHTTP(w, r)
		return
	}
	k.inner.ServeHTTP(httptest.NewRecorder(), r) // applied ...
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable) // ... but its answer lost
	_, _ = io.WriteString(w, `{"status":"error","code":"RoutingUnavailable","message":"no leader","retryable":true,"details":{}}`)
}

// sent returns the keys the POSTs to route were sent under, and forgets them.
func (k *keyWatcher) sent(route string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	keys := k.keys[route]
	delete(k.keys, route)
	return keys
}

// keyedCommands are the commands whose write carries an Idempotency-Key, each with the
// last segment of its route, in an order that lets each run twice against one workbench
// w holding snapshot s1 (restore's DEST a new workbench each run).
func keyedCommands(t *testing.T) []struct {
	route string
	args  []string
} {
	manifest := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(manifest, []byte(`{"run":"r1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return []struct {
		route string
		args  []string
	}{
		{"snapshots", []string{"snapshot", "w", "--name", "s2"}},
		{"snapshots", []string{"snapshot", "create", "w", "--name", "s3"}},
		{"commit", []string{"commit", "w", "--manifest", manifest, "--content-digest", "sha256:" + strings.Repeat("ab", 32)}},
		{"renew", []string{"snapshot", "renew", "w", "s1", "--ttl-days", "9"}},
		{"restore", []string{"restore", "w", "DEST", "--snapshot", "s1"}},
		{"retire", []string{"snapshot", "retire", "w", "s1"}},
	}
}

// Each keyed command sends --idempotency-key as the Idempotency-Key header, and without
// it a random key of its own (128 bits in hex), a new one each run.
func TestKeyedCommandsSendTheKeyGivenElseARandomOne(t *testing.T) {
	k, url := newKeyWatcher(t)
	runCairn(t, url, "put", "input/x", "-", "--agent", "a", "--workbench", "w")
	runCairn(t, url, "snapshot", "w", "--name", "s1", "--agent", "a")
	k.sent("snapshots")
	dest := 0
	for i, c := range keyedCommands(t) {
		given := fmt.Sprintf("given-%d", i) // a key is the root's: one per request
		run := func(extra ...string) {
			t.Helper()
			dest++
			args := []string{"--agent", "a"}
			for _, a := range c.args {
				args = append(args, strings.ReplaceAll(a, "DEST", fmt.Sprintf("r%d", dest)))
			}
			runCairn(t, url, append(args, extra...)...)
		}
		run("--idempotency-key", given)
		if got := k.sent(c.route); len(got) != 1 || got[0] != given {
			t.Fatalf("cairn %s --idempotency-key %s sent %q", strings.Join(c.args, " "), given, got)
		}
		run()
		run()
		got := k.sent(c.route)
		if len(got) != 2 || got[0] == got[1] {
			t.Fatalf("cairn %s run twice sent %q, want two random keys", strings.Join(c.args, " "), got)
		}
		for _, key := range got {
			if b, err := hex.DecodeString(key); err != nil || len(b) != 16 {
				t.Fatalf("cairn %s sent the key %q, want 128 random bits in hex", strings.Join(c.args, " "), key)
			}
		}
	}
}

// A snapshot, a restore and a retire (none of them means the same sent twice without a
// key) whose answer was lost are sent again by the CLI under their key and answered the
// first answer: the command succeeds, and what it changed changed once.
func TestKeyedCommandsRetriedAfterALostAnswerApplyOnce(t *testing.T) {
	k, url := newKeyWatcher(t)
	runCairn(t, url, "put", "input/x", "-", "--agent", "a", "--workbench", "w")
	runCairn(t, url, "snapshot", "w", "--name", "s1", "--agent", "a")
	for _, c := range []struct {
		route string
		args  []string
		want  string // in the command's output
	}{
		{"/snapshots", []string{"snapshot", "w", "--name", "s2"}, `snapshot 2 "s2" of w: alive`},
		{"/restore", []string{"restore", "w", "r1", "--snapshot", "s1"}, "restored w at snapshot 1 into r1"},
		{"/retire", []string{"snapshot", "retire", "w", "s1", "--reason", "done"}, "retired snapshot 1 of w (reason: done)"},
	} {
		k.mu.Lock()
		k.lose, k.lost, k.keys = c.route, false, map[string][]string{}
		k.mu.Unlock()
		out := runCairn(t, url, append(c.args, "--agent", "a")...)
		route := c.route[1:]
		keys := k.sent(route)
		k.mu.Lock()
		lost := k.lost
		k.mu.Unlock()
		if !lost || len(keys) != 2 || keys[0] != keys[1] {
			t.Fatalf("cairn %s: lost %v, keys %q; want the lost send and its retry under one key", strings.Join(c.args, " "), lost, keys)
		}
		if !strings.Contains(out, c.want) {
			t.Fatalf("cairn %s printed %q, want %q", strings.Join(c.args, " "), out, c.want)
		}
	}
	list := runCairn(t, url, "snapshot", "list", "w", "--agent", "a")
	if n := strings.Count(list, "\n"); n != 3 || !strings.Contains(list, "retired") {
		t.Fatalf("snapshots after the retried commands:\n%s\nwant s1 retired and s2", list)
	}
}
