package mux

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Wire constants (see the package documentation).
const (
	magic         = "CRNM"
	protoVersion  = 1
	headerPrefix  = len(magic) + 2 // magic, version, name length
	ackAccepted   = 'k'
	ackUnknown    = 'u'
	ackBadVersion = 'v'
)

// Bounds.
const (
	// MaxStreamNameBytes is the longest stream name.
	MaxStreamNameBytes = 64
	// acceptBacklog is how many connections a stream holds that its owner has not accepted
	// yet; beyond it new connections for the stream are refused.
	acceptBacklog = 64
	// maxPendingHandshakes bounds the inbound connections in their TLS/header phase.
	maxPendingHandshakes = 256
)

// StreamForward is the stream reserved for request forwarding between nodes.
const StreamForward = "fwd"

// Errors.
var (
	// ErrClosed: the Mux or the stream listener is closed. It wraps net.ErrClosed, so
	// http.Server and raft's transport treat it as an orderly shutdown.
	ErrClosed = fmt.Errorf("mux: %w", net.ErrClosed)
	// ErrUnknownStream: the remote node has no listener for the stream (yet, or any more).
	ErrUnknownStream = errors.New("mux: the remote node does not serve this stream")
	// ErrStreamInUse: a listener for the stream is already registered on this Mux.
	ErrStreamInUse = errors.New("mux: stream already has a listener")
	// ErrInvalidStream: a stream name is empty, longer than MaxStreamNameBytes or uses a
	// byte outside [A-Za-z0-9._/-].
	ErrInvalidStream = errors.New("mux: invalid stream name")
	// ErrProtocol: the remote end answered something that is not this protocol.
	ErrProtocol = errors.New("mux: protocol error")
)

// Config configures a Mux. The zero value is plain TCP with the defaults below.
type Config struct {
	// Advertise is the "host:port" peers dial to reach this Mux. Addr of every stream
	// listener returns it, so Raft announces it as the replica's address. Default: the
	// listener's own address (fine for a concrete bind address, wrong for 0.0.0.0).
	Advertise string
	// HeaderTimeout bounds the TLS handshake and header of an inbound connection, and the
	// dial, handshake and answer of an outbound one when the caller's context has no
	// deadline. Default 5s.
	HeaderTimeout time.Duration
	// TLS turns on mutual TLS for every connection, inbound and outbound. The same config
	// serves both roles: Certificates is this node's certificate (presented as server and
	// as client), ClientCAs verifies dialers and RootCAs verifies the node dialled. ClientAuth
	// must be tls.RequireAndVerifyClientCert: a peer port never accepts an anonymous peer.
	// When ServerName is empty the dialer verifies the host part of the dialled address.
	// LoadTLS builds such a config from PEM files. Nil: plain TCP.
	TLS *tls.Config
	// DialContext opens outbound TCP connections. Default: a net.Dialer. Tests inject
	// faults here.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives refused connections (debug) and accept errors (warn). Default:
	// slog.Default().
	Logger *slog.Logger
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.HeaderTimeout < 0 {
		return fmt.Errorf("mux: HeaderTimeout %v is negative", c.HeaderTimeout)
	}
	if c.Advertise != "" {
		if _, _, err := net.SplitHostPort(c.Advertise); err != nil {
			return fmt.Errorf("mux: Advertise %q is not host:port: %w", c.Advertise, err)
		}
	}
	if t := c.TLS; t != nil {
		if len(t.Certificates) == 0 && t.GetCertificate == nil {
			return errors.New("mux: TLS needs this node's certificate (Certificates)")
		}
		if t.ClientAuth != tls.RequireAndVerifyClientCert {
			return errors.New("mux: TLS must require and verify client certificates (ClientAuth = RequireAndVerifyClientCert)")
		}
		if t.ClientCAs == nil {
			return errors.New("mux: TLS needs the CAs that sign peer certificates (ClientCAs)")
		}
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.HeaderTimeout == 0 {
		c.HeaderTimeout = 5 * time.Second
	}
	if c.DialContext == nil {
		c.DialContext = (&net.Dialer{}).DialContext
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Traffic returns the payload bytes (after the stream header, before TLS) sent and
// received on each stream's connections since the Mux started, dialled and accepted
// alike: how much of a node's peer traffic is Raft and how much forwarded requests.
func (m *Mux) Traffic() map[string]StreamTraffic {
	out := map[string]StreamTraffic{}
	m.traffic.Range(func(k, v any) bool {
		t := v.(*streamTraffic)
		out[k.(string)] = StreamTraffic{Sent: t.sent.Load(), Received: t.received.Load()}
		return true
	})
	return out
}

// StreamTraffic is the byte count of one stream's connections.
type StreamTraffic struct{ Sent, Received uint64 }

type streamTraffic struct{ sent, received atomic.Uint64 }

// count wraps c so that its bytes count towards stream's traffic.
func (m *Mux) count(c net.Conn, stream string) net.Conn {
	v, _ := m.traffic.LoadOrStore(stream, &streamTraffic{})
	return &countedConn{Conn: c, t: v.(*streamTraffic)}
}

type countedConn struct {
	net.Conn
	t *streamTraffic
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.t.received.Add(uint64(n))
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.t.sent.Add(uint64(n))
	return n, err
}

// Stats counts inbound connections by outcome since the Mux started.
type Stats struct {
	// Accepted connections were handed to a stream listener.
	Accepted uint64
	// UnknownStream connections named a stream with no listener; they were told so and
	// closed.
	UnknownStream uint64
	// BadHeader connections failed the TLS handshake or sent a malformed header or an
	// unsupported version.
	BadHeader uint64
	// HeaderTimeout connections did not complete handshake and header in HeaderTimeout.
	HeaderTimeout uint64
	// Overload connections were closed because too many were in their header phase or
	// the stream's backlog was full.
	Overload uint64
}

// Mux accepts the connections of one TCP listener and routes them by stream name. It also
// dials other nodes' Muxes. Safe for concurrent use.
type Mux struct {
	cfg  Config
	ln   net.Listener
	addr net.Addr

	mu      sync.Mutex
	closed  bool
	streams map[string]*Listener
	pending map[net.Conn]struct{}
	done    chan struct{}
	wg      sync.WaitGroup

	accepted, unknown, badHeader, timeouts, overload atomic.Uint64
	// traffic counts the bytes of every connection by stream (streamTraffic).
	traffic sync.Map // stream name → *streamTraffic
}

// Listen listens on addr ("host:port"; port 0 picks a free one) and serves it.
func Listen(addr string, cfg Config) (*Mux, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mux: %w", err)
	}
	m, err := New(ln, cfg)
	if err != nil {
		ln.Close()
	}
	return m, err
}

// New serves ln, which the Mux owns from now on (Close closes it). TLS, when configured,
// is layered by the Mux; ln must be a plain listener.
func New(ln net.Listener, cfg Config) (*Mux, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	var addr net.Addr = ln.Addr()
	if cfg.Advertise != "" {
		addr = advertised(cfg.Advertise)
	}
	m := &Mux{cfg: cfg, ln: ln, addr: addr, streams: map[string]*Listener{}, pending: map[net.Conn]struct{}{}, done: make(chan struct{})}
	m.wg.Add(1)
	go m.acceptLoop()
	return m, nil
}

// Addr returns the address peers dial: Config.Advertise, or the listener's address.
func (m *Mux) Addr() net.Addr { return m.addr }

// Stats returns the inbound connection counters.
func (m *Mux) Stats() Stats {
	return Stats{Accepted: m.accepted.Load(), UnknownStream: m.unknown.Load(), BadHeader: m.badHeader.Load(),
		HeaderTimeout: m.timeouts.Load(), Overload: m.overload.Load()}
}

// Listener registers stream and returns the listener its connections arrive on, e.g. for
// an http.Server. Closing the listener unregisters the stream (later dials get
// ErrUnknownStream) but leaves connections it already returned open. Errors:
// ErrInvalidStream, ErrStreamInUse, ErrClosed.
func (m *Mux) Listener(stream string) (*Listener, error) {
	if err := checkStream(stream); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if _, ok := m.streams[stream]; ok {
		return nil, fmt.Errorf("%w: %q", ErrStreamInUse, stream)
	}
	l := &Listener{m: m, stream: stream, ch: make(chan net.Conn, acceptBacklog), done: make(chan struct{})}
	m.streams[stream] = l
	return l, nil
}

// Dial opens a connection to stream on the Mux at addr and returns it once the remote
// accepted the header. Without a deadline on ctx, HeaderTimeout bounds the whole setup.
// Errors: ErrInvalidStream, ErrClosed (this Mux is closed), ErrUnknownStream, ErrProtocol,
// or the dial, TLS or I/O error.
func (m *Mux) Dial(ctx context.Context, addr, stream string) (net.Conn, error) {
	if err := checkStream(stream); err != nil {
		return nil, err
	}
	select {
	case <-m.done:
		return nil, ErrClosed
	default:
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.cfg.HeaderTimeout)
		defer cancel()
	}
	c, err := m.dial(ctx, addr, stream)
	if err != nil {
		return nil, fmt.Errorf("mux: dial %s stream %q: %w", addr, stream, err)
	}
	return m.count(c, stream), nil
}

func (m *Mux) dial(ctx context.Context, addr, stream string) (net.Conn, error) {
	raw, err := m.cfg.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	dl, _ := ctx.Deadline()
	raw.SetDeadline(dl)
	// Cancellation interrupts a blocked handshake or read by moving the deadline.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	c, err := m.clientHandshake(ctx, raw, addr, stream)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		raw.Close()
		ctxErr := ctx.Err()
		if ctxErr == nil && isTimeout(err) && !time.Now().Before(dl) {
			ctxErr = context.DeadlineExceeded // the connection's deadline beat the context's timer
		}
		if ctxErr != nil {
			return nil, fmt.Errorf("%w (%v)", ctxErr, err)
		}
		return nil, err
	}
	raw.SetDeadline(time.Time{})
	return c, nil
}

func (m *Mux) clientHandshake(ctx context.Context, raw net.Conn, addr, stream string) (net.Conn, error) {
	c := raw
	if m.cfg.TLS != nil {
		cfg := m.cfg.TLS
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, err
		}
		c = tc
	}
	hdr := make([]byte, 0, headerPrefix+len(stream))
	hdr = append(hdr, magic...)
	hdr = append(hdr, protoVersion, byte(len(stream)))
	hdr = append(hdr, stream...)
	if _, err := c.Write(hdr); err != nil {
		return nil, err
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		// A peer that refused our certificate or found the header bad closes here.
		return nil, err
	}
	switch ack[0] {
	case ackAccepted:
		return c, nil
	case ackUnknown:
		return nil, ErrUnknownStream
	case ackBadVersion:
		return nil, fmt.Errorf("%w: remote does not speak version %d", ErrProtocol, protoVersion)
	}
	return nil, fmt.Errorf("%w: unexpected answer %q", ErrProtocol, ack[0])
}

// Close stops accepting, closes the listener of every stream and every connection still
// in its header phase, and waits for the Mux's goroutines. Connections already handed to
// streams stay open. Idempotent.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.done)
	err := m.ln.Close()
	streams := make([]*Listener, 0, len(m.streams))
	for _, l := range m.streams {
		streams = append(streams, l)
	}
	for c := range m.pending {
		c.Close()
	}
	m.mu.Unlock()
	for _, l := range streams {
		l.Close()
	}
	m.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: back off instead of spinning.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.cfg.Logger.Warn("mux: accept failed", "err", err, "retry_in", delay)
			select {
			case <-m.done:
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		m.mu.Lock()
		if m.closed || len(m.pending) >= maxPendingHandshakes {
			closed := m.closed
			m.mu.Unlock()
			c.Close()
			if !closed {
				m.overload.Add(1)
			}
			continue
		}
		m.pending[c] = struct{}{}
		m.wg.Add(1)
		m.mu.Unlock()
		go m.serveConn(c)
	}
}

// serveConn runs the header phase of one inbound connection.
func (m *Mux) serveConn(raw net.Conn) {
	defer m.wg.Done()
	l, c, err := m.serverHandshake(raw)
	m.mu.Lock()
	delete(m.pending, raw)
	m.mu.Unlock()
	if err == nil && !l.deliver(m.count(c, l.stream)) {
		m.overload.Add(1)
		err = errors.New("stream backlog full or closed")
	}
	if err != nil {
		raw.Close()
		m.cfg.Logger.Debug("mux: refused connection", "remote", raw.RemoteAddr().String(), "err", err)
	}
}

func (m *Mux) serverHandshake(raw net.Conn) (*Listener, net.Conn, error) {
	raw.SetDeadline(time.Now().Add(m.cfg.HeaderTimeout))
	c := raw
	if m.cfg.TLS != nil {
		tc := tls.Server(raw, m.cfg.TLS)
		if err := tc.Handshake(); err != nil {
			m.countReadError(err)
			return nil, nil, fmt.Errorf("tls: %w", err)
		}
		c = tc
	}
	var hdr [headerPrefix]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		m.countReadError(err)
		return nil, nil, err
	}
	if string(hdr[:len(magic)]) != magic {
		m.badHeader.Add(1)
		return nil, nil, fmt.Errorf("%w: bad magic %q", ErrProtocol, hdr[:len(magic)])
	}
	// Read the whole header before answering, so that a refusal is not lost to a reset
	// caused by unread bytes.
	name := make([]byte, hdr[len(magic)+1])
	if _, err := io.ReadFull(c, name); err != nil {
		m.countReadError(err)
		return nil, nil, err
	}
	if hdr[len(magic)] != protoVersion {
		m.badHeader.Add(1)
		c.Write([]byte{ackBadVersion})
		return nil, nil, fmt.Errorf("%w: version %d", ErrProtocol, hdr[len(magic)])
	}
	if err := checkStream(string(name)); err != nil {
		m.badHeader.Add(1)
		return nil, nil, err
	}
	m.mu.Lock()
	l := m.streams[string(name)]
	m.mu.Unlock()
	if l == nil {
		m.unknown.Add(1)
		c.Write([]byte{ackUnknown})
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownStream, name)
	}
	if _, err := c.Write([]byte{ackAccepted}); err != nil {
		m.countReadError(err)
		return nil, nil, err
	}
	raw.SetDeadline(time.Time{})
	return l, c, nil
}

func (m *Mux) countReadError(err error) {
	if isTimeout(err) {
		m.timeouts.Add(1)
		return
	}
	m.badHeader.Add(1)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func checkStream(s string) error {
	if len(s) == 0 || len(s) > MaxStreamNameBytes {
		return fmt.Errorf("%w: %q must be 1 to %d bytes", ErrInvalidStream, s, MaxStreamNameBytes)
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '/' || b == '-') {
			return fmt.Errorf("%w: %q has byte %q (allowed: A-Z a-z 0-9 . _ / -)", ErrInvalidStream, s, b)
		}
	}
	return nil
}

// Listener is the net.Listener of one stream.
type Listener struct {
	m      *Mux
	stream string
	ch     chan net.Conn
	done   chan struct{}

	mu     sync.Mutex
	closed bool
}

// Accept returns the next connection dialled to the stream. ErrClosed after Close (of the
// listener or the Mux).
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, ErrClosed
	default:
	}
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, ErrClosed
	}
}

// Close unregisters the stream and closes connections not accepted yet. Idempotent.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	for len(l.ch) > 0 { // only deliver sends, and it holds l.mu
		(<-l.ch).Close()
	}
	l.mu.Unlock()
	l.m.mu.Lock()
	if l.m.streams[l.stream] == l {
		delete(l.m.streams, l.stream)
	}
	l.m.mu.Unlock()
	return nil
}

// Addr returns the Mux's advertised address.
func (l *Listener) Addr() net.Addr { return l.m.addr }

// Stream returns the stream name.
func (l *Listener) Stream() string { return l.stream }

// deliver queues c for Accept; false when the listener is closed or its backlog is full.
func (l *Listener) deliver(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(l.ch) == cap(l.ch) {
		return false
	}
	// Count before the owner can see it; the send cannot block: only deliver sends, under
	// l.mu, and there is room.
	l.m.accepted.Add(1)
	l.ch <- c
	return true
}

// advertised is a net.Addr for a configured "host:port".
type advertised string

func (a advertised) Network() string { return "tcp" }
func (a advertised) String() string  { return string(a) }
