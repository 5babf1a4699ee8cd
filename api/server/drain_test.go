package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

func startDrained(t *testing.T, h http.Handler) (*drainer, *http.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &drainer{}
	srv := &http.Server{Handler: d.wrap(h)}
	go srv.Serve(ln)
	return d, srv, ln.Addr().String()
}

// A connection that never sent a request does not make a shutdown fail (http.Server alone
// waits five seconds for it and reports the deadline).
func TestShutdownIgnoresConnectionsThatSentNothing(t *testing.T) {
	d, srv, addr := startDrained(t, http.NotFoundHandler())
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(50 * time.Millisecond) // accepted
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
	d, srv, addr := startDrained(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
