package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fastRetry retries quickly so the tests do not wait on real backoffs.
var fastRetry = RetryPolicy{MaxAttempts: 4, MaxElapsed: 10 * time.Second, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}

// flakyServer answers the first failures requests with status (a RoutingUnavailable
// envelope, retryable as given, with retryAfter as Retry-After when set), then 200 with
// a small JSON result. It counts the requests it saw.
func flakyServer(t *testing.T, failures int, status int, retryable bool, retryAfter string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := seen.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if int(n) <= failures {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"status":"error","code":"RoutingUnavailable","message":"no leader","retryable":%t,"details":{}}`, retryable)
			return
		}
		fmt.Fprint(w, `{"status":"success","workbench_id":"w","path":"/agents/a/wb/w","size_bytes":3,"file_count":1,"entry_count":5,"match_count":0}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func TestRetryRepeatsReplayableRequestsOnRetryableAnswers(t *testing.T) {
	for _, tt := range []struct {
		name      string
		status    int
		retryable bool
		call      func(c *Client) error
		wantSent  int64
		wantCode  string // "" for success
	}{
		{"a GET after two 503s succeeds on the third send", http.StatusServiceUnavailable, true,
			func(c *Client) error { _, err := c.DescribeWorkbench(t.Context(), "a", "w", SnapshotRef{}); return err }, 3, ""},
		{"a read-only tool POST is retried", http.StatusServiceUnavailable, true,
			func(c *Client) error { _, err := c.Query.Search(t.Context(), "a", SearchRequest{}); return err }, 3, ""},
		{"a 429 is retried", http.StatusTooManyRequests, true,
			func(c *Client) error { _, err := c.Query.Find(t.Context(), "a", FindRequest{}); return err }, 3, ""},
		{"a 503 that says it is not retryable is returned at once", http.StatusServiceUnavailable, false,
			func(c *Client) error { _, err := c.DescribeWorkbench(t.Context(), "a", "w", SnapshotRef{}); return err }, 1, "RoutingUnavailable"},
		{"a 500 is returned at once", http.StatusInternalServerError, true,
			func(c *Client) error { _, err := c.DescribeWorkbench(t.Context(), "a", "w", SnapshotRef{}); return err }, 1, "RoutingUnavailable"},
		{"a snapshot (not idempotent) is not sent twice", http.StatusServiceUnavailable, true,
			func(c *Client) error { _, err := c.Snapshot(t.Context(), "a", "w", SnapshotRequest{}); return err }, 1, "RoutingUnavailable"},
		{"a snapshot under an Idempotency-Key is retried", http.StatusServiceUnavailable, true,
			func(c *Client) error {
				_, err := c.Snapshot(t.Context(), "a", "w", SnapshotRequest{IdempotencyKey: "k1"})
				return err
			}, 3, ""},
		{"a restore without an Idempotency-Key is not sent twice", http.StatusServiceUnavailable, true,
			func(c *Client) error {
				_, err := c.Restore(t.Context(), "a", "w", RestoreRequest{Destination: "r", AtCommit: "c"})
				return err
			}, 1, "RoutingUnavailable"},
		{"a retire without an Idempotency-Key is not sent twice", http.StatusServiceUnavailable, true,
			func(c *Client) error {
				_, err := c.RetireSnapshot(t.Context(), "a", "w", SnapshotID(1), "")
				return err
			}, 1, "RoutingUnavailable"},
		{"a commit (an exact repeat replays) is retried without a key", http.StatusServiceUnavailable, true,
			func(c *Client) error { _, err := c.Commit(t.Context(), "a", "w", CommitRequest{}); return err }, 3, ""},
		{"a renew (a repeat means the same) is retried without a key", http.StatusServiceUnavailable, true,
			func(c *Client) error { _, err := c.RenewSnapshot(t.Context(), "a", "w", SnapshotID(1), 0); return err }, 3, ""},
		{"an append without an Idempotency-Key is not sent twice", http.StatusServiceUnavailable, true,
			func(c *Client) error {
				_, err := c.Append(t.Context(), "a", "w", "logs/x", strings.NewReader("abc"), AppendOptions{})
				return err
			}, 1, "RoutingUnavailable"},
		{"an append with an Idempotency-Key is retried", http.StatusServiceUnavailable, true,
			func(c *Client) error {
				_, err := c.Append(t.Context(), "a", "w", "logs/x", strings.NewReader("abc"), AppendOptions{IdempotencyKey: "k1"})
				return err
			}, 3, ""},
		{"a PUT of a stream (not replayable) is sent once", http.StatusServiceUnavailable, true,
			func(c *Client) error {
				_, err := c.PutFile(t.Context(), "a", "w", "input/x", io.MultiReader(strings.NewReader("abc")), PutOptions{})
				return err
			}, 1, "RoutingUnavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, seen := flakyServer(t, 2, tt.status, tt.retryable, "")
			err := tt.call(New(srv.URL, nil).WithRetry(fastRetry))
			if got := ErrorCode(err); got != tt.wantCode {
				t.Fatalf("error %v (code %q), want code %q", err, got, tt.wantCode)
			}
			if got := seen.Load(); got != tt.wantSent {
				t.Errorf("the server saw %d requests, want %d", got, tt.wantSent)
			}
		})
	}
}

func TestRetryIsBoundedByAttempts(t *testing.T) {
	srv, seen := flakyServer(t, 100, http.StatusServiceUnavailable, true, "")
	_, err := New(srv.URL, nil).WithRetry(fastRetry).DescribeWorkbench(t.Context(), "a", "w", SnapshotRef{})
	if e := asError(t, err); e.Code != "RoutingUnavailable" || e.Message != "no leader" {
		t.Fatalf("after the last attempt: %+v, want the server's RoutingUnavailable envelope", e)
	}
	if got := seen.Load(); got != int64(fastRetry.MaxAttempts) {
		t.Errorf("the server saw %d requests, want MaxAttempts = %d", got, fastRetry.MaxAttempts)
	}
}

func TestRetryDoesNotWaitPastMaxElapsed(t *testing.T) {
	// Retry-After: 3600 s is far beyond MaxElapsed: the client returns the answer at once
	// rather than sleeping an hour.
	srv, seen := flakyServer(t, 100, http.StatusServiceUnavailable, true, "3600")
	_, err := New(srv.URL, nil).WithRetry(fastRetry).DescribeWorkbench(t.Context(), "a", "w", SnapshotRef{})
	if e := asError(t, err); e.RetryAfter != time.Hour {
		t.Fatalf("got %+v, want the 503 with RetryAfter 1h", e)
	}
	if got := seen.Load(); got != 1 {
		t.Errorf("the server saw %d requests, want 1", got)
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		n := len(times)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"status":"error","code":"RoutingUnavailable","message":"moving","retryable":true,"details":{}}`)
			return
		}
		fmt.Fprint(w, `{"workbench_id":"w"}`)
	}))
	t.Cleanup(srv.Close)
	if _, err := New(srv.URL, nil).WithRetry(fastRetry).DescribeWorkbench(t.Context(), "a", "w", SnapshotRef{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// A lower bound only (the backoff of fastRetry is 2 ms at most): the client waited
	// for the server's Retry-After, not its own backoff.
	if len(times) != 2 || times[1].Sub(times[0]) < time.Second {
		t.Fatalf("sends at %v, want two, at least 1 s apart (Retry-After: 1)", times)
	}
}

// restartingServer returns the URL of a server that refuses connections (a node
// restarting) until the third dial, serves h from then on, and the client that dials it
// and counts its dials.
func restartingServer(t *testing.T, h http.Handler) (string, *http.Client, *atomic.Int64) {
	t.Helper()
	// Reserve a port and close it: connections are refused until the server starts on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dials := new(atomic.Int64)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		if dials.Add(1) == 3 {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return nil, err
			}
			srv := &http.Server{Handler: h}
			go func() { _ = srv.Serve(l) }()
			t.Cleanup(func() { _ = srv.Close() })
		}
		var d net.Dialer
		return d.DialContext(ctx, network, a)
	}}}
	t.Cleanup(hc.CloseIdleConnections)
	return "http://" + addr, hc, dials
}

func TestRetryRidesOutRefusedConnections(t *testing.T) {
	url, hc, dials := restartingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","dry_run":true,"candidates":2}`)
	}))
	// GC is not replayable, but a refused connection never reached the server.
	rep, err := NewAdmin(url, hc).WithRetry(fastRetry).CollectGarbage(t.Context(), GCRequest{DryRun: true})
	if err != nil {
		t.Fatalf("CollectGarbage across a restart: %v", err)
	}
	if rep.Candidates != 2 || dials.Load() != 3 {
		t.Errorf("report %+v after %d dials, want 2 candidates after 3 dials", rep, dials.Load())
	}
}

// A put of a stream (stdin, a pipe: not replayable) or of a file rides out refused
// connections too: a refused connection read none of the stream, and a file is read again
// from where it started. The server gets each whole.
func TestRetryResendsStreamsAndFilesAfterRefusedConnections(t *testing.T) {
	content := strings.Repeat("stream body ", 10_000)
	file, err := os.CreateTemp(t.TempDir(), "body")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteString("skip" + content); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]func() io.Reader{
		"stream": func() io.Reader { return struct{ io.Reader }{strings.NewReader(content)} },
		"file, from an offset": func() io.Reader {
			if _, err := file.Seek(4, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			return file
		},
	} {
		var got atomic.Value
		url, hc, dials := restartingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got.Store(string(b))
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"status":"success","generation":1}`)
		}))
		_, err := New(url, hc).WithRetry(fastRetry).PutFile(t.Context(), "a", "w", "input/f", body(), PutOptions{})
		if err != nil {
			t.Fatalf("%s: a put across a restart: %v", name, err)
		}
		if g, _ := got.Load().(string); g != content || dials.Load() != 3 {
			t.Errorf("%s: the server got %d bytes after %d dials, want the %d sent after 3", name, len(g), dials.Load(), len(content))
		}
	}
}

func TestWithoutRetryAClientSendsOnce(t *testing.T) {
	srv, seen := flakyServer(t, 2, http.StatusServiceUnavailable, true, "")
	_, err := New(srv.URL, nil).DescribeWorkbench(t.Context(), "a", "w", SnapshotRef{})
	if !errors.As(err, new(*Error)) || seen.Load() != 1 {
		t.Fatalf("got %v after %d sends, want the 503 after one", err, seen.Load())
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 10, MaxElapsed: time.Minute, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for _, tt := range []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond},
		{9, 500 * time.Millisecond, time.Second},
	} {
		for range 20 {
			if d := p.backoff(tt.attempt); d < tt.min || d > tt.max {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", tt.attempt, d, tt.min, tt.max)
			}
		}
	}
}
