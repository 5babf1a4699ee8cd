package integration

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/freeport"
)

// faultNet is a fault-injecting TCP network between the peer ports of cluster nodes.
// Node i listens for peers on its own loopback address (peerIP(i)), dials out from it
// (--peer-source), and advertises a proxy address instead of its own: every connection
// to node i goes through proxy i, which tells the dialling node by the connection's
// source address. Cut(i, j) stops traffic from node i to node j: open connections from
// i to j are closed, and new ones are accepted and then black-holed (read and discarded,
// never forwarded, never answered) until Heal, so a dialer meets timeouts rather than
// refusals, as across a real partition. Raft answers travel back on the connection that
// carried the request, so Isolate (both directions) is what separates a node.
type faultNet struct {
	t       testing.TB
	mu      sync.Mutex
	proxies []*faultProxy
	cut     map[[2]int]bool
	conns   map[*faultConn]struct{}
}

// faultProxy forwards the connections to one node's peer port.
type faultProxy struct {
	n      *faultNet
	to     int
	ln     net.Listener
	target string // the node's real peer address
}

// faultConn is one proxied (or black-holed) connection from node `from` to node `to`.
type faultConn struct {
	from, to     int
	in, out      net.Conn // out is nil for a black-holed connection
	closeOnce    sync.Once
	blackholed   bool
	closedSignal chan struct{}
}

func (c *faultConn) close() {
	c.closeOnce.Do(func() {
		c.in.Close()
		if c.out != nil {
			c.out.Close()
		}
		close(c.closedSignal)
	})
}

// peerIP is node i's own loopback address: the one it listens on and dials from.
func peerIP(i int) string { return "127.0.0." + strconv.Itoa(11+i) }

// newFaultNet starts one proxy per node on 127.0.0.1. Each node's real peer address is
// set with setTarget before the node starts.
func newFaultNet(t testing.TB, nodes int) *faultNet {
	n := &faultNet{t: t, cut: map[[2]int]bool{}, conns: map[*faultConn]struct{}{}}
	for i := range nodes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		n.proxies = append(n.proxies, &faultProxy{n: n, to: i, ln: ln})
	}
	for _, p := range n.proxies { // n.proxies is read-only from here on
		go p.serve()
	}
	t.Cleanup(n.close)
	return n
}

// addr is the address node i advertises to its peers (its proxy).
func (n *faultNet) addr(i int) string { return n.proxies[i].ln.Addr().String() }

// freePeerAddr returns a free port on node i's own loopback address and makes it the
// target of node i's proxy. Pass it to the node as --peer-listen; keep it across restarts.
func (n *faultNet) freePeerAddr(i int) string {
	addr := freeport.AddrOn(n.t, peerIP(i))
	n.mu.Lock()
	n.proxies[i].target = addr
	n.mu.Unlock()
	return addr
}

// nodeOf returns the node whose loopback address addr comes from, or -1.
func (n *faultNet) nodeOf(addr net.Addr) int {
	host, _, _ := net.SplitHostPort(addr.String())
	for i := range n.proxies {
		if host == peerIP(i) {
			return i
		}
	}
	return -1
}

// Cut stops traffic from node `from` to node `to` until Heal.
func (n *faultNet) Cut(from, to int) {
	n.mu.Lock()
	n.cut[[2]int{from, to}] = true
	var doomed []*faultConn
	for c := range n.conns {
		if c.from == from && c.to == to && !c.blackholed {
			doomed = append(doomed, c)
		}
	}
	n.mu.Unlock()
	for _, c := range doomed {
		c.close()
	}
}

// Isolate cuts node i off from every other node, both directions.
func (n *faultNet) Isolate(i int) {
	for j := range n.proxies {
		if j != i {
			n.Cut(i, j)
			n.Cut(j, i)
		}
	}
}

// Heal restores every link; black-holed connections are closed so their dialers retry.
func (n *faultNet) Heal() {
	n.mu.Lock()
	n.cut = map[[2]int]bool{}
	var held []*faultConn
	for c := range n.conns {
		if c.blackholed {
			held = append(held, c)
		}
	}
	n.mu.Unlock()
	for _, c := range held {
		c.close()
	}
}

func (n *faultNet) close() {
	n.mu.Lock()
	var all []*faultConn
	for c := range n.conns {
		all = append(all, c)
	}
	n.mu.Unlock()
	for _, p := range n.proxies {
		p.ln.Close()
	}
	for _, c := range all {
		c.close()
	}
}

func (n *faultNet) track(c *faultConn) {
	n.mu.Lock()
	n.conns[c] = struct{}{}
	n.mu.Unlock()
	go func() {
		<-c.closedSignal
		n.mu.Lock()
		delete(n.conns, c)
		n.mu.Unlock()
	}()
}

func (p *faultProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(in)
	}
}

func (p *faultProxy) handle(in net.Conn) {
	n := p.n
	from := n.nodeOf(in.RemoteAddr())
	n.mu.Lock()
	cut, target := n.cut[[2]int{from, p.to}], p.target
	n.mu.Unlock()
	c := &faultConn{from: from, to: p.to, in: in, closedSignal: make(chan struct{})}
	if cut || target == "" {
		c.blackholed = true
		n.track(c)
		go func() { io.Copy(io.Discard, in); c.close() }()
		return
	}
	out, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		in.Close() // the node is down: a refusal, as its own port would answer
		return
	}
	c.out = out
	n.track(c)
	// A Cut between the check above and track would leave this connection open: check again.
	n.mu.Lock()
	cut = n.cut[[2]int{from, p.to}]
	n.mu.Unlock()
	if cut {
		c.close()
		return
	}
	go func() { io.Copy(out, in); c.close() }()
	go func() { io.Copy(in, out); c.close() }()
}

// gateProxy forwards TCP connections to one target (a node's etcd endpoint) until Block:
// then open connections are closed and new ones are accepted and black-holed, as across a
// partition, until Unblock.
type gateProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	blocked bool
	conns   map[net.Conn]struct{}
}

// newGateProxy starts a proxy on 127.0.0.1 forwarding to target.
func newGateProxy(t testing.TB, target string) *gateProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gateProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go g.serve()
	t.Cleanup(func() {
		ln.Close()
		g.closeAll()
	})
	return g
}

// addr is the address to dial instead of the target.
func (g *gateProxy) addr() string { return g.ln.Addr().String() }

// Block cuts every connection through the proxy until Unblock.
func (g *gateProxy) Block() {
	g.mu.Lock()
	g.blocked = true
	g.mu.Unlock()
	g.closeAll()
}

// Unblock lets connections through again; black-holed ones are closed so dialers retry.
func (g *gateProxy) Unblock() {
	g.mu.Lock()
	g.blocked = false
	g.mu.Unlock()
	g.closeAll()
}

func (g *gateProxy) closeAll() {
	g.mu.Lock()
	conns := g.conns
	g.conns = map[net.Conn]struct{}{}
	g.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

func (g *gateProxy) track(cs ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range cs {
		g.conns[c] = struct{}{}
	}
	return !g.blocked
}

func (g *gateProxy) serve() {
	for {
		in, err := g.ln.Accept()
		if err != nil {
			return
		}
		go g.handle(in)
	}
}

func (g *gateProxy) handle(in net.Conn) {
	if !g.track(in) {
		go func() { io.Copy(io.Discard, in); in.Close() }()
		return
	}
	out, err := net.DialTimeout("tcp", g.target, 2*time.Second)
	if err != nil {
		in.Close()
		return
	}
	if !g.track(out) { // blocked in between
		in.Close()
		out.Close()
		return
	}
	go func() { io.Copy(out, in); in.Close(); out.Close() }()
	go func() { io.Copy(in, out); in.Close(); out.Close() }()
}
