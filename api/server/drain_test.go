package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

func startDrained(t *testing.T, h http.Handler) (*drainer, *http.Server, string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &drainer{}
	accepted := make(chan struct{}, 16)
	srv := &http.Server{Handler: d.wrap(h), ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepted <- struct{}{}
		}
	}}
	go srv.Serve(ln)
	return d, srv, ln.Addr().String(), accepted
}

// A connection that never sent a request does not make a shutdown fail (http.Server alone
// waits five seconds for it and reports the deadline).
func TestShutdownIgnoresConnectionsThatSentNothing(t *testing.T) {
	d, srv, addr, accepted := startDrained(t, http.NotFoundHandler())
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-accepted // the server holds the connection, in state new
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := d.shutdown(ctx, srv); err != nil {
		t.Fatalf("shutdown with an idle new connection: %v", err)
	}
}

// A request still running when the time is up is an error.
func TestShutdownReportsACutRequest(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	d, srv, addr, _ := startDrained(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	}))
	defer close(release)
	go http.Get("http://" + addr + "/")
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := d.shutdown(ctx, srv); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown with a request in flight: %v, want the deadline", err)
	}
}

// A change-feed stream ends when the shutdown begins (rest.Handler.EndStreams, registered
// as Serve does), so the shutdown completes instead of waiting out its deadline for a
// response that never ends.
func TestShutdownEndsChangeFeedStreams(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{})
	if _, err := n.Service.Lifecycle.CreateWorkbench(t.Context(), "a", "w", ""); err != nil {
		t.Fatal(err)
	}
	h := rest.NewHandler(n.Service, rest.Options{})
	d, srv, addr, _ := startDrained(t, h)
	srv.RegisterOnShutdown(h.EndStreams)
	resp, err := http.Get("http://" + addr + "/v1/agents/a/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.shutdown(ctx, srv); err != nil {
		t.Fatalf("shutdown with a change-feed stream open: %v", err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("the stream did not end cleanly: %v", err)
	}
}
