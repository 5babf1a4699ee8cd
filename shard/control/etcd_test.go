package control

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// etcdCluster is a real etcd cluster of in-process members on loopback, each with its own
// data directory under the test's temp dir. Members can be stopped and restarted on the
// same ports and data.
type etcdCluster struct {
	t       testing.TB
	members []*etcdMember
}

type etcdMember struct {
	cfg *embed.Config
	e   *embed.Etcd // nil while stopped
}

// startEtcd starts an n-member cluster and waits until every member serves.
func startEtcd(t testing.TB, n int) *etcdCluster {
	t.Helper()
	dir := t.TempDir()
	c := &etcdCluster{t: t}
	var initial []string
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		peer, client := freeURL(t), freeURL(t)
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.InitialClusterToken = "cairn-control-test"
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.LogLevel = "error"
		// Short ticks keep elections and the minimum lease TTL (1s) short; no fsync keeps
		// the shared test machine fast. Neither changes the semantics under test.
		cfg.TickMs, cfg.ElectionMs = 25, 250
		cfg.UnsafeNoFsync = true
		initial = append(initial, fmt.Sprintf("%s=%s", cfg.Name, peer.String()))
		c.members = append(c.members, &etcdMember{cfg: cfg})
	}
	for _, m := range c.members {
		m.cfg.InitialCluster = strings.Join(initial, ",")
	}
	t.Cleanup(func() {
		for i := range c.members {
			c.stop(i)
		}
	})
	// Members of a new multi-member cluster wait for each other: start them all, then wait.
	for i := range c.members {
		c.launch(i)
	}
	for i := range c.members {
		c.waitReady(i)
	}
	return c
}

func (c *etcdCluster) launch(i int) {
	c.t.Helper()
	e, err := embed.StartEtcd(c.members[i].cfg)
	if err != nil {
		c.t.Fatalf("start etcd member %d: %v", i, err)
	}
	c.members[i].e = e
}

func (c *etcdCluster) waitReady(i int) {
	c.t.Helper()
	e := c.members[i].e
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		c.t.Fatalf("etcd member %d: %v", i, err)
	case <-time.After(30 * time.Second):
		c.t.Fatalf("etcd member %d not ready after 30s", i)
	}
}

// stop stops member i (a no-op when stopped).
func (c *etcdCluster) stop(i int) {
	if m := c.members[i]; m.e != nil {
		m.e.Close()
		<-m.e.Server.StopNotify()
		m.e = nil
	}
}

// restart starts a stopped member again on its ports and data.
func (c *etcdCluster) restart(i int) {
	c.t.Helper()
	c.members[i].cfg.ClusterState = embed.ClusterStateFlagExisting
	c.launch(i)
	c.waitReady(i)
}

// endpoints returns the client addresses of the given members (all when none given).
func (c *etcdCluster) endpoints(idx ...int) []string {
	if len(idx) == 0 {
		for i := range c.members {
			idx = append(idx, i)
		}
	}
	var eps []string
	for _, i := range idx {
		eps = append(eps, c.members[i].cfg.ListenClientUrls[0].Host)
	}
	return eps
}

// client returns a client of the given members, closed when the test ends.
func (c *etcdCluster) client(idx ...int) *clientv3.Client {
	c.t.Helper()
	return c.clientOf(c.endpoints(idx...))
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

// freeURL returns an http URL on a loopback port that was free a moment ago.
func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
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

// eventually retries f until it returns nil or timeout passes (then the test fails with
// f's last error).
func eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	wait := 10 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %v", timeout, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
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
