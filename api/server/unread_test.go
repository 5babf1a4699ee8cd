package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAnAnswerBeforeTheBodyIsNotHeldForIt: a handler that answers without reading the
// body a client declared (a refused upload) is answered at once, whether the declared
// body is small (net/http would read up to 256 KiB of it first) or huge, and whether the
// handler wrapped the body in place (as api/s3 and api/rest do); a body read to its end
// keeps the connection.
func TestAnAnswerBeforeTheBodyIsNotHeldForIt(t *testing.T) {
	srv := httptest.NewServer(closeUnread(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = io.NopCloser(r.Body) // wrapped in place
		if r.URL.Path == "/read" {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusForbidden)
	}), time.Second))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		path     string
		declared int64
		send     string
		status   int
		close    bool
	}{
		{"/refuse", 100_000, "", http.StatusForbidden, true},
		{"/refuse", 6 << 30, "", http.StatusForbidden, true},
		{"/read", 5, "hello", http.StatusOK, false},
	} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", tc.path, tc.declared, tc.send)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("PUT %s declaring %d bytes: no answer: %v", tc.path, tc.declared, err)
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != tc.status || resp.Close != tc.close {
			t.Fatalf("PUT %s declaring %d bytes: %d, close %v; want %d, close %v (Connection: %q)", tc.path, tc.declared,
				resp.StatusCode, resp.Close, tc.status, tc.close, strings.Join(resp.Header.Values("Connection"), ","))
		}
	}
}

// TestARefusedBodyThatNeverArrivesDoesNotHoldTheConnection: after an answer sent before
// the body, net/http reads what is left of a small body (under 256 KiB) to reuse the
// connection, with no deadline: a client that declared a body and stalls would hold the
// connection forever, a slot of the node's connection caps, without a key. The node
// closes it once the answer is sent, whether the handler wrote the answer or left it to
// net/http, for a declared length and for a chunked body.
func TestARefusedBodyThatNeverArrivesDoesNotHoldTheConnection(t *testing.T) {
	srv := httptest.NewServer(closeUnread(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/silent" {
			return // net/http writes the 200 after the handler
		}
		w.WriteHeader(http.StatusUnauthorized)
	}), time.Second))
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ path, framing string }{
		{"/refuse", "Content-Length: 1000\r\n\r\nabc"},
		{"/silent", "Content-Length: 1000\r\n\r\nabc"},
		{"/refuse", "Transfer-Encoding: chunked\r\n\r\n10\r\nabc"},
	} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\n%s", tc.path, tc.framing)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("PUT %s (%q): no answer: %v", tc.path, tc.framing, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// The client never sends the rest of its body: the node must close the connection.
		if n, err := br.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("PUT %s (%q): after the %d answer the connection stays open (read %d bytes, %v), want it closed",
				tc.path, tc.framing, resp.StatusCode, n, err)
		}
	}
}

// TestAClientStillSendingItsBodyGetsTheAnswer: a handler that answers before a small
// body has arrived (a refused upload) leaves the client sending the rest of it. The node
// reads that rest before it closes, so the client's writes go through and it reads the
// answer; a connection closed with the client's bytes unread is reset by the kernel, and
// the client's next write fails with a reset or a broken pipe instead (a Go client then
// reports that error, not the answer: `cairn put input/../x` did). The client here sends
// half of its declared body, reads the answer, then sends the other half.
func TestAClientStillSendingItsBodyGetsTheAnswer(t *testing.T) {
	const size = 200 << 10 // under net/http's 256 KiB, so that it reads the rest
	half := strings.Repeat("a", size/2)
	c := dialWithin(t, refusing(t, http.StatusBadRequest, 10*time.Second), 30*time.Second)
	fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", size, half)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !resp.Close {
		t.Fatalf("answer %d, close %v; want 400 and close", resp.StatusCode, resp.Close)
	}
	if _, err := io.WriteString(c, half); err != nil {
		t.Fatalf("the rest of the body, sent after the answer: %v (the node closed with it unread)", err)
	}
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the rest of the body: read %d bytes, %v; want the node's clean close (EOF)", n, err)
	}
}

// TestAClientThatSendsALargeBodyBeforeReadingGetsTheAnswer: a client that writes its whole
// body before it reads (Python's http.client, many scripts) and whose large body the
// handler refused without reading it (413, over a limit) gets the answer: the node sends
// it, then reads and drops the rest of the body (a lingering close) before it closes.
// Closing at once with the body unread made the kernel reset the connection, and the
// client's write failed instead (a black-box tester's 16 MiB PUT). A client that sent
// "Expect: 100-continue" is not read from: it sends no body after a final answer.
func TestAClientThatSendsALargeBodyBeforeReadingGetsTheAnswer(t *testing.T) {
	const size = 32 << 20 // more than the socket buffers hold, and than net/http drains
	c := dialWithin(t, refusing(t, http.StatusRequestEntityTooLarge, 10*time.Second), 30*time.Second)
	fmt.Fprintf(c, "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)
	chunk := make([]byte, 1<<20)
	for sent := 0; sent < size; sent += len(chunk) {
		if _, err := c.Write(chunk); err != nil {
			t.Fatalf("writing the body, %d of %d bytes sent: %v (the node closed with it unread)", sent, size, err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer after the whole body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Fatalf("answer %d, close %v; want 413 and close", resp.StatusCode, resp.Close)
	}

	// A client waiting for "100 Continue" gets the final answer instead, and the node
	// closes the connection without waiting for a body that will not come (its window
	// here is an hour).
	c2 := dialWithin(t, refusing(t, http.StatusRequestEntityTooLarge, time.Hour), 10*time.Second)
	fmt.Fprintf(c2, "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", size)
	br := bufio.NewReader(c2)
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a request waiting for 100 Continue: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a request waiting for 100 Continue: %d, want the 413", resp.StatusCode)
	}
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the 413 to a request waiting for 100 Continue: read %d bytes, %v; want the node's close", n, err)
	}
}

// refusing starts a server whose handler answers status without reading the body, under
// closeUnread with the body rate window window, and returns its address.
func refusing(t *testing.T, status int, window time.Duration) string {
	srv := httptest.NewServer(closeUnread(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
	}), window))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// dialWithin connects to addr with every read and write due within d, closed when the test
// ends.
func dialWithin(t *testing.T, addr string, d time.Duration) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(d))
	return c
}
