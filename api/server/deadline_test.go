package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/ops"
)

// serveNode opens and serves a node with cfg on a free loopback port until the test ends
// and returns its base URL.
func serveNode(t *testing.T, cfg ops.Config) (*Node, string) {
	t.Helper()
	return serveNodeWith(t, cfg, ops.Credentials{})
}

// serveNodeWith is serveNode with creds for an s3:// blob store.
func serveNodeWith(t *testing.T, cfg ops.Config, creds ops.Credentials) (*Node, string) {
	t.Helper()
	return serveNodeLogged(t, cfg, creds, nil)
}

// serveNodeLogged is serveNodeWith with the node's logger (nil: slog.Default()).
func serveNodeLogged(t *testing.T, cfg ops.Config, creds ops.Credentials, log *slog.Logger) (*Node, string) {
	t.Helper()
	n, err := Open(t.Context(), cfg, creds, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReady(t.Context()); err != nil {
		n.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- n.Serve(ctx, func(a net.Addr) { addrc <- a }) }()
	addr := <-addrc
	t.Cleanup(func() {
		cancel()
		<-done
		n.Close()
	})
	return n, cfg.ClientScheme() + "://" + addr.String()
}

// slowRequest sends a request whose body starts with prefix and then trickles one byte
// every tick (never completing the declared length) and returns the status and body of
// the answer; the connection is closed when the test ends.
func slowRequest(t *testing.T, base, method, path string, header map[string]string, prefix []byte, tick time.Duration) (int, []byte, error) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return 0, nil, err
	}
	t.Cleanup(func() { conn.Close() })
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", method, path, strings.TrimPrefix(base, "http://"), 64<<20)
	for k, v := range header {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	head.WriteString("\r\n")
	head.Write(prefix)
	if _, err := conn.Write(head.Bytes()); err != nil {
		return 0, nil, err
	}
	return trickle(conn, []byte{'x'}, tick)
}

// wantSlowBody checks an answer is the typed minimum-rate error.
func wantSlowBody(code int, body []byte) error {
	var e struct {
		Code      string         `json:"code"`
		Retryable bool           `json:"retryable"`
		Details   map[string]any `json:"details"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Errorf("%d %q: %v", code, body, err)
	}
	if code != http.StatusBadRequest || e.Code != "InvalidArguments" || e.Details["field"] != "body" || e.Details["rule"] != "min_rate" {
		return fmt.Errorf("got %d %s, want 400 InvalidArguments with details.field body, details.rule min_rate", code, body)
	}
	return nil
}

// deadlineConfig shortens the body rate window so that a slow upload is cut off quickly.
func deadlineConfig(t *testing.T) ops.Config {
	cfg := testConfig(t)
	cfg.BodyRateWindow = 300 * time.Millisecond
	return cfg
}

func TestSlowUploadsEndTypedAndReleaseTheIngestSlots(t *testing.T) {
	_, base := serveNode(t, deadlineConfig(t))
	// More slow uploads than ingest slots (4), each past the inline threshold so that it
	// holds a slot while it trickles.
	const slow = 8
	errc := make(chan error, slow)
	for i := range slow {
		go func() {
			code, body, err := slowRequest(t, base, http.MethodPut, fmt.Sprintf("/v1/agents/a/workbenches/w/files/input/slow-%d", i),
				nil, bytes.Repeat([]byte("s"), 8<<10), 20*time.Millisecond)
			if err == nil {
				err = wantSlowBody(code, body)
			}
			errc <- err
		}()
	}
	// Another agent writes a body above the inline threshold under a deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/v1/agents/b/workbenches/w/files/input/big", bytes.NewReader(bytes.Repeat([]byte("b"), 64<<10)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a write beside %d slow uploads: %v", slow, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a write beside %d slow uploads: status %d", slow, resp.StatusCode)
	}
	t.Logf("the write beside %d slow uploads took %v", slow, time.Since(start))
	for range slow {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

func TestStalledMCPRequestsEndTypedAndReleaseTheLargeRequestSlots(t *testing.T) {
	_, base := serveNode(t, deadlineConfig(t))
	// Bodies of unknown length go through the large-request admission (2 slots).
	const slow = 4
	errc := make(chan error, slow)
	for range slow {
		go func() {
			code, body, err := slowChunked(t, base, "/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"`), 20*time.Millisecond)
			if err == nil {
				err = wantSlowBody(code, body)
			}
			errc <- err
		}()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	msg := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workbench_create","arguments":{"workbench_id":"w"}}}`
	// io.MultiReader hides the length: the request is chunked, like the stalled ones.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", io.MultiReader(strings.NewReader(msg)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("an MCP call beside %d stalled requests: %v", slow, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"result"`)) {
		t.Fatalf("an MCP call beside %d stalled requests: %d %s", slow, resp.StatusCode, b)
	}
	for range slow {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

// slowChunked posts a chunked body that starts with prefix and then trickles one
// one-byte chunk every tick.
func slowChunked(t *testing.T, base, path string, prefix []byte, tick time.Duration) (int, []byte, error) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return 0, nil, err
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n",
		path, strings.TrimPrefix(base, "http://"), len(prefix), prefix)
	return trickle(conn, []byte("1\r\n \r\n"), tick)
}

// trickle writes piece on conn every tick until the answer arrives (up to 30 s), and
// returns its status and body.
func trickle(conn net.Conn, piece []byte, tick time.Duration) (int, []byte, error) {
	answered := make(chan struct{})
	go func() {
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for {
			select {
			case <-answered:
				return
			case <-tk.C:
				if _, err := conn.Write(piece); err != nil {
					return
				}
			}
		}
	}()
	defer close(answered)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func TestConnectionsAreCappedPerClientAndPerNode(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConnections = 4
	cfg.MaxConnectionsPerClient = 2
	_, base := serveNode(t, cfg)
	addr := strings.TrimPrefix(base, "http://")
	dialFrom := func(ip string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// get sends GET /healthz on c and reports whether an answer came before wait.
	get := func(c net.Conn, wait time.Duration) error {
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	a1, a2 := dialFrom("127.0.0.1"), dialFrom("127.0.0.1")
	for _, c := range []net.Conn{a1, a2} {
		if err := get(c, 10*time.Second); err != nil {
			t.Fatalf("a connection within the caps: %v", err)
		}
	}
	// A third connection from the same address is closed at once.
	a3 := dialFrom("127.0.0.1")
	if err := get(a3, 10*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection over the per-client cap: %v, want it closed", err)
	}
	b1, b2 := dialFrom("127.0.0.2"), dialFrom("127.0.0.2")
	for _, c := range []net.Conn{b1, b2} {
		if err := get(c, 10*time.Second); err != nil {
			t.Fatalf("a connection from a second client within the caps: %v", err)
		}
	}
	// The node holds 4: a fifth client waits to be accepted ...
	c1 := dialFrom("127.0.0.3")
	if err := get(c1, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection over the node cap: %v, want no answer while the node is full", err)
	}
	// ... until a connection closes.
	a1.Close()
	c1.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c1), nil)
	if err != nil {
		t.Fatalf("the waiting connection after one closed: %v", err)
	}
	resp.Body.Close()
}

func TestIdleAndSilentConnectionsAreClosed(t *testing.T) {
	cfg := testConfig(t)
	cfg.IdleTimeout = 200 * time.Millisecond
	cfg.ReadHeaderTimeout = 200 * time.Millisecond
	_, base := serveNode(t, cfg)
	addr := strings.TrimPrefix(base, "http://")
	for _, tc := range []struct {
		name  string
		write string
	}{
		{"a keep-alive connection idle after a request", "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"},
		{"a connection that never sends a request", ""},
		{"a connection that stops inside its headers", "GET /healthz HTTP/1.1\r\nHost: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tc.write)
			br := bufio.NewReader(c)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if strings.HasSuffix(tc.write, "\r\n\r\n") {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			// The server closes the connection: EOF (or a reset), not our deadline.
			_, err = io.Copy(io.Discard, br)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the connection was still open after 10 s")
			}
		})
	}
}

func TestASlowUploadAboveTheMinimumRateCompletes(t *testing.T) {
	_, base := serveNode(t, deadlineConfig(t)) // 64 KiB/s over 300 ms
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(errors.New("the test ended")) }) // before the node stops
	go func() {
		// 8 KiB every 50 ms (160 KiB/s) for 2 s: longer than several windows.
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		chunk := bytes.Repeat([]byte("m"), 8<<10)
		for range 40 {
			<-tk.C
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, base+"/v1/agents/a/workbenches/w/files/input/steady", pr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !bytes.Contains(b, []byte(`"size_bytes":327680`)) {
		t.Fatalf("a steady upload above the minimum rate: %d %s", resp.StatusCode, b)
	}
}
