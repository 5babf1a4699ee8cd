package control

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/internal/etcdtest"
)

// etcdCluster is a real etcd cluster of in-process members on loopback (etcdtest), with
// clients of the plane's configuration.
type etcdCluster struct {
	*etcdtest.Cluster
	t testing.TB
}

// startEtcd starts an n-member cluster and waits until every member serves.
func startEtcd(t testing.TB, n int) *etcdCluster {
	t.Helper()
	return &etcdCluster{Cluster: etcdtest.StartCluster(t, n), t: t}
}

// client returns a client of the given members (all when none given), closed when the
// test ends.
func (c *etcdCluster) client(idx ...int) *clientv3.Client {
	c.t.Helper()
	return c.clientOf(c.Endpoints(idx...))
}

// clientOf returns a client of the given endpoints, closed when the test ends.
func (c *etcdCluster) clientOf(endpoints []string) *clientv3.Client {
	c.t.Helper()
	cli, err := clientv3.New(ClientConfig(endpoints))
	if err != nil {
		c.t.Fatalf("etcd client: %v", err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// testConfig is a plane configuration for tests: a prefix of its own, short timeouts.
func testConfig(t testing.TB) Config {
	return Config{Prefix: "/test/" + strings.ReplaceAll(t.Name(), "/", "_"), RequestTimeout: 500 * time.Millisecond,
		NodeTTL: time.Second}
}

func newPlane(t testing.TB, cli *clientv3.Client, cfg Config) *Plane {
	t.Helper()
	p, err := New(cli, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newControlledCluster starts a one-member etcd and creates a cluster of spec on it, for
// the controller's tests (request timeout 5 s: the race detector on a shared machine); it
// returns the plane and a context that ends after d.
func newControlledCluster(t testing.TB, spec ClusterSpec, d time.Duration) (*Plane, context.Context) {
	t.Helper()
	cfg := testConfig(t)
	cfg.RequestTimeout = 5 * time.Second
	p := newPlane(t, startEtcd(t, 1).client(), cfg)
	ctx := ctxTimeout(t, d)
	if _, err := p.CreateCluster(ctx, spec); err != nil {
		t.Fatal(err)
	}
	return p, ctx
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// cutProxy forwards loopback TCP connections to an etcd member until cut: then it drops
// every connection and refuses new ones, as a crashed or partitioned member looks to a
// client (unlike a graceful stop, nothing tells the client's streams to end).
type cutProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
	wg     sync.WaitGroup
}

func newCutProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) addr() string { return p.l.Addr().String() }

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		p.mu.Lock()
		if err != nil || p.cut {
			p.mu.Unlock()
			c.Close()
			if up != nil {
				up.Close()
			}
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// partition drops every connection and refuses new ones.
func (p *cutProxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.l.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *cutProxy) close() {
	p.partition()
	p.wg.Wait()
}
