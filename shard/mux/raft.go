package mux

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// StreamLayer is a raft.StreamLayer over one stream of a Mux: a raft.NetworkTransport
// built on it accepts and dials only that stream.
//
// Unlike a plain Listener, Close also closes every connection the layer accepted or
// dialled: raft's NetworkTransport does not close its pooled outbound connections or its
// inbound handlers on shutdown, and a replica that stops must leave neither goroutines nor
// half-open peers behind.
type StreamLayer struct {
	*Listener

	mu     sync.Mutex
	closed bool
	conns  map[*trackedConn]struct{}
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
	return s.track(c)
}

// Dial opens a connection to the same stream on the Mux at address.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := s.m.Dial(ctx, string(address), s.stream)
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

// Close unregisters the stream and closes every connection the layer accepted or dialled.
func (s *StreamLayer) Close() error {
	err := s.Listener.Close()
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
	return err
}

func (s *StreamLayer) track(c net.Conn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return nil, ErrClosed
	}
	tc := &trackedConn{Conn: c, s: s}
	s.conns[tc] = struct{}{}
	return tc, nil
}

// trackedConn forgets itself in its layer when closed.
type trackedConn struct {
	net.Conn
	s    *StreamLayer
	once sync.Once
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
