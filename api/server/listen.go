package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/cairnstore/cairn/ops"
)

// newHTTPServer returns the http.Server of a client listener with the node's deadlines:
// read-header and idle timeouts here; the request body's minimum rate and the per-write
// deadline of responses are the handler's (rest.Options), since http.Server's
// ReadTimeout and WriteTimeout would bound a whole upload or download instead of its
// progress.
//
// tc, when non-nil, is the listener's TLS (serverTLS), copied: net/http adds its HTTP/2
// protocol to the server's configuration in place. The TLS handshake is bounded by the
// read-header timeout (net/http).
func newHTTPServer(cfg ops.Config, tc *tls.Config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: closeUnread(h, cfg.BodyRateWindow), ReadHeaderTimeout: cfg.ReadHeaderTimeout, IdleTimeout: cfg.IdleTimeout,
		TLSConfig: tc.Clone(), ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// serveOn serves srv on ln behind the connection caps, over TLS when srv has a TLS
// configuration (HTTP/2 offered, as net/http does for TLS), else plain HTTP.
func serveOn(srv *http.Server, ln net.Listener, cfg ops.Config) error {
	return serveCapped(srv, limitListener(ln, cfg))
}

// serveCapped is serveOn on a listener that already has its caps (limitListener): a
// cluster node's client listener, whose caps the starting server and the node's own share
// (starting.go).
func serveCapped(srv *http.Server, ln net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(ln, "", "") // the certificate comes from TLSConfig.GetCertificate
	}
	return srv.Serve(ln)
}

// limitListener caps the connections of ln: at most cfg.MaxConnections open at once
// (further ones wait in the kernel's accept queue, holding no descriptor of ours), and at
// most cfg.MaxConnectionsPerClient from one IP address (further ones are closed at once).
// It does what x/net/netutil.LimitListener does for the first cap in the same wrapper as
// the second, so that one wrapper (clientConn) sits between net/http and the TCP
// connection and passes its ReadFrom on: a response body copied from a file (the
// segment cache) goes out by sendfile.
func limitListener(ln net.Listener, cfg ops.Config) *perClientListener {
	return &perClientListener{Listener: ln, max: cfg.MaxConnectionsPerClient, open: map[string]int{},
		slots: make(chan struct{}, cfg.MaxConnections), done: make(chan struct{})}
}

// perClientListener holds one of slots per open connection, and closes a newly accepted
// connection when its client address already holds max open connections.
type perClientListener struct {
	net.Listener
	max   int
	slots chan struct{}
	done  chan struct{} // closed by Close: Accept stops waiting for a slot
	once  sync.Once
	mu    sync.Mutex
	open  map[string]int // client IP → open connections
}

func (l *perClientListener) Accept() (net.Conn, error) { return l.accept(nil) }

// accept is Accept that also stops waiting for a slot, with net.ErrClosed, once stop is
// closed (the starting server's hand-over: starting.go).
func (l *perClientListener) accept(stop <-chan struct{}) (net.Conn, error) {
	for {
		select {
		case <-stop:
			return nil, net.ErrClosed
		default:
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		case <-stop:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		ip := clientIP(c.RemoteAddr())
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			c.Close()
			<-l.slots
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &clientConn{Conn: c, l: l, ip: ip}, nil
	}
}

// Close stops Accept, waiting or not, and closes the listener.
func (l *perClientListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func clientIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// clientConn gives its address's count and its listener slot back once, on the first
// Close.
type clientConn struct {
	net.Conn
	l    *perClientListener
	ip   string
	once sync.Once
}

func (c *clientConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.open[c.ip]--; c.l.open[c.ip] <= 0 {
			delete(c.l.open, c.ip)
		}
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
}

// ReadFrom passes net/http's copy of a response body on to the TCP connection, which
// sends a file (or an io.LimitedReader of one) with sendfile.
func (c *clientConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// sideServer serves a listener beside the client one: the admin listener (the admin
// routes, rest.Handler.Admin, behind the same guard and deadlines as the client
// listener, on cfg.AdminAddress()) or the S3 gateway's (cfg.S3Gateway.Listen).
type sideServer struct {
	ln  net.Listener
	srv *http.Server
	d   drainer
}

// listenAdmin binds cfg's admin address; tc is the node's TLS (nil: plain HTTP).
func listenAdmin(cfg ops.Config, tc *tls.Config, advertise string, h http.Handler, log *slog.Logger) (*sideServer, error) {
	return listenSide("admin", cfg.AdminAddress(), cfg, tc, newGuard(cfg, advertise, h), log)
}

// listenS3 binds the S3 gateway's address. No Host/Origin guard: S3 clients are no
// browsers, name the endpoint they were given as Host, and sign every request.
func listenS3(cfg ops.Config, tc *tls.Config, h http.Handler, log *slog.Logger) (*sideServer, error) {
	return listenSide("s3", cfg.S3Gateway.Listen, cfg, tc, h, log)
}

func listenSide(name, addr string, cfg ops.Config, tc *tls.Config, h http.Handler, log *slog.Logger) (*sideServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listen %s: %w", name, addr, err)
	}
	a := &sideServer{ln: ln}
	a.srv = newHTTPServer(cfg, tc, a.d.wrap(h), log)
	go func() { _ = serveOn(a.srv, ln, cfg) }()
	return a, nil
}

// Addr is the bound address.
func (a *sideServer) Addr() net.Addr { return a.ln.Addr() }

// shutdown drains the listener within ctx (nothing for a nil server).
func (a *sideServer) shutdown(ctx context.Context) error {
	if a == nil {
		return nil
	}
	return a.d.shutdown(ctx, a.srv)
}
