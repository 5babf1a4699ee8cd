package mux

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// StreamLayer is a raft.StreamLayer over one stream of a Mux: a raft.NetworkTransport
// built on it accepts and dials only that stream.
//
// Unlike a plain Listener, Close also closes every connection the layer accepted or
// dialled: raft's NetworkTransport does not close its pooled outbound connections or its
// inbound handlers on shutdown, and a replica that stops must leave neither goroutines nor
// half-open peers behind. A Read blocked on an accepted connection when Close closes it
// ends with io.EOF, not net.ErrClosed: the stream ended because its owner stopped, and
// raft's inbound handler takes EOF as the end of a stream where it logs any other read
// error at error level (one "failed to decode incoming command … use of closed network
// connection" per accepted connection per replica at every shutdown otherwise).
type StreamLayer struct {
	*Listener

	mu      sync.Mutex
	closed  bool
	closing atomic.Bool // set before Close closes the connections; read without mu
	conns   map[*trackedConn]struct{}
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// StreamLayer registers stream (see Listener) for a Raft transport.
func (m *Mux) StreamLayer(stream string) (*StreamLayer, error) {
	l, err := m.Listener(stream)
	if err != nil {
		return nil, err
	}
	return &StreamLayer{Listener: l, conns: map[*trackedConn]struct{}{}}, nil
}

// Accept returns the next inbound Raft connection.
func (s *StreamLayer) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return s.track(c, true)
}

// Dial opens a connection to the same stream on the Mux at address.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := s.m.Dial(ctx, string(address), s.stream)
	if err != nil {
		return nil, err
	}
	return s.track(c, false)
}

// Close unregisters the stream and closes every connection the layer accepted or dialled.
func (s *StreamLayer) Close() error {
	err := s.Listener.Close()
	s.mu.Lock()
	s.closed = true
	s.closing.Store(true)
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
	return err
}

func (s *StreamLayer) track(c net.Conn, accepted bool) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return nil, ErrClosed
	}
	tc := &trackedConn{Conn: c, s: s, accepted: accepted}
	s.conns[tc] = struct{}{}
	return tc, nil
}

// trackedConn forgets itself in its layer when closed.
type trackedConn struct {
	net.Conn
	s        *StreamLayer
	accepted bool
	once     sync.Once
}

// Read reports the end of an accepted connection as io.EOF when the layer's Close closed
// it, and when the peer reset it. A peer that stops closes the connections it dialled; the
// kernel answers a close with unread data in the socket (replies the stopping peer had not
// read yet, frequent on a loaded machine) with a reset instead of an orderly end, and that
// is the end of the stream all the same, not a command that failed to decode.
func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	switch {
	case err == nil || !c.accepted:
	case c.s.closing.Load() && errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET):
		err = io.EOF
	}
	return n, err
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return err
}
