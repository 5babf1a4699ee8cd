package main

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/api/mcp"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/internal/certtest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// authRecorder serves h and records the path and Authorization header of every request.
type authRecorder struct {
	h    http.Handler
	mu   sync.Mutex
	seen []string // "path Authorization"
}

func (a *authRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen = append(a.seen, r.URL.Path+" "+r.Header.Get("Authorization"))
	a.mu.Unlock()
	a.h.ServeHTTP(w, r)
}

// requests returns what was recorded and forgets it.
func (a *authRecorder) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.seen
	a.seen = nil
	return s
}

// recordingNode serves an in-process node's REST and MCP (or, with admin, its admin
// routes) behind an authRecorder, on a server the caller starts and the test closes.
func recordingNode(t *testing.T, admin bool) (*authRecorder, *httptest.Server) {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	h := rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready, MCP: mcp.Handler(n.Service, mcp.Options{})})
	rec := &authRecorder{h: h}
	if admin {
		rec.h = h.Admin()
	}
	srv := httptest.NewUnstartedServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv
}

// wantKeyOnEvery fails unless there were requests and each carried "Bearer "+key.
func wantKeyOnEvery(t *testing.T, what string, seen []string, key string) {
	t.Helper()
	if len(seen) == 0 {
		t.Fatalf("%s: no request reached the server", what)
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, " Bearer "+key) {
			t.Fatalf("%s: request %q does not carry the key", what, s)
		}
	}
}

func TestClientCommandsSendTheAPIKey(t *testing.T) {
	rec, srv := recordingNode(t, false)
	srv.Start()
	const key = "ck_cli.flagsecret"
	w := []string{"--agent", "a", "--workbench", "w"}

	args := append([]string{"--server", srv.URL, "--api-key", key, "put", "input/x", "-"}, w...)
	if _, errOut, err := execCairnIn(t.Context(), strings.NewReader("hello\n"), args...); err != nil {
		t.Fatalf("put with --api-key: %v (%s)", err, errOut)
	}
	wantKeyOnEvery(t, "--api-key", rec.requests(), key)

	const envKey = "ck_cli.envsecret"
	t.Setenv("CAIRN_API_KEY", envKey)
	runCairn(t, srv.URL, append([]string{"ls", "-r"}, w...)...)
	wantKeyOnEvery(t, "CAIRN_API_KEY", rec.requests(), envKey)
	// The flag wins over the variable.
	runCairn(t, srv.URL, append([]string{"--api-key", key, "stat", "input/x"}, w...)...)
	wantKeyOnEvery(t, "--api-key over CAIRN_API_KEY", rec.requests(), key)

	// Neither help nor an error shows the key.
	help, _, err := execCairn(t, "--help")
	if err != nil || strings.Contains(help, envKey) || !strings.Contains(help, "--api-key") {
		t.Fatalf("--help: %v, shows the key or lacks --api-key:\n%s", err, help)
	}
	_, stderr, err := execCairn(t, append([]string{"--server", srv.URL, "--api-key", key, "cat", "input/missing"}, w...)...)
	if err == nil {
		t.Fatal("cat of a missing file succeeded")
	}
	if _, msg := describeError(err); strings.Contains(msg, key) || strings.Contains(stderr, key) {
		t.Fatalf("the error shows the key: %s %s", msg, stderr)
	}
}

func TestAdminCommandsSendTheAPIKey(t *testing.T) {
	rec, srv := recordingNode(t, true)
	srv.Start()
	const key = "ck_admin.secret"
	// The node has no collector (404 NotFound): what counts is what the request carried.
	if _, _, err := execCairn(t, "--api-key", key, "admin", "gc", "--dry-run", "--admin-server", srv.URL); err != nil {
		if code, _ := describeError(err); code != "NotFound" {
			t.Fatal(err)
		}
	}
	wantKeyOnEvery(t, "admin gc", rec.requests(), key)
}

func TestMCPProxySendsTheAPIKey(t *testing.T) {
	rec, srv := recordingNode(t, false)
	srv.Start()
	const key = "ck_mcp.secret"
	// The proxy connects (initialize) before it reads stdin; an empty stdin then ends
	// the session.
	out, errOut, err := execCairnIn(t.Context(), strings.NewReader(""), "mcp", "--agent", "a", "--server", srv.URL, "--api-key", key)
	if err != nil {
		t.Fatalf("cairn mcp --server: %v (%s)", err, errOut)
	}
	seen := rec.requests()
	wantKeyOnEvery(t, "cairn mcp --server", seen, key)
	if !strings.HasPrefix(seen[0], "/v1/agents/a/mcp ") {
		t.Fatalf("first request %q, want the agent's MCP endpoint", seen[0])
	}
	if strings.Contains(out+errOut, key) {
		t.Fatal("cairn mcp printed the key")
	}
}

func TestClientCommandsTrustTheCAFileAndPresentTheClientCertificate(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA := certtest.NewCA(t, "cli server CA"), certtest.NewCA(t, "cli client CA")
	leaf := serverCA.Issue(t, "server")
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.Key)
	if err != nil {
		t.Fatal(err)
	}
	rec, srv := recordingNode(t, false)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: clientCA.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	caFile := serverCA.WriteCA(t, dir)
	clientCert, clientKey := clientCA.Issue(t, "cli").Write(t, dir, "cli")
	ls := []string{"ls", "--agent", "a", "--workbench", "w"}

	tests := []struct {
		name  string
		flags []string
		code  string // "" for success
	}{
		{"the CA and a client certificate", []string{"--ca-file", caFile, "--client-cert", clientCert, "--client-key", clientKey}, ""},
		{"the CA without a client certificate", []string{"--ca-file", caFile}, "Unavailable"},
		{"a client certificate without the CA", []string{"--client-cert", clientCert, "--client-key", clientKey}, "Unavailable"},
		{"an unreadable CA file", []string{"--ca-file", filepath.Join(dir, "none.pem")}, "InvalidArguments"},
		{"a certificate without its key", []string{"--ca-file", caFile, "--client-cert", clientCert}, "InvalidArguments"},
	}
	for _, tt := range tests {
		rec.requests()
		_, _, err := execCairn(t, append(append([]string{"--server", srv.URL}, tt.flags...), ls...)...)
		code := ""
		if err != nil {
			code, _ = describeError(err)
		}
		// ls of a missing workbench is NotFound: the request was served.
		if tt.code == "" && code != "NotFound" {
			t.Errorf("%s: %v (code %q), want the request served (NotFound)", tt.name, err, code)
		}
		if tt.code != "" && code != tt.code {
			t.Errorf("%s: %v (code %q), want %s", tt.name, err, code, tt.code)
		}
		if served := len(rec.requests()) > 0; served != (tt.code == "") {
			t.Errorf("%s: the server handled a request: %v", tt.name, served)
		}
	}

	// The variables work as the flags do.
	t.Setenv("CAIRN_CA_FILE", caFile)
	t.Setenv("CAIRN_CLIENT_CERT", clientCert)
	t.Setenv("CAIRN_CLIENT_KEY", clientKey)
	if _, _, err := execCairn(t, append([]string{"--server", srv.URL}, ls...)...); err == nil {
		t.Fatal("ls of a missing workbench succeeded")
	} else if code, _ := describeError(err); code != "NotFound" {
		t.Fatalf("with the variables: %v (code %s), want the request served (NotFound)", err, code)
	}
}

// TestTLSFilesThatDoNotLoadAreInvalidArgumentsNamingTheFlag: a node's TLS file that does
// not load (a key of another certificate, certificate and key swapped, a file that is not
// PEM), and a client's, is a usage error naming the flag, not Internal.
func TestTLSFilesThatDoNotLoadAreInvalidArgumentsNamingTheFlag(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, "cli TLS CA")
	cert, key := ca.Issue(t, "node").Write(t, dir, "node")
	_, otherKey := ca.Issue(t, "other").Write(t, dir, "other")
	caFile := ca.WriteCA(t, dir)
	notPEM := certtest.Write(t, filepath.Join(dir, "not.pem"), []byte("not a certificate\n"))
	serve := func(flags ...string) []string {
		return append([]string{"serve", "--data-dir", filepath.Join(t.TempDir(), "d"), "--listen", "127.0.0.1:0"}, flags...)
	}
	cluster := func(flags ...string) []string {
		return serve(append([]string{"--cluster", "--etcd", "127.0.0.1:1", "--blob", "s3://cairn", "--s3-endpoint", "http://127.0.0.1:1",
			"--peer-listen", "127.0.0.1:0", "--advertise-peer", "127.0.0.1:1"}, flags...)...)
	}
	ls := func(flags ...string) []string {
		return append(append([]string{"--server", "https://127.0.0.1:1"}, flags...), "ls", "--agent", "a", "--workbench", "w")
	}
	tests := []struct {
		name string
		args []string
		flag string
	}{
		{"serve: a key of another certificate", serve("--tls-cert", cert, "--tls-key", otherKey), "--tls-cert must"},
		{"serve: certificate and key swapped", serve("--tls-cert", key, "--tls-key", cert), "--tls-cert must"},
		{"serve: a certificate that is not PEM", serve("--tls-cert", notPEM, "--tls-key", key), "--tls-cert must"},
		{"serve: a client CA that is not PEM", serve("--tls-cert", cert, "--tls-key", key, "--tls-client-ca", notPEM), "--tls-client-ca must"},
		{"serve --cluster: a peer key of another certificate", cluster("--peer-tls-cert", cert, "--peer-tls-key", otherKey, "--peer-tls-ca", caFile), "--peer-tls-cert must"},
		{"serve --cluster: a peer CA that is not PEM", cluster("--peer-tls-cert", cert, "--peer-tls-key", key, "--peer-tls-ca", notPEM), "--peer-tls-ca must"},
		{"mcp: a key of another certificate", []string{"mcp", "--data-dir", t.TempDir(), "--tls-cert", cert, "--tls-key", otherKey}, "--tls-cert must"},
		{"client: a CA file that is not PEM", ls("--ca-file", notPEM), "--ca-file must"},
		{"client: a key of another certificate", ls("--client-cert", cert, "--client-key", otherKey), "--client-cert must"},
		{"client: a certificate without its key", ls("--client-cert", cert), "--client-cert and --client-key must"},
		{"mcp proxy: a CA file that is not PEM", []string{"mcp", "--server", "https://127.0.0.1:1", "--ca-file", notPEM}, "--ca-file must"},
	}
	for _, tt := range tests {
		_, _, err := execCairn(t, tt.args...)
		if err == nil {
			t.Errorf("%s: succeeded", tt.name)
			continue
		}
		if code, msg := describeError(err); code != "InvalidArguments" || !strings.Contains(msg, tt.flag) {
			t.Errorf("%s: %s: %s; want InvalidArguments containing %q", tt.name, code, msg, tt.flag)
		}
	}
}
