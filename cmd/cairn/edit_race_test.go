package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
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
	_, inner := testHandler(t)
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

// TestConditionalPutRetriedAfterALostAnswerWritesOnce: the first `cairn put --if-match G`
// is applied, but the node answers it 503 OutcomeUnknown (the commit was not confirmed in
// time); the client retries it. The put carries an Idempotency-Key, so the retry replays
// the applied write: the command succeeds with the generation the first attempt made, and
// the file has exactly one new version. Without the key the retry would meet its own
// write's generation and fail 412 although the write had applied.
func TestConditionalPutRetriedAfterALostAnswerWritesOnce(t *testing.T) {
	_, inner := testHandler(t)
	const file = "/v1/agents/a/workbenches/w/files/input/f.txt"
	var (
		mu      sync.Mutex
		keys    []string
		applied string // the ETag of the write whose answer was lost
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || r.URL.Path != file || r.Header.Get("If-Match") == "" {
			inner.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		first := len(keys) == 1
		mu.Unlock()
		if !first {
			inner.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r) // applied ...
		mu.Lock()
		applied = rec.Header().Get("ETag")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable) // ... but answered as unconfirmed
		_, _ = io.WriteString(w, `{"status":"error","code":"OutcomeUnknown","message":"the write was not confirmed in time","retryable":true,"details":{"outcome":"unknown"}}`)
	}))
	t.Cleanup(srv.Close)
	put := func(stdin string, args ...string) (string, error) {
		root := newCLI()
		var out strings.Builder
		root.SetOut(&out)
		root.SetErr(io.Discard)
		root.SetIn(strings.NewReader(stdin))
		root.SetArgs(append([]string{"--server", srv.URL, "put", "input/f.txt", "-", "--agent", "a", "--workbench", "w"}, args...))
		err := root.ExecuteContext(t.Context())
		return out.String(), err
	}
	if _, err := put("first"); err != nil {
		t.Fatal(err)
	}
	first := generations(t, srv.URL, "input/f.txt")["input/f.txt"]
	out, err := put("second", "--if-match", strings.Trim(first, `"`))
	if err != nil {
		t.Fatalf("the retried conditional put failed: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("Idempotency-Keys of the attempts: %q; want two sends under one key", keys)
	}
	if got := generations(t, srv.URL, "input/f.txt")["input/f.txt"]; got != applied || applied == first {
		t.Fatalf("the file is at %s, the first attempt made %s over %s: the retry wrote again", got, applied, first)
	}
	if want := "generation " + strings.Trim(applied, `"`) + ","; !strings.Contains(out, want) {
		t.Fatalf("cairn put printed %q, want the applied write's %s", out, want)
	}
}
