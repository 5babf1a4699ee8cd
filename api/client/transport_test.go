package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/internal/certtest"
)

// tlsServer is an httptest TLS server with a certificate of a new CA; with clientCA it
// requires a client certificate that CA signs. It records the Authorization header of
// every request.
type tlsServer struct {
	*httptest.Server
	caFile string
	mu     sync.Mutex
	auth   []string
}

func (s *tlsServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

func newTLSServer(t *testing.T, clientCA *certtest.CA) *tlsServer {
	t.Helper()
	dir := t.TempDir()
	ca := certtest.NewCA(t, "client test server CA")
	leaf := ca.Issue(t, "server")
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.Key)
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsServer{caFile: ca.WriteCA(t, dir)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"workbench_id":"w","path":"/agents/a/wb/w","sections":[],"created":true}`)
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCA != nil {
		s.TLS.ClientCAs, s.TLS.ClientAuth = clientCA.Pool(), tls.RequireAndVerifyClientCert
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func TestNewHTTPClientReachesATLSServerThroughItsCAAndSendsTheKey(t *testing.T) {
	srv := newTLSServer(t, nil)
	hc, err := NewHTTPClient(srv.URL, TransportOptions{CAFile: srv.caFile, APIKey: "ck_test.secret"})
	if err != nil {
		t.Fatal(err)
	}
	wb, err := New(srv.URL, hc).CreateWorkbench(t.Context(), "a", "w")
	if err != nil || wb.WorkbenchID != "w" {
		t.Fatalf("CreateWorkbench over TLS: %+v, %v", wb, err)
	}
	if got := srv.seen(); len(got) != 1 || got[0] != "Bearer ck_test.secret" {
		t.Fatalf("Authorization headers %q, want one Bearer ck_test.secret", got)
	}

	// Without the CA the server's certificate is not trusted.
	plain, err := NewHTTPClient(srv.URL, TransportOptions{APIKey: "ck_test.secret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(srv.URL, plain).CreateWorkbench(t.Context(), "a", "w")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("without the CA: %v, want an unknown-authority error", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("the error shows the key: %v", err)
	}
}

func TestNewHTTPClientPresentsTheClientCertificate(t *testing.T) {
	clientCA := certtest.NewCA(t, "client CA")
	srv := newTLSServer(t, clientCA)
	dir := t.TempDir()
	certFile, keyFile := clientCA.Issue(t, "cli").Write(t, dir, "cli")
	strangerCert, strangerKey := certtest.NewCA(t, "stranger").Issue(t, "cli").Write(t, dir, "stranger")
	tests := []struct {
		name       string
		cert, key  string
		wantRefuse bool
	}{
		{"a certificate of the client CA is accepted", certFile, keyFile, false},
		{"no certificate is refused", "", "", true},
		{"a certificate of another CA is refused", strangerCert, strangerKey, true},
	}
	for _, tt := range tests {
		hc, err := NewHTTPClient(srv.URL, TransportOptions{CAFile: srv.caFile, ClientCertFile: tt.cert, ClientKeyFile: tt.key})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		_, err = New(srv.URL, hc).CreateWorkbench(t.Context(), "a", "w")
		if refused := err != nil; refused != tt.wantRefuse {
			t.Errorf("%s: error %v", tt.name, err)
		}
	}
}

func TestTheKeyGoesOnlyToTheServer(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	t.Cleanup(other.Close)
	var own []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		own = append(own, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Redirect(w, r, other.URL+"/x", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	hc, err := NewHTTPClient(srv.URL, TransportOptions{APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(own) != 1 || own[0] != "Bearer k" || len(elsewhere) != 1 || elsewhere[0] != "" {
		t.Fatalf("the server saw %q, the redirect target %q; want the key at the server only", own, elsewhere)
	}
}

func TestNewHTTPClientRefusesOptionsItCannotUse(t *testing.T) {
	dir := t.TempDir()
	junk := certtest.Write(t, filepath.Join(dir, "junk.pem"), []byte("junk"))
	cert, key := certtest.NewCA(t, "ca").Issue(t, "c").Write(t, dir, "c")
	tests := []struct {
		name  string
		url   string
		opts  TransportOptions
		field string
	}{
		{"a missing CA file", "https://h", TransportOptions{CAFile: filepath.Join(dir, "none.pem")}, "CAFile"},
		{"a CA file without a certificate", "https://h", TransportOptions{CAFile: junk}, "CAFile"},
		{"a certificate without its key", "https://h", TransportOptions{ClientCertFile: cert}, "ClientCertFile"},
		{"a key without its certificate", "https://h", TransportOptions{ClientKeyFile: key}, "ClientCertFile"},
		{"a key that is not PEM", "https://h", TransportOptions{ClientCertFile: cert, ClientKeyFile: junk}, "ClientCertFile"},
		{"an API key with a newline", "https://h", TransportOptions{APIKey: "secret\r\nX-Evil: 1"}, "APIKey"},
		{"an API key with a space", "https://h", TransportOptions{APIKey: "se cret"}, "APIKey"},
		{"a server URL without a scheme", "h:7070", TransportOptions{}, "server URL"},
	}
	for _, tt := range tests {
		_, err := NewHTTPClient(tt.url, tt.opts)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Field != tt.field {
			t.Errorf("%s: %v, want an *OptionError about %s", tt.name, err, tt.field)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the key: %v", tt.name, err)
		}
	}
}

func TestTransportOptionsNeverShowTheKey(t *testing.T) {
	o := TransportOptions{CAFile: "ca.pem", APIKey: "ck_abc.supersecret"}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "opts", o)
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), logged.String()} {
		if strings.Contains(s, "supersecret") || !strings.Contains(s, "ca.pem") {
			t.Errorf("%q shows the key or hides the rest", s)
		}
	}
}
