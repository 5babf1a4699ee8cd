package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob/s3/s3test"
	"github.com/cairnstore/cairn/internal/certtest"
	"github.com/cairnstore/cairn/internal/etcdtest"
	"github.com/cairnstore/cairn/internal/freeport"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/ops"
)

// heldProxy stands for an etcd that does not answer until released: it accepts
// connections and sends nothing; once released it forwards them, and every later one, to
// target.
type heldProxy struct {
	ln       net.Listener
	target   string
	released chan struct{}
	stop     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

func startHeldProxy(t *testing.T, target string) *heldProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &heldProxy{ln: ln, target: target, released: make(chan struct{}), stop: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *heldProxy) addr() string { return p.ln.Addr().String() }

func (p *heldProxy) release() { p.once.Do(func() { close(p.released) }) }

func (p *heldProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// track records c to be closed at the end; false once the proxy is closed.
func (p *heldProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.stop:
		c.Close()
		return false
	default:
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *heldProxy) forward(in net.Conn) {
	defer p.wg.Done()
	defer in.Close()
	select {
	case <-p.released:
	case <-p.stop:
		return
	}
	out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(out) {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(out, in); done <- struct{}{} }()
	go func() { io.Copy(in, out); done <- struct{}{} }()
	<-done // either side's end ends both
}

func (p *heldProxy) close() {
	p.mu.Lock()
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// probeClient is an HTTP client whose every request ends within a few seconds: a server
// that accepts and does not answer fails the test instead of holding it.
func probeClient(tc *http.Transport) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: tc}
}

// probe does one request through c and returns the answer with its body read.
func probe(c *http.Client, method, url, contentType, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// A cluster node whose etcd does not answer yet answers on its client port at once
// (/healthz ok, /readyz and every surface 503 retryable, Connection: close) instead of
// holding connections unanswered, and once it has joined serves on the same port; no
// request sent across the hand-over goes unanswered. Over plain HTTP and over TLS.
func TestClusterNodeAnswersAtOnceWhileItJoinsAndThenServesOnTheSamePort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, MinIO and a cluster node")
	}
	srv := s3test.Start(t)
	for _, useTLS := range []bool{false, true} {
		name := "http"
		if useTLS {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) {
			etcd := etcdtest.Start(t)
			held := startHeldProxy(t, etcd.Endpoint())
			cfg := clusterConfig(t, srv, s3test.Bucket(), held.addr())
			cfg.Replication = 1
			cfg.Listen = freeport.Addr(t)
			// Not the default (the client port + 1), which another process may hold.
			cfg.AdminListen = "127.0.0.1:0"
			tr := &http.Transport{}
			if useTLS {
				ca := certtest.NewCA(t, "cairn test server CA")
				cfg.TLSCert, cfg.TLSKey = ca.Issue(t, "node").Write(t, t.TempDir(), "node")
				tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool()}
			}
			c := probeClient(tr)
			base := cfg.ClientScheme() + "://" + cfg.Listen
			startingAnswers(t, cfg, held, c, base)
		})
	}
}

// startingAnswers opens a node on cfg, whose etcd is behind held, checks its answers
// while it joins, then releases etcd and checks that the node serves on base.
func startingAnswers(t *testing.T, cfg ops.Config, held *heldProxy, c *http.Client, base string) {
	type opened struct {
		n   *Node
		err error
	}
	openc := make(chan opened, 1)
	go func() {
		n, err := Open(context.Background(), cfg, testCreds, nil)
		openc <- opened{n, err}
	}()
	var node *Node
	defer func() {
		if node == nil { // the test failed before Open returned: wait for it, close what it opened
			held.release()
			if o := <-openc; o.err == nil {
				o.n.Close()
			}
		}
	}()

	// The port is bound during Open; until then connections are refused. Once bound, every
	// request is answered within the client's deadline.
	retry.Within(t, 30*time.Second, "the client port is bound", func() error {
		_, _, err := probe(c, http.MethodGet, base+"/healthz", "", "")
		if err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("GET /healthz while the node joins: %v (want an answer at once)", err)
		}
		return err
	})
	resp, b, err := probe(c, http.MethodGet, base+"/healthz", "", "")
	if err != nil || resp.StatusCode != http.StatusOK || string(b) != `{"status":"ok"}`+"\n" {
		t.Fatalf("GET /healthz while the node joins: %v %v %q, want 200 {\"status\":\"ok\"}", answerStatus(resp), err, b)
	}

	resp, b, err = probe(c, http.MethodGet, base+"/readyz", "", "")
	var ready struct {
		Status  string   `json:"status"`
		Failing []string `json:"failing"`
	}
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(b, &ready) != nil ||
		ready.Status != "not ready" || len(ready.Failing) != 1 || !strings.Contains(ready.Failing[0], "joining the cluster") ||
		resp.Header.Get("Retry-After") == "" {
		t.Fatalf("GET /readyz while the node joins: %v %v %q (Retry-After %q), want 503 not ready, joining the cluster",
			answerStatus(resp), err, b, resp.Header.Get("Retry-After"))
	}

	ws := base + "/v1/agents/alice/workbenches/w1"
	for _, r := range []struct{ method, url, body string }{
		{http.MethodGet, ws + "/list", ""},
		{http.MethodPut, ws + "/files/input/a", strings.Repeat("x", 1<<20)}, // a body the answer does not wait for
	} {
		resp, b, err := probe(c, r.method, r.url, "", r.body)
		var env struct {
			Status    string `json:"status"`
			Code      string `json:"code"`
			Retryable bool   `json:"retryable"`
		}
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(b, &env) != nil ||
			env.Status != "error" || env.Code != "RoutingUnavailable" || !env.Retryable ||
			resp.Header.Get("Retry-After") != "1" || !resp.Close {
			t.Fatalf("%s %s while the node joins: %v %v %q (Retry-After %q, close %v), want 503 retryable RoutingUnavailable, Retry-After 1, Connection: close",
				r.method, r.url, answerStatus(resp), err, b, resp.Header.Get("Retry-After"), resp != nil && resp.Close)
		}
	}

	resp, b, err = probe(c, http.MethodPost, base+"/v1/agents/alice/mcp", "application/json",
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var rpc struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(b, &rpc) != nil ||
		rpc.JSONRPC != "2.0" || string(rpc.ID) != "null" || rpc.Error.Code != -32000 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("MCP call while the node joins: %v %v %q, want 503 with a JSON-RPC error (id null, -32000) and Retry-After 1", answerStatus(resp), err, b)
	}

	select {
	case o := <-openc:
		openc <- o
		t.Fatalf("Open returned (%v) while etcd did not answer: the answers above were not the joining node's", o.err)
	default:
	}

	// Across the hand-over, requests keep being answered: refused or unanswered ones fail.
	stopProbe := make(chan struct{})
	var probeErr atomic.Value
	var probes atomic.Int64
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		for {
			select {
			case <-stopProbe:
				return
			default:
			}
			resp, b, err := probe(c, http.MethodGet, base+"/healthz", "", "")
			if err != nil || resp.StatusCode != http.StatusOK {
				probeErr.CompareAndSwap(nil, fmt.Sprintf("%v %v %q", answerStatus(resp), err, b))
				return
			}
			probes.Add(1)
		}
	}()
	stopProbing := sync.OnceFunc(func() { close(stopProbe); <-probeDone })
	defer stopProbing()

	held.release()
	var o opened
	select {
	case o = <-openc:
	case <-time.After(60 * time.Second):
		t.Fatal("Open did not return within 60 s of etcd answering")
	}
	if o.err != nil {
		t.Fatalf("Open once etcd answers: %v", o.err)
	}
	node = o.n
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	addr := make(chan net.Addr, 1)
	go func() { served <- node.Serve(ctx, func(a net.Addr) { addr <- a }) }()
	defer func() {
		cancel()
		<-served
		node.Close()
	}()
	select {
	case a := <-addr:
		if !strings.HasSuffix(base, "://"+a.String()) {
			t.Fatalf("Serve serves %s, want the address bound at Open (%s)", a, base)
		}
	case err := <-served:
		served <- err // for the deferred wait
		t.Fatalf("Serve returned before serving: %v", err)
	}

	retry.Within(t, 30*time.Second, "/readyz answers 200 on the same port", func() error {
		resp, b, err := probe(c, http.MethodGet, base+"/readyz", "", "")
		if err != nil {
			t.Fatalf("GET /readyz after the hand-over: %v", err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		return nil
	})
	retry.Within(t, 30*time.Second, "a write on the same port", func() error {
		resp, b, err := probe(c, http.MethodPut, ws+"/files/input/a", "", "after the join")
		if err != nil {
			t.Fatalf("PUT after the hand-over: %v", err)
		}
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		return nil
	})
	if resp, b, err := probe(c, http.MethodGet, ws+"/files/input/a", "", ""); err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(b, []byte("after the join")) {
		t.Fatalf("GET after the hand-over: %v %v %q", answerStatus(resp), err, b)
	}
	stopProbing()
	if e := probeErr.Load(); e != nil {
		t.Fatalf("a /healthz probe across the hand-over (after %d answered): %v", probes.Load(), e)
	}
	if probes.Load() == 0 {
		t.Fatal("no /healthz probe was answered across the hand-over")
	}
}

// answerStatus is resp's status code, 0 without an answer.
func answerStatus(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// A cluster node whose start fails after it bound its client port (here: it asks for
// another shard count than its cluster's) leaves the port closed: connections are refused,
// as before the node bound it.
func TestClusterNodeThatFailsToJoinClosesItsClientPort(t *testing.T) {
	cb := startClusterBackends(t)
	startClusterNode(t, cb.config(t)).shutdown() // creates the cluster
	cfg := cb.config(t)
	cfg.Shards = 5
	cfg.Listen = freeport.Addr(t)
	n, err := Open(t.Context(), cfg, testCreds, nil)
	if err == nil {
		n.Close()
		t.Fatal("a node asking for another shard count started")
	}
	if c, err := net.DialTimeout("tcp", cfg.Listen, 5*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial the client port of a node whose start failed: %v, want connection refused", err)
	}
}
