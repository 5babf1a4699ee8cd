package ops

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/internal/certtest"
)

// TestCheckTLSFilesNamesTheFlagOfAFileThatDoesNotLoad: a mismatched, swapped, missing or
// non-PEM TLS file is a *ConfigError naming its flag (the CLI reports it as
// InvalidArguments, not as a fault of the node).
func TestCheckTLSFilesNamesTheFlagOfAFileThatDoesNotLoad(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, "ops test CA")
	cert, key := ca.Issue(t, "node").Write(t, dir, "node")
	_, otherKey := ca.Issue(t, "other").Write(t, dir, "other")
	caFile := ca.WriteCA(t, dir)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")

	good := DefaultConfig()
	good.TLSCert, good.TLSKey, good.TLSClientCA = cert, key, caFile
	good.PeerTLSCert, good.PeerTLSKey, good.PeerTLSCA = cert, key, caFile
	if err := good.CheckTLSFiles(); err != nil {
		t.Fatalf("matching files: %v", err)
	}
	if err := DefaultConfig().CheckTLSFiles(); err != nil {
		t.Fatalf("no TLS: %v", err)
	}
	tests := []struct {
		name, flag string
		set        func(*Config)
	}{
		{"a key of another certificate", "--tls-cert", func(c *Config) { c.TLSKey = otherKey }},
		{"certificate and key swapped", "--tls-cert", func(c *Config) { c.TLSCert, c.TLSKey = key, cert }},
		{"a certificate that is not PEM", "--tls-cert", func(c *Config) { c.TLSCert = notPEM }},
		{"a missing key", "--tls-cert", func(c *Config) { c.TLSKey = missing }},
		{"a client CA that is not PEM", "--tls-client-ca", func(c *Config) { c.TLSClientCA = notPEM }},
		{"a missing client CA", "--tls-client-ca", func(c *Config) { c.TLSClientCA = missing }},
		{"a peer key of another certificate", "--peer-tls-cert", func(c *Config) { c.PeerTLSKey = otherKey }},
		{"a peer certificate that is not PEM", "--peer-tls-cert", func(c *Config) { c.PeerTLSCert = notPEM }},
		{"a peer CA that is not PEM", "--peer-tls-ca", func(c *Config) { c.PeerTLSCA = notPEM }},
		{"a missing peer CA", "--peer-tls-ca", func(c *Config) { c.PeerTLSCA = missing }},
	}
	for _, tt := range tests {
		c := good
		tt.set(&c)
		err := c.CheckTLSFiles()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Flag() != tt.flag || !strings.HasPrefix(err.Error(), tt.flag+" must") {
			t.Errorf("%s: %v, want a *ConfigError naming %s", tt.name, err, tt.flag)
		}
	}
}
