package rest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// newFeedServer is newServer over a shard with FSM options fsm and a change-feed heartbeat.
func newFeedServer(t *testing.T, fsm meta.Options, heartbeat time.Duration) (*httptest.Server, *rest.Handler) {
	t.Helper()
	sh := workbenchtest.Replica(t, shard.Config{FSM: fsm})
	bs := blobtest.Dir(t)
	svc, err := workbench.New(sh, bs, workbench.Config{InlineMaxBytes: 4096, CursorKey: workbenchtest.CursorKey})
	if err != nil {
		t.Fatal(err)
	}
	h := rest.NewHandler(svc, rest.Options{Ready: sh.Ready, FeedHeartbeat: heartbeat})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, h
}

// putText writes a file and returns its generation: the shard version of the write, the
// version of its events' positions.
func putText(t *testing.T, base, wb, path, body string) string {
	t.Helper()
	r := do(t, "PUT", base+"/v1/agents/a/workbenches/"+wb+"/files/"+path, strings.NewReader(body))
	expectOK(t, r)
	return fmt.Sprint(r.json["generation"])
}

// ids replaces each {N} in s with the N-th version.
func ids(s string, versions ...string) string {
	for i, v := range versions {
		s = strings.ReplaceAll(s, "{"+strconv.Itoa(i)+"}", v)
	}
	return s
}

func expectOK(t *testing.T, r response) {
	t.Helper()
	if r.status/100 != 2 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

// frames reads n frames of agent a's feed opened with opts.
func frames(t *testing.T, base string, opts client.EventsOptions, n int) []client.FeedEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := client.New(base, nil).Events(ctx, "a", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []client.FeedEvent
	for len(out) < n {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("after %d of %d frames: %v", len(out), n, err)
		}
		out = append(out, ev)
	}
	return out
}

func frameLine(evs []client.FeedEvent) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID+" "+e.Event)
	}
	return strings.Join(out, ", ")
}

// The stream frames every event with its position, kind and JSON data, and follows every
// file event with OpenWOP's workspace.updated, whose data is exactly {path, version}.
func TestEventsFramingAndWorkspaceUpdated(t *testing.T) {
	srv, _ := newFeedServer(t, meta.Options{}, time.Hour)
	v1 := putText(t, srv.URL, "w", "input/a.txt", "one")
	v2 := putText(t, srv.URL, "w", "input/a.txt", "two")
	resp, err := http.Get(srv.URL + "/v1/agents/a/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	var got strings.Builder
	for strings.Count(got.String(), "\n\n") < 6 { // retry, then five frames
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: %v", got.String(), err)
		}
		got.WriteString(line)
	}
	text := got.String()
	for _, want := range []string{
		"retry: 1000\n\n",
		ids("id: {0}.0\nevent: workbench.create\ndata: {", v1),
		ids("id: {0}.1\nevent: file.put\ndata: {", v1),
		ids("\nid: {0}.1.1\nevent: workspace.updated\ndata: {\"path\":\"input/a.txt\",\"version\":1}\n\n", v1),
		ids("\nid: {0}.0.1\nevent: workspace.updated\ndata: {\"path\":\"input/a.txt\",\"version\":2}\n\n", v2),
		`"digest":"sha256:`, ids(`"generation":{0},`, v1), `"kind":"file.put"`, `"path":"input/a.txt"`, `"size":3`, `"version":1`, `"workbench":"w"`,
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("stream lacks %q:\n%s", want, text)
		}
	}
}

// Filters keep one workbench's events, or the file events below a path.
func TestEventsFilters(t *testing.T) {
	srv, _ := newFeedServer(t, meta.Options{}, time.Hour)
	v := []string{putText(t, srv.URL, "w", "input/a", "1"), putText(t, srv.URL, "v", "input/b", "1"),
		putText(t, srv.URL, "w", "outputs/c", "1"), putText(t, srv.URL, "w", "input/ab", "1")}
	for _, tc := range []struct {
		opts client.EventsOptions
		want string
	}{
		{client.EventsOptions{Workbench: "v"}, ids("{1}.0 workbench.create, {1}.1 file.put, {1}.1.1 workspace.updated", v...)},
		{client.EventsOptions{Prefix: "input/a"}, ids("{0}.1 file.put, {0}.1.1 workspace.updated", v...)},
		{client.EventsOptions{Workbench: "w", Prefix: "outputs"}, ids("{2}.0 file.put, {2}.0.1 workspace.updated", v...)},
	} {
		evs := frames(t, srv.URL, tc.opts, strings.Count(tc.want, ",")+1)
		if got := frameLine(evs); got != tc.want {
			t.Fatalf("%+v: %s, want %s", tc.opts, got, tc.want)
		}
	}
	for _, bad := range []string{"?prefix=../x", "?workbench=-x", "?after=x", "?after=1.2.3", "?limit=3"} {
		expect(t, do(t, "GET", srv.URL+"/v1/agents/a/events"+bad, nil), 400, workbench.CodeInvalidArguments)
	}
	expect(t, do(t, "GET", srv.URL+"/v1/agents/a/events", nil, "Last-Event-ID", "nope"), 400, workbench.CodeInvalidArguments)
	expect(t, do(t, "POST", srv.URL+"/v1/agents/a/events", nil), 405, workbench.CodeInvalidArguments)
	expect(t, do(t, "GET", srv.URL+"/v1/agents/nobody/events", nil), 404, workbench.CodeNotFound)
}

// Resuming after any frame's id, by Last-Event-ID or ?after=, goes on with exactly the
// frames that followed it: the workspace.updated of the same event, the other events of
// the same command, nothing twice.
func TestEventsResumeAfterEveryFrame(t *testing.T) {
	srv, _ := newFeedServer(t, meta.Options{}, time.Hour)
	v1 := putText(t, srv.URL, "w", "input/a", "1") // two events in one command
	v2 := putText(t, srv.URL, "w", "input/b", "2")
	del := do(t, "DELETE", srv.URL+"/v1/agents/a/workbenches/w/files/input/a", nil)
	expectOK(t, del)
	v3 := fmt.Sprint(del.json["generation"])
	all := frames(t, srv.URL, client.EventsOptions{}, 7)
	if got, want := frameLine(all), ids("{0}.0 workbench.create, {0}.1 file.put, {0}.1.1 workspace.updated, {1}.0 file.put, {1}.0.1 workspace.updated, {2}.0 file.delete, {2}.0.1 workspace.updated", v1, v2, v3); got != want {
		t.Fatalf("frames %s, want %s", got, want)
	}
	putText(t, srv.URL, "w", "input/c", "3") // so every resume has something to read
	all = append(all, frames(t, srv.URL, client.EventsOptions{After: all[6].ID}, 2)...)
	for i, f := range all[:len(all)-1] {
		rest := frames(t, srv.URL, client.EventsOptions{After: f.ID}, len(all)-i-1)
		if got, want := frameLine(rest), frameLine(all[i+1:]); got != want {
			t.Fatalf("after %s: %s, want %s", f.ID, got, want)
		}
	}
	// ?after= is the same, and a bare shard version resumes after its whole command.
	resp, err := http.Get(srv.URL + "/v1/agents/a/events?after=" + v1)
	if err != nil {
		t.Fatal(err)
	}
	line := ""
	br := bufio.NewReader(resp.Body)
	for !strings.HasPrefix(line, "id: ") {
		if line, err = br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	resp.Body.Close()
	if line != "id: "+v2+".0\n" {
		t.Fatalf("after=%s starts with %q", v1, line)
	}
}

// A position older than the feed's retention is 410 FeedExpired naming where to resume;
// resuming there works.
func TestEventsTooOldIsGone(t *testing.T) {
	srv, _ := newFeedServer(t, meta.Options{FeedMaxPerRoot: 3}, time.Hour)
	var v []string
	for _, p := range []string{"a", "b", "c", "d"} {
		v = append(v, putText(t, srv.URL, "w", "input/"+p, "x"))
	}
	// Event {0}.1 (the put of input/a) was dropped: its workspace.updated cannot follow.
	r := do(t, "GET", srv.URL+"/v1/agents/a/events", nil, "Last-Event-ID", ids("{0}.1", v...))
	expect(t, r, 410, workbench.CodeFeedExpired)
	d, _ := r.json["details"].(map[string]any)
	if d["resume_after"] != ids("{0}.1.1", v...) || d["oldest_position"] != ids("{1}.0", v...) {
		t.Fatalf("details %v", d)
	}
	_, err := client.New(srv.URL, nil).Events(t.Context(), "a", client.EventsOptions{After: ids("{0}.0", v...)})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.HTTPStatus != 410 || ce.Code != workbench.CodeFeedExpired {
		t.Fatalf("client: %v", err)
	}
	if evs := frames(t, srv.URL, client.EventsOptions{After: ids("{0}.1.1", v...)}, 2); frameLine(evs) != ids("{1}.0 file.put, {1}.0.1 workspace.updated", v...) {
		t.Fatalf("resume at resume_after: %s", frameLine(evs))
	}
	// Without following, the stream ends after what the feed held.
	s, err := client.New(srv.URL, nil).Events(t.Context(), "a", client.EventsOptions{NoFollow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for ; ; n++ {
		if _, err := s.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if n != 6 { // three events, each with its workspace.updated
		t.Fatalf("%d frames without following, want 6", n)
	}
	expect(t, do(t, "GET", srv.URL+"/v1/agents/a/events?follow=maybe", nil), 400, workbench.CodeInvalidArguments)
	// Without a position the stream starts at the oldest held event.
	if evs := frames(t, srv.URL, client.EventsOptions{}, 1); evs[0].ID != ids("{1}.0", v...) {
		t.Fatalf("from the start: %s", frameLine(evs))
	}
}

// A stream follows writes as they happen, sends heartbeats while idle, and ends cleanly
// when the node begins to shut down (and a new one is refused with a retryable 503).
func TestEventsFollowHeartbeatAndShutdown(t *testing.T) {
	srv, h := newFeedServer(t, meta.Options{}, 20*time.Millisecond)
	v1 := putText(t, srv.URL, "w", "input/a", "1")
	resp, err := http.Get(srv.URL + "/v1/agents/a/events?after=" + v1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	readUntil := func(want string) {
		t.Helper()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("waiting for %q: %v", want, err)
			}
			if line == want {
				return
			}
		}
	}
	readUntil(": keep-alive\n")
	v2 := putText(t, srv.URL, "w", "input/b", "2")
	readUntil("id: " + v2 + ".0\n")
	h.EndStreams()
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("the stream did not end cleanly: %v", err)
	}
	// Once shutting down, a new stream is a retryable 503: open it on another node.
	expect(t, do(t, "GET", srv.URL+"/v1/agents/a/events", nil), 503, workbench.CodeRoutingUnavailable)
}

// A resume position past the feed's newest version was never handed out: following after
// it would silently skip every event up to it, so it is refused (400, naming the header or
// parameter and the rule), as is a Last-Event-ID sent twice; the newest position itself
// still resumes, and the next write's events follow it.
func TestEventsResumeAheadOfTheFeedIsRefused(t *testing.T) {
	srv, _ := newFeedServer(t, meta.Options{}, time.Hour)
	g, err := strconv.ParseUint(putText(t, srv.URL, "w", "input/a", "x"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	ahead := fmt.Sprintf("%d.0", g+1000)
	for _, tc := range []struct{ field, url, header string }{
		{"Last-Event-ID", srv.URL + "/v1/agents/a/events", ahead},
		{"after", srv.URL + "/v1/agents/a/events?after=" + ahead, ""},
	} {
		var hd []string
		if tc.header != "" {
			hd = []string{"Last-Event-ID", tc.header}
		}
		r := do(t, "GET", tc.url, nil, hd...)
		expect(t, r, 400, workbench.CodeInvalidArguments)
		d, _ := r.json["details"].(map[string]any)
		if d["field"] != tc.field || d["rule"] != "ahead_of_feed" || !strings.HasPrefix(fmt.Sprint(r.json["message"]), tc.field+`: position "`+ahead+`"`) {
			t.Fatalf("%s ahead of the feed: %s", tc.field, r.body)
		}
	}
	req, err := http.NewRequest("GET", srv.URL+"/v1/agents/a/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Last-Event-ID", fmt.Sprintf("%d.0", g))
	req.Header.Add("Last-Event-ID", ahead)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Fatalf("Last-Event-ID sent twice: status %d, want 400", res.StatusCode)
	}
	all, err := client.New(srv.URL, nil).Events(t.Context(), "a", client.EventsOptions{NoFollow: true})
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for {
		ev, err := all.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		newest = ev.ID
	}
	all.Close()
	if !strings.HasPrefix(newest, fmt.Sprint(g)+".") {
		t.Fatalf("the newest frame %q is not of version %d", newest, g)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := client.New(srv.URL, nil).Events(ctx, "a", client.EventsOptions{After: newest})
	if err != nil {
		t.Fatalf("resume at the newest position: %v", err)
	}
	defer s.Close()
	g2 := putText(t, srv.URL, "w", "input/b", "y")
	if ev, err := s.Next(); err != nil || ev.ID != g2+".0" {
		t.Fatalf("the next write after resuming at the newest position: %+v, %v, want %s.0", ev, err, g2)
	}
}
