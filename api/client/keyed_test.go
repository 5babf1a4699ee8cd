package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// lossyServer is newRealServer whose answer to the next POST to a path ending in suffix,
// once armed, is lost: the real handler runs the request, and the client is answered a
// retryable 503 instead, as when a node applied a write and went away before answering.
type lossyServer struct {
	mu     sync.Mutex
	suffix string         // armed while not ""
	lost   []byte         // the answer the client never saw
	next   http.Handler   // the real REST handler
	seen   map[string]int // POSTs per path
}

func newLossyServer(t *testing.T) (*lossyServer, *Client) {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 64})
	l := &lossyServer{next: rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready}), seen: map[string]int{}}
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	return l, New(srv.URL, nil).WithRetry(fastRetry)
}

// arm makes the next POST to a path ending in suffix lose its answer.
func (l *lossyServer) arm(suffix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.suffix, l.lost = suffix, nil
}

func (l *lossyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	lose := r.Method == http.MethodPost && l.suffix != "" && strings.HasSuffix(r.URL.Path, l.suffix)
	if lose {
		l.suffix = ""
	}
	if r.Method == http.MethodPost {
		l.seen[r.URL.Path]++
	}
	l.mu.Unlock()
	if !lose {
		l.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	l.next.ServeHTTP(rec, r)
	l.mu.Lock()
	l.lost = rec.Body.Bytes()
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, `{"status":"error","code":"RoutingUnavailable","message":"the answer was lost","retryable":true,"details":{}}`)
}

// A snapshot sent twice under one key mints one snapshot, and the retry answers what the
// first answered; the key with another request is refused and mints nothing.
func TestSnapshotUnderAKeyMintsOneSnapshot(t *testing.T) {
	c := newRealServer(t)
	ctx := t.Context()
	mustPut(t, c, "a", "w", "input/x", "x", PutOptions{})
	req := SnapshotRequest{Name: "s1", TTLDays: 3, Reason: "baseline", IdempotencyKey: "snap-1"}
	first, again := twice(t, func() (*Snapshot, error) { return c.Snapshot(ctx, "a", "w", req) })
	if string(first.Raw) != string(again.Raw) {
		t.Fatalf("the retry answers\n%s\nthe first\n%s", again.Raw, first.Raw)
	}
	req.Name = "s2"
	_, err := c.Snapshot(ctx, "a", "w", req)
	if e := wantCode(t, err, http.StatusBadRequest, "InvalidArguments"); e.Details["field"] != "idempotency_key" {
		t.Fatalf("the key with another request: %+v, want details.field idempotency_key", e)
	}
	list, err := c.ListSnapshots(ctx, "a", "w")
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Snapshots) != 1 || list.Snapshots[0].Name != "s1" {
		t.Fatalf("snapshots: %s, want s1 alone", list.Raw)
	}
}

// keyedCall is one client call that takes an idempotency key: the route's suffix, whether
// it needs snapshot s1 of workbench w first, and the call (other: with another request),
// answering the result object.
type keyedCall struct {
	name, suffix  string
	needsSnapshot bool
	send          func(ctx context.Context, c *Client, key string, other bool) (json.RawMessage, error)
}

// rawOf is a call's result object, or its error.
func rawOf[R any](r *R, err error, raw func(*R) json.RawMessage) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	return raw(r), nil
}

var keyedCalls = []keyedCall{
	{"snapshot", "/snapshots", false, func(ctx context.Context, c *Client, key string, other bool) (json.RawMessage, error) {
		req := SnapshotRequest{Name: "s9", TTLDays: 3, IdempotencyKey: key}
		if other {
			req.Name = "s10"
		}
		r, err := c.Snapshot(ctx, "a", "w", req)
		return rawOf(r, err, func(r *Snapshot) json.RawMessage { return r.Raw })
	}},
	{"commit", "/commit", false, func(ctx context.Context, c *Client, key string, other bool) (json.RawMessage, error) {
		req := CommitRequest{Manifest: json.RawMessage(`{"run":1}`), ContentDigestURI: "sha256:" + strings.Repeat("0", 64), IdempotencyKey: key}
		if other {
			req.Manifest, req.Replace = json.RawMessage(`{"run":2}`), true
		}
		r, err := c.Commit(ctx, "a", "w", req)
		return rawOf(r, err, func(r *CommitResult) json.RawMessage { return r.Raw })
	}},
	{"restore", "/restore", true, func(ctx context.Context, c *Client, key string, other bool) (json.RawMessage, error) {
		req := RestoreRequest{Destination: "r1", AtSnapshot: SnapshotName("s1"), IdempotencyKey: key}
		if other {
			req.Destination = "r2"
		}
		r, err := c.Restore(ctx, "a", "w", req)
		return rawOf(r, err, func(r *RestoreResult) json.RawMessage { return r.Raw })
	}},
	{"renew", "/snapshots/renew", true, func(ctx context.Context, c *Client, key string, other bool) (json.RawMessage, error) {
		ttl := 30
		if other {
			ttl = 20
		}
		r, err := c.RenewSnapshot(ctx, "a", "w", SnapshotName("s1"), ttl, KeyOptions{IdempotencyKey: key})
		return rawOf(r, err, func(r *Snapshot) json.RawMessage { return r.Raw })
	}},
	{"retire", "/snapshots/retire", true, func(ctx context.Context, c *Client, key string, other bool) (json.RawMessage, error) {
		reason := "done"
		if other {
			reason = "other"
		}
		r, err := c.RetireSnapshot(ctx, "a", "w", SnapshotName("s1"), reason, KeyOptions{IdempotencyKey: key})
		return rawOf(r, err, func(r *RetireResult) json.RawMessage { return r.Raw })
	}},
}

// Each call under a key whose first answer was lost (the server applied it, the client
// saw a retryable 503) is sent again by a retrying client and answered what the first
// answer said (idempotent_replay aside, which a replay sets), and sent again by the caller
// it answers the same; the key with another request is refused. What the call changes,
// it changed once.
func TestKeyedCallsRetriedAfterALostAnswerAnswerTheFirst(t *testing.T) {
	for _, tc := range keyedCalls {
		t.Run(tc.name, func(t *testing.T) {
			l, c := newLossyServer(t)
			ctx := t.Context()
			mustPut(t, c, "a", "w", "input/x", "x", PutOptions{})
			if tc.needsSnapshot {
				if _, err := c.Snapshot(ctx, "a", "w", SnapshotRequest{Name: "s1"}); err != nil {
					t.Fatal(err)
				}
			}
			l.arm(tc.suffix)
			got, err := tc.send(ctx, c, "k-1", false)
			if err != nil {
				t.Fatalf("the call under a key whose first answer was lost: %v", err)
			}
			l.mu.Lock()
			lost, sent := l.lost, l.seen["/v1/agents/a/workbenches/w"+tc.suffix]
			l.mu.Unlock()
			if sent != 2 {
				t.Fatalf("the server saw %d POSTs, want the lost one and its retry", sent)
			}
			sameResult(t, lost, got)
			again, err := tc.send(ctx, c, "k-1", false)
			if err != nil {
				t.Fatal(err)
			}
			sameResult(t, lost, again)
			_, err = tc.send(ctx, c, "k-1", true)
			if e := wantCode(t, err, http.StatusBadRequest, "InvalidArguments"); e.Details["field"] != "idempotency_key" {
				t.Fatalf("the key with another request: %+v, want details.field idempotency_key", e)
			}
			changedOnce(t, c, tc.name)
		})
	}
}

// sameResult fails unless got is the result object of the answer first (a REST answer,
// "status":"success" included), idempotent_replay aside, which got must have true when
// first has it.
func sameResult(t *testing.T, first, got json.RawMessage) {
	t.Helper()
	var a, b map[string]any
	if err := json.Unmarshal(first, &a); err != nil {
		t.Fatalf("the first answer %q: %v", first, err)
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatalf("the retry's answer %q: %v", got, err)
	}
	if _, ok := a["idempotent_replay"]; ok {
		if b["idempotent_replay"] != true {
			t.Fatalf("the retry answers %s, want idempotent_replay true", got)
		}
		a["idempotent_replay"], b["idempotent_replay"] = nil, nil
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the retry answers\n%s\nthe first\n%s", got, first)
	}
}

// changedOnce checks that what the call named changed once: one snapshot s9, one commit,
// one restore into r1 (none into r2), s1 renewed or retired as the first asked.
func changedOnce(t *testing.T, c *Client, name string) {
	t.Helper()
	ctx := t.Context()
	list, err := c.ListSnapshots(ctx, "a", "w")
	if err != nil {
		t.Fatal(err)
	}
	s := list.Snapshots
	ok := len(s) == 1
	switch name {
	case "snapshot":
		ok = ok && s[0].Name == "s9"
	case "commit":
		page, err := c.ListCommits(ctx, "a", "w", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		ok = len(s) == 0 && page.CommitCount == 1
	case "restore":
		_, err1 := c.DescribeWorkbench(ctx, "a", "r1", SnapshotRef{})
		_, err2 := c.DescribeWorkbench(ctx, "a", "r2", SnapshotRef{})
		ok = ok && err1 == nil && ErrorCode(err2) == "NotFound"
	case "renew":
		ok = ok && s[0].TTLDays == 30
	case "retire":
		ok = ok && s[0].State == SnapshotRetired && s[0].RetireReason == "done"
	}
	if !ok {
		t.Fatalf("after the calls: snapshots %s", list.Raw)
	}
}
