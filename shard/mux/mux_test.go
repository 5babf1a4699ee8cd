package mux

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"

	"github.com/cairnstore/cairn/internal/retry"
)

// Every goroutine a Mux starts ends when it is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func listen(t *testing.T, cfg Config) *Mux {
	t.Helper()
	m, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// echoStream serves stream on m: every connection gets "<stream>:" followed by an echo of
// each line it sends. The server goroutines end when the listener or the Mux closes.
func echoStream(t *testing.T, m *Mux, stream string) {
	t.Helper()
	l, err := m.Listener(stream)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, stream+":"+line); err != nil {
						return
					}
				}
			}()
		}
	}()
}

func roundTrip(c net.Conn, msg string) (string, error) {
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

func TestManyStreamsShareOnePort(t *testing.T) {
	server := listen(t, Config{})
	client := listen(t, Config{})
	const streams = 30
	for i := 0; i < streams; i++ {
		echoStream(t, server, fmt.Sprintf("raft/%d", i))
	}
	echoStream(t, server, StreamForward)
	ctx := t.Context()
	for i := 0; i < streams; i++ {
		stream := fmt.Sprintf("raft/%d", i)
		c, err := client.Dial(ctx, server.Addr().String(), stream)
		if err != nil {
			t.Fatal(err)
		}
		got, err := roundTrip(c, "hello")
		c.Close()
		if err != nil || got != stream+":hello" {
			t.Fatalf("stream %s answered %q, %v", stream, got, err)
		}
	}
	c, err := client.Dial(ctx, server.Addr().String(), StreamForward)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "x"); err != nil || got != "fwd:x" {
		t.Fatalf("fwd answered %q, %v", got, err)
	}
	if st := server.Stats(); st.Accepted != streams+1 || st.UnknownStream+st.BadHeader+st.HeaderTimeout+st.Overload != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestUnknownStreamIsRefusedAndCounted(t *testing.T) {
	server := listen(t, Config{})
	echoStream(t, server, "raft/1")
	_, err := server.Dial(t.Context(), server.Addr().String(), "raft/2")
	if !errors.Is(err, ErrUnknownStream) {
		t.Fatalf("dial of an unregistered stream: %v", err)
	}
	// A stream whose listener closed is unknown again.
	l, err := server.Listener("raft/3")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := server.Dial(t.Context(), server.Addr().String(), "raft/3"); !errors.Is(err, ErrUnknownStream) {
		t.Fatalf("dial of a closed stream: %v", err)
	}
	if st := server.Stats(); st.UnknownStream != 2 || st.Accepted != 0 {
		t.Fatalf("stats %+v", st)
	}
	// ...and can be registered again.
	echoStream(t, server, "raft/3")
	c, err := server.Dial(t.Context(), server.Addr().String(), "raft/3")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestStreamNamesAreValidatedAndUnique(t *testing.T) {
	m := listen(t, Config{})
	for _, name := range []string{"", strings.Repeat("a", MaxStreamNameBytes+1), "raft 1", "é", "a\x00"} {
		if _, err := m.Listener(name); !errors.Is(err, ErrInvalidStream) {
			t.Errorf("Listener(%q): %v", name, err)
		}
		if _, err := m.Dial(t.Context(), m.Addr().String(), name); !errors.Is(err, ErrInvalidStream) {
			t.Errorf("Dial(%q): %v", name, err)
		}
	}
	if _, err := m.Listener("raft/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Listener("raft/x"); !errors.Is(err, ErrStreamInUse) {
		t.Fatalf("second listener: %v", err)
	}
}

func TestSlowOrGarbageHeadersAreClosed(t *testing.T) {
	server := listen(t, Config{HeaderTimeout: 100 * time.Millisecond})
	echoStream(t, server, "raft/1")
	addr := server.Addr().String()
	tests := []struct {
		name  string
		send  []byte
		count func(Stats) uint64
		reply string // what the acceptor writes before closing
	}{
		{"a silent dialer times out", nil, func(s Stats) uint64 { return s.HeaderTimeout }, ""},
		{"a dialer that stops mid-header times out", []byte("CRNM\x01\x06raf"), func(s Stats) uint64 { return s.HeaderTimeout }, ""},
		{"a wrong magic is a bad header", []byte("GET / HTTP/1.1\r\n\r\n"), func(s Stats) uint64 { return s.BadHeader }, ""},
		{"an unknown version is refused with 'v'", []byte("CRNM\x07\x06raft/1"), func(s Stats) uint64 { return s.BadHeader }, "v"},
		{"an empty stream name is a bad header", []byte("CRNM\x01\x00"), func(s Stats) uint64 { return s.BadHeader }, ""},
		{"a name with a bad byte is a bad header", []byte("CRNM\x01\x03a b"), func(s Stats) uint64 { return s.BadHeader }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.count(server.Stats())
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(c)
			if errors.Is(err, syscall.ECONNRESET) {
				err = nil // closed with our garbage unread
			}
			if err != nil {
				t.Fatalf("the acceptor did not close the connection: %v", err)
			}
			if string(got) != tc.reply {
				t.Fatalf("acceptor wrote %q, want %q", got, tc.reply)
			}
			retry.Within(t, 10*time.Second, "counted", func() error {
				if got := tc.count(server.Stats()); got != before+1 {
					return fmt.Errorf("count %d, want %d", got, before+1)
				}
				return nil
			})
		})
	}
	if st := server.Stats(); st.Accepted != 0 {
		t.Fatalf("a bad connection reached a stream: %+v", st)
	}
	// The Mux still serves good dialers.
	c, err := server.Dial(t.Context(), addr, "raft/1")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestConcurrentDialsAllArrive(t *testing.T) {
	server := listen(t, Config{})
	client := listen(t, Config{})
	const streams, dialsPerStream = 8, 25
	for i := 0; i < streams; i++ {
		echoStream(t, server, fmt.Sprintf("s%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, streams*dialsPerStream)
	for i := 0; i < streams*dialsPerStream; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			stream := fmt.Sprintf("s%d", i%streams)
			c, err := client.Dial(t.Context(), server.Addr().String(), stream)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := fmt.Sprint(i)
			if got, err := roundTrip(c, msg); err != nil || got != stream+":"+msg {
				errs <- fmt.Errorf("dial %d: %q %v", i, got, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := server.Stats(); st.Accepted != streams*dialsPerStream {
		t.Fatalf("stats %+v", st)
	}
}

func TestDialHonoursItsContext(t *testing.T) {
	// A port that accepts TCP but never answers the header.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	m := listen(t, Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = m.Dial(ctx, ln.Addr().String(), "raft/1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial of a mute peer: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("dial returned after %v", d)
	}
}

func TestCloseSemantics(t *testing.T) {
	server := listen(t, Config{HeaderTimeout: time.Minute})
	client := listen(t, Config{})
	addr := server.Addr().String()

	plain, err := server.Listener("plain")
	if err != nil {
		t.Fatal(err)
	}

	// A connection stuck in its header phase.
	stuck, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()

	dialedPlain, err := client.Dial(t.Context(), addr, "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer dialedPlain.Close()
	acceptedPlain, err := plain.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer acceptedPlain.Close()

	// The client's layer dials the server's layer on the same stream.
	layer, clientLayer, dialed, accepted := layerConn(t, server, client, "raft/1")
	if layer.Addr().String() != addr {
		t.Fatalf("layer address %s, want %s", layer.Addr(), addr)
	}

	// Closing a layer closes what it accepted; the peer sees EOF.
	if err := layer.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := layer.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept after close: %v", err)
	}
	dialed.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := dialed.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("dialled end after the acceptor's layer closed: %v", err)
	}
	if _, err := accepted.Write([]byte("x")); err == nil {
		t.Fatal("write on a connection of a closed layer succeeded")
	}
	// Closing the dialling layer closes what it dialled.
	if err := clientLayer.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := dialed.Write([]byte("x")); err == nil {
		t.Fatal("write on a dialled connection of a closed layer succeeded")
	}

	// Closing the Mux closes stream listeners and header-phase connections, not handed-over
	// plain connections.
	retry.Within(t, 10*time.Second, "the stuck connection is pending", func() error {
		server.mu.Lock()
		defer server.mu.Unlock()
		if n := len(server.pending); n != 1 {
			return fmt.Errorf("%d pending connections", n)
		}
		return nil
	})
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("accept after the mux closed: %v", err)
	}
	stuck.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := stuck.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("header-phase connection after close: %v", err)
	}
	if got, err := roundTripPair(dialedPlain, acceptedPlain, "still here"); err != nil || got != "still here" {
		t.Fatalf("handed-over connection after the mux closed: %q %v", got, err)
	}
	if _, err := server.Dial(t.Context(), client.Addr().String(), "plain"); !errors.Is(err, ErrClosed) {
		t.Fatalf("dial from a closed mux: %v", err)
	}
	if _, err := server.Listener("again"); !errors.Is(err, ErrClosed) {
		t.Fatalf("listener on a closed mux: %v", err)
	}
	if _, err := client.Dial(t.Context(), addr, "plain"); err == nil {
		t.Fatal("dial to a closed mux succeeded")
	}
	if err := server.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func serverAddr(m *Mux) raft.ServerAddress { return raft.ServerAddress(m.Addr().String()) }

// layerConn opens a stream layer for stream on server and on client, and one connection
// between them: the end the client's layer dials and the end the server's layer accepts.
// Both layers close at the end of the test (a second Close is harmless).
func layerConn(t *testing.T, server, client *Mux, stream string) (layer, clientLayer *StreamLayer, dialed, accepted net.Conn) {
	t.Helper()
	layer, err := server.StreamLayer(stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { layer.Close() })
	clientLayer, err = client.StreamLayer(stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clientLayer.Close() })
	dialed, err = clientLayer.Dial(serverAddr(server), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	accepted, err = layer.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return layer, clientLayer, dialed, accepted
}

// roundTripPair writes msg on a and reads it on b.
func roundTripPair(a, b net.Conn, msg string) (string, error) {
	if _, err := io.WriteString(a, msg); err != nil {
		return "", err
	}
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(b, buf)
	return string(buf), err
}

func TestAdvertisedAddressIsWhatStreamsReport(t *testing.T) {
	m := listen(t, Config{Advertise: "node-a.example:7000"})
	l, err := m.Listener("raft/1")
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Addr().String(); got != "node-a.example:7000" {
		t.Fatalf("Addr %q", got)
	}
	if err := (Config{Advertise: "no-port"}).Validate(); err == nil {
		t.Fatal("an advertise address without a port passed Validate")
	}
}

// pki is a throwaway CA that signs node certificates for 127.0.0.1.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &pki{cert: cert, key: key, pool: pool}
}

func (p *pki) node(t *testing.T, name string, usage ...x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if usage == nil {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestMutualTLS(t *testing.T) {
	ca := newPKI(t, "cairn peers")
	server := listen(t, Config{TLS: NewTLS(ca.node(t, "a"), ca.pool)})
	echoStream(t, server, "raft/1")
	addr := server.Addr().String()

	t.Run("a peer with a certificate of the cluster CA gets through", func(t *testing.T) {
		client := listen(t, Config{TLS: NewTLS(ca.node(t, "b"), ca.pool)})
		c, err := client.Dial(t.Context(), addr, "raft/1")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got, err := roundTrip(c, "hi"); err != nil || got != "raft/1:hi" {
			t.Fatalf("%q %v", got, err)
		}
	})

	refused := []struct {
		name   string
		client func() (*Mux, error)
	}{
		{"a plain-TCP dialer is refused", func() (*Mux, error) { return Listen("127.0.0.1:0", Config{}) }},
		{"a peer whose certificate another CA signed is refused", func() (*Mux, error) {
			other := newPKI(t, "someone else")
			cfg := NewTLS(other.node(t, "mallory"), other.pool)
			cfg.RootCAs = ca.pool // it trusts us; we must not trust it
			return Listen("127.0.0.1:0", Config{TLS: cfg})
		}},
		{"a peer without a client certificate is refused", func() (*Mux, error) {
			m, err := Listen("127.0.0.1:0", Config{TLS: NewTLS(ca.node(t, "c"), ca.pool)})
			if err == nil {
				m.cfg.TLS = &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS13} // bypasses Validate on purpose
			}
			return m, err
		}},
		{"a certificate only good for servers is refused as a client", func() (*Mux, error) {
			return Listen("127.0.0.1:0", Config{TLS: NewTLS(ca.node(t, "d", x509.ExtKeyUsageServerAuth), ca.pool)})
		}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			client, err := tc.client()
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			before := server.Stats().BadHeader
			if c, err := client.Dial(t.Context(), addr, "raft/1"); err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			retry.Within(t, 10*time.Second, "counted", func() error {
				if got := server.Stats().BadHeader; got != before+1 {
					return fmt.Errorf("BadHeader %d, want %d", got, before+1)
				}
				return nil
			})
		})
	}

	t.Run("a TLS dialer refuses a server the CA did not sign", func(t *testing.T) {
		other := newPKI(t, "impostor")
		impostorCfg := NewTLS(other.node(t, "impostor"), other.pool)
		impostorCfg.ClientCAs = ca.pool // it would accept us
		impostor := listen(t, Config{TLS: impostorCfg})
		echoStream(t, impostor, "raft/1")
		client := listen(t, Config{TLS: NewTLS(ca.node(t, "e"), ca.pool)})
		if c, err := client.Dial(t.Context(), impostor.Addr().String(), "raft/1"); err == nil {
			c.Close()
			t.Fatal("dial to an impostor succeeded")
		}
	})

	if st := server.Stats(); st.Accepted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestValidateRefusesTLSWithoutClientVerification(t *testing.T) {
	ca := newPKI(t, "ca")
	cfg := NewTLS(ca.node(t, "a"), ca.pool)
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	if err := (Config{TLS: cfg}).Validate(); err == nil {
		t.Fatal("a TLS config that accepts anonymous peers passed Validate")
	}
	if err := (Config{TLS: &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool}}).Validate(); err == nil {
		t.Fatal("a TLS config without a certificate passed Validate")
	}
}

func TestAFullBacklogRefusesFurtherConnections(t *testing.T) {
	server := listen(t, Config{})
	l, err := server.Listener("idle") // nobody accepts
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < acceptBacklog; i++ {
		c, err := server.Dial(t.Context(), server.Addr().String(), "idle")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	retry.Within(t, 10*time.Second, "backlog full", func() error {
		if got := server.Stats().Accepted; got != acceptBacklog {
			return fmt.Errorf("%d accepted, want %d", got, acceptBacklog)
		}
		return nil
	})
	c, err := server.Dial(t.Context(), server.Addr().String(), "idle")
	if err == nil {
		conns = append(conns, c)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("a connection beyond the backlog stayed open")
		}
	}
	retry.Within(t, 10*time.Second, "overload counted", func() error {
		if got := server.Stats().Overload; got != 1 {
			return fmt.Errorf("Overload %d, want 1", got)
		}
		return nil
	})
	// Closing the listener closes the queued connections.
	l.Close()
	conns[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conns[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("queued connection after the listener closed: %v", err)
	}
}

// raft's inbound handler logs every read error but io.EOF at error level: a read blocked
// on an accepted connection when its layer closes must end with EOF.
func TestAReadBlockedWhenTheLayerClosesEndsWithEOF(t *testing.T) {
	layer, _, dialed, accepted := layerConn(t, listen(t, Config{}), listen(t, Config{}), "raft/1")
	read := make(chan error, 1)
	go func() {
		_, err := accepted.Read(make([]byte, 1))
		read <- err
	}()
	if err := layer.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-read; !errors.Is(err, io.EOF) {
		t.Fatalf("read blocked on an accepted connection when its layer closed: %v", err)
	}
	// A connection closed by its own user still reports that it is closed.
	if _, err := dialed.Read(make([]byte, 1)); err == nil {
		t.Fatal("read on the dialled end after the peer closed succeeded")
	}
	dialed.Close()
	if _, err := dialed.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a dialled connection its user closed: %v", err)
	}
}

// A stopping peer that closes a connection with unread data in it resets the connection
// (the kernel's answer to such a close): a read on the accepted end ends with EOF, the end
// of the stream, not an error raft logs (TestStoppingANodeLogsNoTransportDecodeWarning in
// package shard met this under load).
func TestAReadOnAnAcceptedConnectionThePeerResetEndsWithEOF(t *testing.T) {
	_, _, dialed, accepted := layerConn(t, listen(t, Config{}), listen(t, Config{}), "raft/1")
	tcp, ok := dialed.(*trackedConn).Conn.(*countedConn).Conn.(*net.TCPConn)
	if !ok {
		t.Fatal("the dialled connection is not a TCP connection")
	}
	if err := tcp.SetLinger(0); err != nil { // close sends a reset, as with unread data
		t.Fatal(err)
	}
	dialed.Close()
	if _, err := accepted.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read on an accepted connection its peer reset: %v", err)
	}
}
