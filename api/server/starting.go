package server

// The client listener of a cluster node before the node serves it. Open binds it before
// it joins the cluster (the registry publishes the bound address), and joining waits for
// etcd for up to clusterStartTimeout; Serve serves it once the node is assembled. In
// between, the starting server answers on it at once, so that no connection waits
// unanswered in the kernel's accept queue: a client meets either a refused connection (no
// process) or an answer.
//
//   - /healthz: 200 {"status":"ok"}, the node's own answer: the process is up.
//   - /readyz: 503 {"status":"not ready","failing":[…]} with Retry-After, as the node
//     answers while it is not ready.
//   - Any other path: 503 with Retry-After in its surface's shape: the REST envelope's
//     RoutingUnavailable (retryable; what the node answers for a root it cannot route
//     yet), MCP's JSON-RPC server error, OpenWOP's service_unavailable, working
//     documents' Unavailable.
//
// Every answer carries Connection: close (over HTTP/2, a GOAWAY), so that the client's
// next request opens a new connection, which the node's own server accepts once it
// serves. No answer reads the request's body or authenticates it: none says anything
// but "not yet".
//
// The hand-over keeps the one TCP listener open throughout. Both servers accept through
// one limitListener, so the starting server's connections count against the node's caps
// until they close. Serve ends the starting server's Accept — its wait for a connection
// slot by a stop channel, its wait in the TCP listener by a deadline in the past — waits
// until that server has stopped accepting, clears the deadline and serves: connections
// that arrive meanwhile wait in the accept queue for the node's server. The starting
// server answers the connections it accepted beside it (finish).
// A node whose Open fails closes the listener (connections are refused again).

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cairnstore/cairn/api/console"
	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/api/mcp"
	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/ops"
)

// startingMessage says why the starting server refuses a request; startingFailing is
// its /readyz entry.
const (
	startingMessage = "this node is starting: it is joining its cluster and does not serve yet; retry"
	startingFailing = "node: starting (joining the cluster), not serving yet"
)

// deadliner is the TCP listener's deadline (*net.TCPListener).
type deadliner interface{ SetDeadline(time.Time) error }

// startingServer serves a cluster node's client listener until Serve takes it over.
type startingServer struct {
	tcp  deadliner
	ln   *handoverListener
	srv  *http.Server
	done chan struct{} // closed when srv's Serve has returned
	// conns counts srv's open connections (its ConnState hook). Serve adds each before it
	// accepts the next, so once done is closed no Add follows.
	conns sync.WaitGroup
}

// serveStarting starts serving capped, the client listener with its caps, whose TCP
// listener is tcp; tc is the node's TLS (nil: plain HTTP), node its id.
func serveStarting(capped *perClientListener, tcp deadliner, cfg ops.Config, tc *tls.Config, node string, log *slog.Logger) *startingServer {
	s := &startingServer{tcp: tcp, ln: &handoverListener{caps: capped, stop: make(chan struct{})}, done: make(chan struct{})}
	s.srv = newHTTPServer(cfg, tc, startingHandler(node), log)
	s.srv.SetKeepAlivesEnabled(false)
	s.srv.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.conns.Done()
		}
	}
	go func() {
		defer close(s.done)
		_ = serveCapped(s.srv, s.ln)
	}()
	return s
}

// stopAccepting makes the starting server accept no further connection and returns once
// it has stopped, the listener open and without a deadline. Its connections stay open.
func (s *startingServer) stopAccepting() {
	s.ln.once.Do(func() { close(s.ln.stop) }) // ends an Accept waiting for a connection slot
	_ = s.tcp.SetDeadline(time.Now())         // and one waiting in the TCP listener
	<-s.done
	_ = s.tcp.SetDeadline(time.Time{})
}

// finish waits, within ctx, until every connection the starting server accepted has
// closed, then closes those that remain. It does not shut the server down: net/http drops
// unanswered a request it reads after Shutdown began, and a client whose connection was
// accepted just before the hand-over may not have sent its request yet. Every connection
// ends by itself: after its one answer (Connection: close), or at the read-header
// timeout.
func (s *startingServer) finish(ctx context.Context) {
	closed := make(chan struct{})
	go func() { s.conns.Wait(); close(closed) }()
	select {
	case <-closed:
	case <-ctx.Done():
		s.srv.Close()
	}
}

// close stops the starting server and closes its connections; the listener is closed by
// its owner.
func (s *startingServer) close() {
	s.stopAccepting()
	s.srv.Close() // after its Serve returned: net/http's Close waits for that
}

// handoverListener is the starting server's view of the client listener: its Close
// leaves the listener open (net/http closes the listener a Serve returns from), and once
// stopped its Accept answers net.ErrClosed, which ends the Serve (a deadline's error
// would not: net/http retries a temporary one).
type handoverListener struct {
	caps *perClientListener
	stop chan struct{}
	once sync.Once
}

func (l *handoverListener) Accept() (net.Conn, error) {
	c, err := l.caps.accept(l.stop)
	if err != nil {
		select {
		case <-l.stop:
			return nil, net.ErrClosed
		default:
		}
	}
	return c, err // a connection accepted as the hand-over began is answered here
}

func (l *handoverListener) Close() error   { return nil }
func (l *handoverListener) Addr() net.Addr { return l.caps.Addr() }

// startingHandler answers every request at once (the file's comment); node is the
// node's id, named in ServedByHeader of an answer for an agent root as the node's own
// RoutingUnavailable answers name it.
func startingHandler(node string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		path := r.URL.EscapedPath()
		if console.Owns(path) {
			console.SetHeaders(w.Header()) // as on the node's own refusals of a console path (guard.go)
		}
		switch {
		case path == "/healthz":
			rest.WriteJSON(w, http.StatusOK, map[string]any{"status": "ok"})
		case path == "/readyz":
			w.Header().Set("Retry-After", "1")
			rest.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "failing": []string{startingFailing}})
		case documents.Owns(path):
			documents.WriteError(w, &documents.Error{Status: http.StatusServiceUnavailable, Code: documents.CodeUnavailable, Message: startingMessage})
		case openwop.Owns(path):
			openwop.WriteError(w, &openwop.Error{Status: http.StatusServiceUnavailable, Code: openwop.CodeUnavailable, Message: startingMessage})
		case mcpPath(path):
			w.Header().Set(ServedByHeader, node)
			mcp.WriteUnavailable(w, startingMessage)
		default:
			if _, ok := agentOf(r); ok {
				w.Header().Set(ServedByHeader, node)
			}
			writeNotOwner(w, startingMessage, "")
		}
	})
}

// mcpPath reports whether escaped is one of the MCP endpoints' paths (api/rest route):
// /mcp, /v1/agents/{agent}/mcp and /v1/agents/{agent}/mcp/cairn.
func mcpPath(escaped string) bool {
	if escaped == "/mcp" {
		return true
	}
	rest, ok := strings.CutPrefix(escaped, "/v1/agents/")
	if !ok {
		return false
	}
	segs := strings.Split(rest, "/")
	return segs[0] != "" && (len(segs) == 2 && segs[1] == "mcp" || len(segs) == 3 && segs[1] == "mcp" && segs[2] == "cairn")
}
