package ops

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
)

// CheckTLSFiles loads the PEM files the TLS settings name, as the node will at start:
// the --tls-cert/--tls-key pair, the --tls-client-ca bundle and the three --peer-tls-*
// files. It returns nil or one *ConfigError per file that does not load, joined (a
// missing or unreadable file, no PEM data, a key that is not the certificate's), each
// naming the flag: a bad file is the operator's setting, not a fault of the node.
// Validate checks only that the settings go together; this reads the files, so the
// command that starts a node calls it once the configuration loaded.
func (c Config) CheckTLSFiles() error {
	var errs configErrors
	if c.TLSCert != "" && c.TLSKey != "" {
		if _, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey); err != nil {
			errs.add("TLSCert", "must be a PEM certificate whose private key is --tls-key ("+err.Error()+")", c.TLSCert)
		}
	}
	if c.TLSClientCA != "" {
		if rule := checkCABundle(c.TLSClientCA); rule != "" {
			errs.add("TLSClientCA", rule, c.TLSClientCA)
		}
	}
	if c.PeerTLSCert != "" && c.PeerTLSKey != "" {
		if _, err := tls.LoadX509KeyPair(c.PeerTLSCert, c.PeerTLSKey); err != nil {
			errs.add("PeerTLSCert", "must be a PEM certificate whose private key is --peer-tls-key ("+err.Error()+")", c.PeerTLSCert)
		}
	}
	if c.PeerTLSCA != "" {
		if rule := checkCABundle(c.PeerTLSCA); rule != "" {
			errs.add("PeerTLSCA", rule, c.PeerTLSCA)
		}
	}
	return joinConfigErrors(errs)
}

// checkCABundle returns the broken rule of a PEM CA bundle file, or "".
func checkCABundle(path string) string {
	pem, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is shown as the value
		}
		return "must be a readable PEM CA bundle (" + err.Error() + ")"
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return "must hold at least one PEM certificate"
	}
	return ""
}
