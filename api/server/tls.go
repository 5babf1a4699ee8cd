package server

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cairnstore/cairn/ops"
)

// certCheckInterval is how often, at most, the serving certificate's files are looked at
// for a change (two stats; a reload only when one changed).
const certCheckInterval = 2 * time.Second

// serverTLS returns the TLS configuration of the client and admin listeners, or nil
// without cfg.TLS(): the certificate from cfg.TLSCert/TLSKey through a certReloader,
// and with cfg.TLSClientCA a required client certificate signed by that bundle. TLS 1.2
// at least (curl and MCP clients of every platform speak it).
//
// Errors: a *ops.ConfigError naming the file that does not load.
func serverTLS(cfg ops.Config, log *slog.Logger) (*tls.Config, error) {
	if !cfg.TLS() {
		return nil, nil
	}
	r, err := newCertReloader(cfg.TLSCert, cfg.TLSKey, certCheckInterval, log)
	if err != nil {
		return nil, &ops.ConfigError{Field: "TLSCert", Rule: "must be a PEM certificate whose private key is --tls-key (" + err.Error() + ")", Value: cfg.TLSCert}
	}
	tc := &tls.Config{GetCertificate: r.GetCertificate, MinVersion: tls.VersionTLS12}
	if cfg.TLSClientCA != "" {
		pem, err := os.ReadFile(cfg.TLSClientCA)
		if err != nil {
			return nil, &ops.ConfigError{Field: "TLSClientCA", Rule: "must be a readable PEM CA bundle (" + err.Error() + ")", Value: cfg.TLSClientCA}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &ops.ConfigError{Field: "TLSClientCA", Rule: "must hold at least one PEM certificate", Value: cfg.TLSClientCA}
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// warnPlaintext logs a warning when a listener of cfg serves plain HTTP beyond loopback
// (Validate allows it only with --insecure-plaintext).
func warnPlaintext(cfg ops.Config, log *slog.Logger) {
	if !cfg.TLS() && cfg.BeyondLoopback() {
		log.Warn("serving plain HTTP beyond loopback (--insecure-plaintext): API keys and data cross the network unencrypted; set --tls-cert and --tls-key",
			"listen", cfg.Listen, "admin_listen", cfg.AdminAddress())
	}
}

// certReloader serves a certificate and key pair read from two files and reads them
// again when they change, so that a renewed certificate is served without a restart:
// at most once per interval, at a handshake, it reads both files, and when the content of
// either differs from the pair it serves (a SHA-256 of each: a modification time can be
// equal for two writes within the file system's clock tick, and a renewed certificate
// often has the old one's size), it loads them.
// A pair that fails to load (a half-finished renewal, a key that does not match) is
// logged and the previous pair kept; it is tried again when the files change again.
type certReloader struct {
	certFile, keyFile string
	interval          time.Duration
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	serving fileStamp // the files as they were when cert was read
	tried   fileStamp // the files as they were at the last load that failed
	// unreadable is the last stat failure reported, "" when the files could be stat'ed.
	unreadable string
	checked    time.Time // the last look at the files
}

// fileStamp is what tells that the certificate's files changed: their contents' digests.
type fileStamp struct {
	cert, key [sha256.Size]byte
}

// newCertReloader loads the pair once; it fails when the files do not hold a matching
// PEM certificate and key.
func newCertReloader(certFile, keyFile string, interval time.Duration, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, interval: interval, log: log}
	stamp, err := r.stamp()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	r.cert, r.serving, r.checked = &cert, stamp, time.Now()
	return r, nil
}

// GetCertificate is tls.Config.GetCertificate: the current pair, reloaded first when
// the files changed.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) >= r.interval {
		r.checked = now
		r.refresh()
	}
	return r.cert, nil
}

// refresh loads the files when they differ from the pair served and from the last pair
// that failed. The stamp is taken before the files are read, so a change during the
// read shows at the next look.
func (r *certReloader) refresh() {
	stamp, err := r.stamp()
	if err != nil {
		if msg := err.Error(); msg != r.unreadable { // once per distinct problem, not every interval
			r.unreadable = msg
			r.log.Warn("TLS certificate files unreadable; still serving the previous certificate", "cert", r.certFile, "key", r.keyFile, "err", err)
		}
		return
	}
	r.unreadable = ""
	if stamp == r.serving || stamp == r.tried {
		return
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		r.tried = stamp
		r.log.Warn("TLS certificate files changed but do not load; still serving the previous certificate", "cert", r.certFile, "key", r.keyFile, "err", err)
		return
	}
	r.cert, r.serving, r.tried = &cert, stamp, fileStamp{}
	attrs := []any{"cert", r.certFile}
	if cert.Leaf != nil {
		attrs = append(attrs, "subject", cert.Leaf.Subject.String(), "not_after", cert.Leaf.NotAfter)
	}
	r.log.Info("TLS certificate reloaded", attrs...)
}

// maxCertFileBytes bounds what stamp reads of each file (a PEM chain is a few KiB).
const maxCertFileBytes = 1 << 20

func (r *certReloader) stamp() (fileStamp, error) {
	c, err := readBounded(r.certFile)
	if err != nil {
		return fileStamp{}, fmt.Errorf("certificate: %w", err)
	}
	k, err := readBounded(r.keyFile)
	if err != nil {
		return fileStamp{}, fmt.Errorf("key: %w", err)
	}
	return fileStamp{cert: sha256.Sum256(c), key: sha256.Sum256(k)}, nil
}

// readBounded reads path, refusing a file over maxCertFileBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCertFileBytes+1))
	if err == nil && len(b) > maxCertFileBytes {
		err = fmt.Errorf("%s: larger than %d bytes", path, maxCertFileBytes)
	}
	return b, err
}
