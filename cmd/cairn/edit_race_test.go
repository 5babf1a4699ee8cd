package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/api/workbench/workbenchtest"
)

// runCLI runs one cairn command line against url and returns what it printed and its
// error; safe to call from several goroutines.
func runCLI(ctx context.Context, url string, args ...string) (string, error) {
	out, _, err := execCairnIn(ctx, strings.NewReader(""), append([]string{"--server", url}, args...)...)
	return out, err
}

// TestConcurrentEditsWithoutIfMatchAllLand: 30 concurrent `cairn edit` of one file, each
// replacing its own text, without --if-match: every one succeeds (the command retries its
// own compare-and-swap) and the file holds all 30 replacements.
func TestConcurrentEditsWithoutIfMatchAllLand(t *testing.T) {
	url := newTestServer(t)
	const editors = 30
	var body strings.Builder
	for i := range editors {
		fmt.Fprintf(&body, "slot-%02d\n", i)
	}
	tgt := []string{"--agent", "a", "--workbench", "w"}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, url+"/v1/agents/a/workbenches/w/files/logs/slots.txt", strings.NewReader(body.String()))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("put: %v %v", resp, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, editors)
	for i := range editors {
		wg.Go(func() {
			_, errs[i] = runCLI(t.Context(), url, append([]string{"edit", "logs/slots.txt", "--old", fmt.Sprintf("slot-%02d", i), "--new", fmt.Sprintf("done-%02d", i)}, tgt...)...)
		})
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			t.Errorf("editor %d: %v", i, err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d concurrent edits without --if-match failed", failed, editors)
	}
	out, err := runCLI(t.Context(), url, append([]string{"cat", "logs/slots.txt"}, tgt...)...)
	if err != nil || strings.Contains(out, "slot-") || strings.Count(out, "done-") != editors {
		t.Fatalf("after the edits: %q %v", out, err)
	}
}

// TestEditWithIfMatchNeverRetries: `cairn edit --if-match G` edits only generation G: a
// stale G fails with Conflict without writing, and a concurrent write between the edit's
// read and its write fails it once, without another read; without --if-match the same
// race is retried and the edit lands.
func TestEditWithIfMatchNeverRetries(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	inner := rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready})
	const file = "/v1/agents/a/workbenches/w/files/logs/x"
	var gets, puts, races atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		if r.URL.Path != file {
			return
		}
		switch r.Method {
		case http.MethodGet:
			gets.Add(1)
			if races.Add(-1) >= 0 { // a concurrent writer lands right after the edit's read
				rec := httptest.NewRecorder()
				inner.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, file+"?append", strings.NewReader(" racer")))
				if rec.Code != http.StatusOK {
					t.Errorf("the racing append: %d %s", rec.Code, rec.Body)
				}
			}
		case http.MethodPut:
			puts.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	tgt := []string{"--agent", "a", "--workbench", "w"}
	rec := httptest.NewRecorder()
	inner.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, file, strings.NewReader("hello")))
	gen := strings.Trim(rec.Header().Get("ETag"), `"`)
	edit := func(extra ...string) error {
		_, err := runCLI(t.Context(), srv.URL, append(append([]string{"edit", "logs/x", "--old", "hello", "--new", "bye"}, extra...), tgt...)...)
		return err
	}
	for _, tc := range []struct {
		name       string
		races      int64
		args       []string
		code       string
		gets, puts int64
	}{
		{"a race under --if-match fails once", 1, []string{"--if-match", gen}, "Conflict", 1, 1},
		{"a stale --if-match fails without writing", 0, []string{"--if-match", gen}, "Conflict", 1, 0},
		{"the same race without --if-match is retried", 1, nil, "", 2, 2},
	} {
		gets.Store(0)
		puts.Store(0)
		races.Store(tc.races)
		code := ""
		if err := edit(tc.args...); err != nil {
			code, _ = describeError(err)
		}
		if code != tc.code {
			t.Fatalf("%s: code %q, want %q", tc.name, code, tc.code)
		}
		if gets.Load() != tc.gets || puts.Load() != tc.puts {
			t.Fatalf("%s: %d reads and %d writes, want %d and %d", tc.name, gets.Load(), puts.Load(), tc.gets, tc.puts)
		}
	}
}

// TestAnEditWhoseWriteWasUnconfirmedLandsOnce: the edit's write applies but its commit is
// unconfirmed (503 OutcomeUnknown); the command's retry of that write replays its first
// answer (the write carries an Idempotency-Key) instead of failing its own If-Match and
// then finding its text gone (NoMatch).
func TestAnEditWhoseWriteWasUnconfirmedLandsOnce(t *testing.T) {
	n, fc := workbenchtest.NewFaulty(t, workbench.Config{InlineMaxBytes: 4096})
	srv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready}))
	t.Cleanup(srv.Close)
	tgt := []string{"--agent", "a", "--workbench", "w"}
	rec := httptest.NewRecorder()
	srv.Config.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/v1/agents/a/workbenches/w/files/logs/x", strings.NewReader("hello")))
	fc.Once(workbenchtest.AppliedButUnconfirmed)
	if _, err := runCLI(t.Context(), srv.URL, append([]string{"edit", "logs/x", "--old", "hello", "--new", "bye"}, tgt...)...); err != nil {
		t.Fatalf("an edit whose write was applied but unconfirmed: %v", err)
	}
	if out, err := runCLI(t.Context(), srv.URL, append([]string{"cat", "logs/x"}, tgt...)...); err != nil || out != "bye" {
		t.Fatalf("after the edit: %q %v", out, err)
	}
}
