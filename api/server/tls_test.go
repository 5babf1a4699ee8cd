package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/certtest"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/ops"
)

// tlsConfig is testConfig serving TLS with a new CA's certificate for loopback; it
// returns the CA and the directory holding the files.
func tlsConfig(t *testing.T) (ops.Config, *certtest.CA, string) {
	t.Helper()
	cfg := testConfig(t)
	dir := t.TempDir()
	ca := certtest.NewCA(t, "cairn test server CA")
	cfg.TLSCert, cfg.TLSKey = ca.Issue(t, "node").Write(t, dir, "node")
	return cfg, ca, dir
}

// tlsClient trusts roots (nil: the system's) and presents certs.
func tlsClient(roots *x509.CertPool, certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
}

// get returns the status and body of GET url through c.
func get(c *http.Client, url string) (int, []byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// servedSerial is the serial number of the certificate a new TLS connection to addr is
// served.
func servedSerial(addr string, roots *x509.CertPool) (*big.Int, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{RootCAs: roots})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

func TestTLSClientWithTheCAConnectsAndOneWithoutIsRefused(t *testing.T) {
	cfg, ca, _ := tlsConfig(t)
	n, base := serveNode(t, cfg)
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("base URL %s", base)
	}
	admin := "https://" + n.AdminAddr().String()
	trusting := tlsClient(ca.Pool())

	ws := base + "/v1/agents/a/workbenches/w"
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, ws+"/files/input/x", strings.NewReader("over tls"))
	resp, err := trusting.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("put over TLS: %d", resp.StatusCode)
	}
	if code, b, err := get(trusting, ws+"/files/input/x"); err != nil || code != http.StatusOK || string(b) != "over tls" {
		t.Fatalf("get over TLS: %d %q %v", code, b, err)
	}
	if code, b, err := get(trusting, admin+"/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("admin listener over TLS: %d %.200s %v", code, b, err)
	}

	for name, url := range map[string]string{"client": base + "/readyz", "admin": admin + "/readyz"} {
		_, _, err := get(tlsClient(nil), url)
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Errorf("%s listener, a client without the CA: %v, want an unknown-authority error", name, err)
		}
		// Plain HTTP to a TLS port gets no answer from Cairn (net/http's own 400 at most).
		if code, b, err := get(&http.Client{Timeout: 30 * time.Second}, strings.Replace(url, "https://", "http://", 1)); err == nil && code == http.StatusOK {
			t.Errorf("%s listener answered plain HTTP: %d %.200s", name, code, b)
		}
	}
}

func TestTLSCertificateReplacedOnDiskIsServedToTheNextConnection(t *testing.T) {
	cfg, ca, dir := tlsConfig(t)
	n, base := serveNode(t, cfg)
	addr := strings.TrimPrefix(base, "https://")
	first, err := servedSerial(addr, ca.Pool())
	if err != nil {
		t.Fatal(err)
	}
	// An open keep-alive connection is not what is tested: each check dials anew.
	renewed := ca.Issue(t, "node renewed")
	renewed.Write(t, dir, "node")
	if renewed.Cert.SerialNumber.Cmp(first) == 0 {
		t.Fatal("the renewed certificate has the old serial")
	}
	for _, a := range []string{addr, n.AdminAddr().String()} {
		retry.SucceedsSoon(t, "the renewed certificate is served on "+a, func() error {
			got, err := servedSerial(a, ca.Pool())
			if err != nil {
				return err
			}
			if got.Cmp(renewed.Cert.SerialNumber) != 0 {
				return fmt.Errorf("served serial %s, want %s", got, renewed.Cert.SerialNumber)
			}
			return nil
		})
	}
	if code, _, err := get(tlsClient(ca.Pool()), base+"/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("a request after the renewal: %d %v", code, err)
	}
}

func TestMutualTLSRefusesAClientWithoutACertificateFromTheClientCA(t *testing.T) {
	cfg, serverCA, _ := tlsConfig(t)
	dir := t.TempDir()
	clientCA := certtest.NewCA(t, "cairn test client CA")
	cfg.TLSClientCA = clientCA.WriteCA(t, dir)
	n, base := serveNode(t, cfg)
	pair := func(ca *certtest.CA) tls.Certificate {
		l := ca.Issue(t, "client")
		c, err := tls.X509KeyPair(l.CertPEM, l.Key)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	stranger := certtest.NewCA(t, "someone else's CA")
	for _, url := range []string{base + "/readyz", "https://" + n.AdminAddr().String() + "/readyz"} {
		if code, b, err := get(tlsClient(serverCA.Pool()), url); err == nil {
			t.Errorf("%s without a client certificate: %d %.200s, want the handshake refused", url, code, b)
		}
		if code, b, err := get(tlsClient(serverCA.Pool(), pair(stranger)), url); err == nil {
			t.Errorf("%s with a certificate of another CA: %d %.200s, want the handshake refused", url, code, b)
		}
		if code, b, err := get(tlsClient(serverCA.Pool(), pair(clientCA)), url); err != nil || code != http.StatusOK {
			t.Errorf("%s with a certificate of the client CA: %d %.200s %v", url, code, b, err)
		}
	}
}

func TestOpenRefusesTLSFilesThatDoNotLoad(t *testing.T) {
	dir := t.TempDir()
	junk := certtest.Write(t, filepath.Join(dir, "junk.pem"), []byte("not PEM"))
	tests := []struct {
		name   string
		mutate func(c *ops.Config)
		field  string
	}{
		{"a missing certificate", func(c *ops.Config) { c.TLSCert = filepath.Join(dir, "missing.pem") }, "TLSCert"},
		{"a key that is not PEM", func(c *ops.Config) { c.TLSKey = junk }, "TLSCert"},
		{"a key of another certificate", func(c *ops.Config) {
			_, c.TLSKey = certtest.NewCA(t, "other").Issue(t, "other").Write(t, dir, "other")
		}, "TLSCert"},
		{"a missing client CA", func(c *ops.Config) { c.TLSClientCA = filepath.Join(dir, "missing-ca.pem") }, "TLSClientCA"},
		{"a client CA without a certificate", func(c *ops.Config) { c.TLSClientCA = junk }, "TLSClientCA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, _ := tlsConfig(t)
			tt.mutate(&cfg)
			openRefused(t, cfg, ops.Credentials{}, tt.field)
		})
	}
}

// logBuffer is a logger writing into a buffer, and the buffer.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

// reloaderSerial returns the serial number of the certificate r hands the next handshake;
// an error, no certificate or one that does not parse fails the test.
func reloaderSerial(t *testing.T, r *certReloader) *big.Int {
	t.Helper()
	c, err := r.GetCertificate(nil)
	if err != nil || c == nil {
		t.Fatalf("GetCertificate: %v, %v", c, err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatalf("the served certificate does not parse: %v", err)
	}
	return leaf.SerialNumber
}

// reloaderFixture is a certReloader over the "node" pair in dir, issued first by ca, and
// the buffer it logs into.
type reloaderFixture struct {
	r                      *certReloader
	ca                     *certtest.CA
	first                  certtest.Leaf
	dir, certFile, keyFile string
	logs                   *bytes.Buffer
}

// newReloaderFixture writes a pair issued by a new CA into a temporary directory and
// returns a certReloader over it that looks at the files at most once per interval.
func newReloaderFixture(t *testing.T, interval time.Duration) *reloaderFixture {
	t.Helper()
	f := &reloaderFixture{dir: t.TempDir(), ca: certtest.NewCA(t, "reload CA")}
	f.first = f.ca.Issue(t, "first")
	f.certFile, f.keyFile = f.first.Write(t, f.dir, "node")
	log, logs := logBuffer()
	r, err := newCertReloader(f.certFile, f.keyFile, interval, log)
	if err != nil {
		t.Fatalf("a reloader over a valid pair: %v", err)
	}
	f.r, f.logs = r, logs
	return f
}

func TestCertReloaderKeepsThePreviousPairWhileTheFilesDoNotLoad(t *testing.T) {
	f := newReloaderFixture(t, 0) // look at every handshake
	if reloaderSerial(t, f.r).Cmp(f.first.Cert.SerialNumber) != 0 {
		t.Fatal("not serving the first pair")
	}

	// Half a renewal: the new certificate, the old key.
	second := f.ca.Issue(t, "second")
	certtest.Write(t, f.certFile, second.CertPEM)
	for range 3 {
		if reloaderSerial(t, f.r).Cmp(f.first.Cert.SerialNumber) != 0 {
			t.Fatal("a certificate without its key replaced the working pair")
		}
	}
	if got := strings.Count(f.logs.String(), "do not load"); got != 1 {
		t.Fatalf("the failing pair was logged %d times, want once:\n%s", got, f.logs)
	}
	// The key arrives: the renewal is served.
	certtest.Write(t, f.keyFile, second.Key)
	if reloaderSerial(t, f.r).Cmp(second.Cert.SerialNumber) != 0 {
		t.Fatal("the completed renewal is not served")
	}
	if !strings.Contains(f.logs.String(), "TLS certificate reloaded") {
		t.Fatalf("the reload was not logged:\n%s", f.logs)
	}

	// The files vanish: the last good pair stays, reported once.
	if err := os.Remove(f.certFile); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if reloaderSerial(t, f.r).Cmp(second.Cert.SerialNumber) != 0 {
			t.Fatal("a missing file changed the served pair")
		}
	}
	if got := strings.Count(f.logs.String(), "unreadable"); got != 1 {
		t.Fatalf("the missing file was logged %d times, want once:\n%s", got, f.logs)
	}
	third := f.ca.Issue(t, "third")
	third.Write(t, f.dir, "node")
	if reloaderSerial(t, f.r).Cmp(third.Cert.SerialNumber) != 0 {
		t.Fatal("the pair written after the files vanished is not served")
	}
}

func TestCertReloaderLooksAtTheFilesAtMostOncePerInterval(t *testing.T) {
	f := newReloaderFixture(t, time.Hour)
	f.ca.Issue(t, "second").Write(t, f.dir, "node")
	if reloaderSerial(t, f.r).Cmp(f.first.Cert.SerialNumber) != 0 {
		t.Fatal("the files were read again before the interval passed")
	}
}

func TestPlaintextBeyondLoopbackIsLoggedAsAWarning(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *ops.Config)
		warn   bool
	}{
		{"loopback", func(*ops.Config) {}, false},
		{"beyond loopback with --insecure-plaintext", func(c *ops.Config) { c.Listen, c.InsecurePlaintext = "0.0.0.0:7070", true }, true},
		{"an admin listener beyond loopback", func(c *ops.Config) { c.AdminListen, c.InsecurePlaintext = "0.0.0.0:7071", true }, true},
		{"beyond loopback with TLS", func(c *ops.Config) { c.Listen, c.TLSCert, c.TLSKey = "0.0.0.0:7070", "n.pem", "n.key" }, false},
	}
	for _, tt := range tests {
		cfg := ops.DefaultConfig()
		tt.mutate(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		log, logs := logBuffer()
		warnPlaintext(cfg, log)
		if got := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "insecure-plaintext"); got != tt.warn {
			t.Errorf("%s: warned %v, want %v:\n%s", tt.name, got, tt.warn, logs)
		}
	}
}
