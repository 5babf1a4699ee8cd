package host

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// faultNet is the loopback network of an in-process test cluster: every peer connection a
// node's Mux dials (its DialContext) or accepts (its listener) passes through it, so a test
// can hold a node's traffic — as a partition or a stopped process does — and count the
// commands forwarded to a node. A held connection neither reads nor writes until released
// or closed; deadlines do not end the hold (a stopped process answers nothing either).
type faultNet struct {
	mu sync.Mutex
	// changed is closed and replaced at every change of the holds.
	changed chan struct{}
	// frozen nodes hold every connection; lagging nodes hold their Raft connections.
	frozen, lagging map[int]bool
	// trap, when armed, freezes its node as it answers a forwarded command for its shard.
	trap *proposeTrap
	// forwarded counts, per node, the commands its peer API received to propose.
	forwarded map[int]int
}

// proposeTrap freezes node as it answers (200) a command forwarded to it for shard.
type proposeTrap struct {
	node  int
	shard int
}

func newFaultNet() *faultNet {
	return &faultNet{changed: make(chan struct{}), frozen: map[int]bool{}, lagging: map[int]bool{}, forwarded: map[int]int{}}
}

// set changes the holds under the lock and wakes every held connection to look again.
func (n *faultNet) set(change func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	change()
	close(n.changed)
	n.changed = make(chan struct{})
}

// releaseAll ends every hold and disarms the trap.
func (n *faultNet) releaseAll() {
	n.set(func() {
		clear(n.frozen)
		clear(n.lagging)
		n.trap = nil
	})
}

// dialer returns the DialContext of node's Mux.
func (n *faultNet) dialer(node int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return n.wrap(c, node, false), nil
	}
}

// listener returns ln with its connections passing through n as node's.
func (n *faultNet) listener(node int, ln net.Listener) net.Listener {
	return &faultListener{Listener: ln, n: n, node: node}
}

type faultListener struct {
	net.Listener
	n    *faultNet
	node int
}

func (l *faultListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.n.wrap(c, l.node, true), nil
}

func (n *faultNet) wrap(c net.Conn, node int, accepted bool) *faultConn {
	return &faultConn{Conn: c, n: n, node: node, accepted: accepted, closed: make(chan struct{})}
}

// faultConn is one end of a peer connection, node's. It learns its Mux stream from the
// stream header (written by the dialler in one write, read by the acceptor).
type faultConn struct {
	net.Conn
	n        *faultNet
	node     int
	accepted bool

	hdrMu  sync.Mutex
	hdr    []byte
	stream string

	// tail is the end of the last read of an accepted fwd connection, to find a request
	// line split across reads; pending is set when a trapped command was read and its
	// answer not yet written.
	tail    []byte
	pending atomic.Bool

	closeOnce sync.Once
	closed    chan struct{}
}

// Mux stream header: magic, version, name length, name (shard/mux).
const (
	muxMagic        = "CRNM"
	muxHeaderPrefix = len(muxMagic) + 2
)

// proposeLine starts the request line of a forwarded command (peer.go).
const proposeLine = "POST " + peerAPIPrefix + "propose/"

// streamName returns the stream the header bytes hdr name, "" while incomplete.
func streamName(hdr []byte) string {
	if len(hdr) < muxHeaderPrefix || string(hdr[:len(muxMagic)]) != muxMagic {
		return ""
	}
	end := muxHeaderPrefix + int(hdr[muxHeaderPrefix-1])
	if len(hdr) < end {
		return ""
	}
	return string(hdr[muxHeaderPrefix:end])
}

func (c *faultConn) learnStream(p []byte) {
	c.hdrMu.Lock()
	defer c.hdrMu.Unlock()
	if c.stream != "" || len(c.hdr) > muxHeaderPrefix+255 {
		return
	}
	c.hdr = append(c.hdr, p...)
	c.stream = streamName(c.hdr)
}

func (c *faultConn) streamOf() string {
	c.hdrMu.Lock()
	defer c.hdrMu.Unlock()
	return c.stream
}

// held reports whether the connection holds now, and the channel that announces the next
// change.
func (c *faultConn) held() (bool, <-chan struct{}) {
	stream := c.streamOf()
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	hold := c.n.frozen[c.node] || (c.n.lagging[c.node] && strings.HasPrefix(stream, "raft/"))
	return hold, c.n.changed
}

// wait returns once the connection is not held, or closed.
func (c *faultConn) wait() {
	for {
		hold, changed := c.held()
		if !hold {
			return
		}
		select {
		case <-changed:
		case <-c.closed:
			return
		}
	}
}

func (c *faultConn) Read(p []byte) (int, error) {
	c.wait()
	k, err := c.Conn.Read(p)
	if k > 0 && c.accepted {
		if c.streamOf() == "" {
			c.learnStream(p[:k])
		} else if c.streamOf() == "fwd" {
			c.sawRequests(p[:k])
		}
	}
	return k, err
}

// sawRequests counts the forwarded commands whose request line is in b (or across the
// previous read and b), and marks the connection when one is for the armed trap.
func (c *faultConn) sawRequests(b []byte) {
	buf := append(c.tail, b...)
	for {
		i := bytes.Index(buf, []byte(proposeLine))
		if i < 0 {
			break
		}
		buf = buf[i+len(proposeLine):]
		digits := len(buf) - len(bytes.TrimLeft(buf, "0123456789"))
		shard, err := strconv.Atoi(string(buf[:digits]))
		c.n.mu.Lock()
		c.n.forwarded[c.node]++
		if t := c.n.trap; t != nil && err == nil && t.node == c.node && t.shard == shard {
			c.pending.Store(true)
		}
		c.n.mu.Unlock()
	}
	// Keep what may be the start of a request line the next read completes.
	c.tail = append([]byte(nil), buf[max(0, len(buf)-len(proposeLine)+1):]...)
}

func (c *faultConn) Write(p []byte) (int, error) {
	if !c.accepted && c.streamOf() == "" {
		c.learnStream(p)
	}
	if c.pending.Swap(false) && bytes.HasPrefix(p, []byte("HTTP/1.1 200")) {
		c.n.set(func() {
			if t := c.n.trap; t != nil && t.node == c.node {
				c.n.frozen[c.node] = true
				c.n.trap = nil
			}
		})
	}
	c.wait()
	return c.Conn.Write(p)
}

func (c *faultConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
