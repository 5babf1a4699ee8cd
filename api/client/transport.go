package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
)

// TransportOptions say how a client reaches a server beyond loopback: which CAs sign the
// server's certificate, which certificate the client presents (mutual TLS), and the API
// key it authenticates with. The zero value is a plain client (system CAs, no
// certificate, no key). Its String and LogValue never show the key.
type TransportOptions struct {
	// CAFile is a PEM bundle of the CAs trusted to sign the server's certificate, in
	// place of the system's; "" trusts the system's.
	CAFile string
	// ClientCertFile and ClientKeyFile are the PEM certificate and key presented to a
	// server that asks for one (--tls-client-ca); both or neither.
	ClientCertFile string
	ClientKeyFile  string
	// APIKey is sent as "Authorization: Bearer <APIKey>" with every request to the server
	// (its scheme and host; a redirect elsewhere goes without it); "" sends none. It must be
	// printable ASCII without spaces.
	APIKey string
}

// String shows which options are set, never the key itself.
func (o TransportOptions) String() string {
	key := "unset"
	if o.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("{CAFile:%q ClientCertFile:%q ClientKeyFile:%q APIKey:%s}", o.CAFile, o.ClientCertFile, o.ClientKeyFile, key)
}

// GoString is String, so that %#v does not show the key either.
func (o TransportOptions) GoString() string { return "client.TransportOptions" + o.String() }

// LogValue is String for log/slog.
func (o TransportOptions) LogValue() slog.Value { return slog.StringValue(o.String()) }

// OptionError reports a TransportOptions field that cannot be used; its text names the
// field and the rule, and never holds the API key.
type OptionError struct {
	// Field is the TransportOptions field ("CAFile", "APIKey", ...).
	Field string
	// Rule is the rule it broke, phrased to follow the field name.
	Rule string
	// Err is the underlying error (reading or parsing a file), or nil.
	Err error
}

func (e *OptionError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("client: %s %s: %v", e.Field, e.Rule, e.Err)
	}
	return fmt.Sprintf("client: %s %s", e.Field, e.Rule)
}

func (e *OptionError) Unwrap() error { return e.Err }

// NewHTTPClient returns the *http.Client for New (and for anything else that talks to
// the server at serverURL, such as the MCP proxy) with opts applied: a TLS configuration
// when a CA file or client certificate is given, and the API key on every request to
// serverURL's scheme and host. It otherwise behaves as http.DefaultTransport (proxy from
// the environment, HTTP/2 over TLS) and has no overall timeout, as New asks.
//
// Errors: an *OptionError for an unreadable or malformed file, half a certificate pair,
// an API key that cannot be a header value, or a serverURL that is not http(s)://host.
func NewHTTPClient(serverURL string, opts TransportOptions) (*http.Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &OptionError{Field: "server URL", Rule: "must be http(s)://host[:port]"}
	}
	tc, err := opts.tlsConfig()
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(opts.APIKey); i++ {
		if c := opts.APIKey[i]; c <= ' ' || c > '~' {
			return nil, &OptionError{Field: "APIKey", Rule: "must be printable ASCII without spaces"}
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if tc != nil {
		base.TLSClientConfig = tc
	}
	var rt http.RoundTripper = base
	if opts.APIKey != "" {
		rt = &bearer{key: opts.APIKey, scheme: u.Scheme, host: u.Host, next: base}
	}
	return &http.Client{Transport: rt}, nil
}

// tlsConfig returns the client TLS of opts, or nil when opts set none.
func (o TransportOptions) tlsConfig() (*tls.Config, error) {
	if o.CAFile == "" && o.ClientCertFile == "" && o.ClientKeyFile == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, &OptionError{Field: "CAFile", Rule: "must be a readable PEM file", Err: err}
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &OptionError{Field: "CAFile", Rule: "must hold at least one PEM certificate", Err: errors.New(o.CAFile)}
		}
	}
	switch {
	case o.ClientCertFile == "" && o.ClientKeyFile == "":
	case o.ClientCertFile == "" || o.ClientKeyFile == "":
		return nil, &OptionError{Field: "ClientCertFile", Rule: "and ClientKeyFile must be set together"}
	default:
		cert, err := tls.LoadX509KeyPair(o.ClientCertFile, o.ClientKeyFile)
		if err != nil {
			return nil, &OptionError{Field: "ClientCertFile", Rule: "must be a PEM certificate whose private key is ClientKeyFile", Err: err}
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// bearer adds the API key to the requests for one scheme and host that carry no
// Authorization of their own.
type bearer struct {
	key, scheme, host string
	next              http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != b.scheme || r.URL.Host != b.host || r.Header.Get("Authorization") != "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}
