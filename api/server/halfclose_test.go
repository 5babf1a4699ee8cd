package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// halfCloseRequest sends raw (a whole HTTP/1.1 request) on a new connection to addr,
// closes the connection's write side, and returns the answer.
func halfCloseRequest(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer after a half-close: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// A client that half-closes its connection after its whole body gets its answer: the
// handler's context outlives the connection's once the body has ended, whether the body
// declared its length or came chunked. The handler waits until net/http has ended the
// connection's context, so the test shows the half-close seen, not raced.
func TestAHalfCloseAfterTheWholeBodyStillGetsItsAnswer(t *testing.T) {
	conns := make(chan context.Context, 1)
	inner := closeUnread(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn := <-conns
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-conn.Done():
		case <-time.After(20 * time.Second):
			http.Error(w, "net/http never saw the half-close", http.StatusGatewayTimeout)
			return
		}
		if err := r.Context().Err(); err != nil {
			http.Error(w, "the handler's context ended: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "%d bytes", len(b))
	}), time.Second)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conns <- r.Context()
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	for name, raw := range map[string]string{
		"declared": "PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"chunked":  "PUT /f HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	} {
		resp := halfCloseRequest(t, srv.Listener.Addr().String(), raw)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated || string(b) != "5 bytes" {
			t.Errorf("%s body, then a half-close: %d %q, want 201 \"5 bytes\"", name, resp.StatusCode, b)
		}
	}
}

// Until the body has ended, the connection's end ends the handler's context, with its
// cause; releasing the context ends it. (That the context outlives the connection once the
// body has ended is TestAHalfCloseAfterTheWholeBodyStillGetsItsAnswer and, with a write
// through Raft after the connection's end, TestAHalfClosingClientWritesThroughANode.)
func TestUntilBodyEndsFollowsTheConnectionUntilTheBodyEnds(t *testing.T) {
	cause := errors.New("connection gone")
	parent, cancel := context.WithCancelCause(context.Background())
	body := &endBody{ReadCloser: io.NopCloser(strings.NewReader("abc")), remaining: 3}
	ctx, release := untilBodyEnds(parent, body)
	cancel(cause)
	<-ctx.Done()
	if got := context.Cause(ctx); !errors.Is(got, cause) {
		t.Errorf("body not ended: context ended with %v, want %v", got, cause)
	}
	release()

	ctx, release = untilBodyEnds(context.Background(), body)
	release()
	if ctx.Err() == nil {
		t.Error("the context outlives its release")
	}
}

// An endBody has ended at its last declared byte, before the io.EOF net/http's body
// answers next, or at io.EOF when no length was declared.
func TestEndBodyEndsAtItsLastDeclaredByte(t *testing.T) {
	b := &endBody{ReadCloser: io.NopCloser(strings.NewReader("abc")), remaining: 3}
	p := make([]byte, 2)
	for _, wantEnded := range []bool{false, true} {
		if _, err := b.Read(p); err != nil {
			t.Fatal(err)
		}
		if b.ended.Load() != wantEnded {
			t.Fatalf("ended %v, want %v", b.ended.Load(), wantEnded)
		}
	}
	u := &endBody{ReadCloser: io.NopCloser(strings.NewReader("abc")), remaining: -1}
	if _, err := io.ReadAll(u); err != nil || !u.ended.Load() {
		t.Fatalf("a body of no declared length read to its end: ended %v, %v", u.ended.Load(), err)
	}
}

// Through a node: a PUT, an append and a snapshot (a tool's JSON body) from a client that
// half-closes after its body, and writes without a body (an empty file, a DELETE, a new
// workbench) from one that half-closes after its request, are applied through Raft and
// answered as usual, and the file reads back whole. Before untilBodyEnds the PUT was
// answered 500 with nothing written, the others 503 OutcomeUnknown although applied.
func TestAHalfClosingClientWritesThroughANode(t *testing.T) {
	_, base := serveNode(t, testConfig(t))
	addr := strings.TrimPrefix(base, "http://")
	wb := "/v1/agents/default/workbenches/hc"
	body := strings.Repeat("x", 200_000)
	for _, c := range []struct {
		what, raw string
		status    int
	}{
		{"PUT", fmt.Sprintf("PUT %s/files/input/a.txt HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", wb, addr, len(body), body), http.StatusCreated},
		{"append", fmt.Sprintf("POST %s/files/input/a.txt?append HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nyyy\r\n0\r\n\r\n", wb, addr), http.StatusOK},
		{"snapshot", fmt.Sprintf("POST %s/snapshots HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"ttl_days\": 1}", wb, addr), http.StatusCreated},
		// Writes without a body.
		{"PUT of an empty file", fmt.Sprintf("PUT %s/files/input/empty.txt HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n", wb, addr), http.StatusCreated},
		{"DELETE", fmt.Sprintf("DELETE %s/files/input/empty.txt HTTP/1.1\r\nHost: %s\r\n\r\n", wb, addr), http.StatusOK},
		{"PUT of a workbench", fmt.Sprintf("PUT /v1/agents/default/workbenches/hc2 HTTP/1.1\r\nHost: %s\r\n\r\n", addr), http.StatusCreated},
	} {
		resp := halfCloseRequest(t, addr, c.raw)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.status {
			t.Errorf("%s, then a half-close: %d %s, want %d", c.what, resp.StatusCode, b, c.status)
		}
	}
	resp, err := http.Get(base + wb + "/files/input/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != body+"yyy" {
		t.Fatalf("the file reads back %d bytes (%v), want the %d written and appended", len(got), err, len(body)+3)
	}
}

// A client that half-closes before it has sent the body it declared, or the end of a
// chunked one, gets 400 InvalidArguments on field "body" (as the JSON routes answer a body
// they cannot read), and nothing is written.
func TestAHalfCloseBeforeTheWholeBodyIsABadBody(t *testing.T) {
	_, base := serveNode(t, testConfig(t))
	addr := strings.TrimPrefix(base, "http://")
	wb := "/v1/agents/default/workbenches/hc"
	for _, c := range []struct{ what, path, raw string }{
		{"declared, small", "input/a.txt", "Content-Length: 100\r\n\r\nshort"},
		{"declared, past the inline size", "input/b.txt", fmt.Sprintf("Content-Length: %d\r\n\r\n%s", 1<<20, strings.Repeat("x", 100_000))},
		{"chunked", "input/c.txt", "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"},
	} {
		resp := halfCloseRequest(t, addr, fmt.Sprintf("PUT %s/files/%s HTTP/1.1\r\nHost: %s\r\n%s", wb, c.path, addr, c.raw))
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"field":"body"`) {
			t.Errorf("%s body cut off by a half-close: %d %s, want 400 on field body", c.what, resp.StatusCode, b)
		}
		r, err := http.Get(base + wb + "/files/" + c.path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("%s body cut off by a half-close: the file answers %d, want 404", c.what, r.StatusCode)
		}
	}
}
