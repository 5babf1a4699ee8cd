package mux

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// LoadTLS builds the mutual-TLS config of a peer port (the --peer-tls-cert, --peer-tls-key
// and --peer-tls-ca flags): this node's certificate and key, and the CA bundle that signs
// every node's certificate, used both to verify dialers and to verify the nodes dialled.
// Node certificates carry both extended key usages (server and client authentication) and
// the host or IP of the node's advertised peer address. TLS 1.3 only: every peer runs the
// same Cairn build.
func LoadTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("mux: peer certificate: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("mux: peer CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("mux: peer CA: no PEM certificate in " + caFile)
	}
	return NewTLS(cert, pool), nil
}

// NewTLS is LoadTLS from parsed parts.
func NewTLS(cert tls.Certificate, ca *x509.CertPool) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      ca,
		ClientCAs:    ca,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}
