package main

import (
	"crypto/tls"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/internal/certtest"
	"github.com/cairnstore/cairn/internal/freeport"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

func TestHealthProbesTheNodeAndFailsWhenItIsNotWell(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	var ready atomic.Bool
	ready.Store(true)
	srv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: func() bool { return ready.Load() && n.Shard.Ready() }}))
	t.Cleanup(srv.Close)

	out, _, err := execCairn(t, "health", "--server", srv.URL)
	if err != nil || out != srv.URL+"/healthz: ok\n" {
		t.Fatalf("health: %v, output %q; want %s/healthz: ok", err, out, srv.URL)
	}
	out, _, err = execCairn(t, "health", "--ready", "--server", srv.URL)
	if err != nil || out != srv.URL+"/readyz: ready\n" {
		t.Fatalf("health --ready: %v, output %q", err, out)
	}

	ready.Store(false)
	if _, _, err := execCairn(t, "health", "--server", srv.URL); err != nil {
		t.Errorf("health of a live node that is not ready: %v, want ok (liveness is not readiness)", err)
	}
	_, _, err = execCairn(t, "health", "--ready", "--server", srv.URL)
	if code, msg := describeError(err); err == nil || code != "Unavailable" || !strings.Contains(msg, "not serving") {
		t.Errorf("health --ready of a node that is not ready: %v (code %s), want Unavailable naming what fails", err, code)
	}

	addr := freeport.Addr(t)
	_, _, err = execCairn(t, "health", "--server", "http://"+addr)
	if code, _ := describeError(err); err == nil || code != "Unavailable" {
		t.Errorf("health of nothing listening: %v (code %s), want Unavailable", err, code)
	}
	if _, _, err := execCairn(t, "health", "--timeout", "0", "--server", srv.URL); err == nil {
		t.Error("--timeout 0 was accepted")
	}
}

func TestHealthVerifiesTheNodesCertificateWithTheCAFile(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	ca := certtest.NewCA(t, "test CA")
	leaf := ca.Issue(t, "node")
	pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.Key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	if _, _, err := execCairn(t, "health", "--server", srv.URL); err == nil {
		t.Error("health trusted a certificate no system CA signs")
	}
	caFile := ca.WriteCA(t, t.TempDir())
	if out, _, err := execCairn(t, "health", "--server", srv.URL, "--ca-file", caFile); err != nil || !strings.HasSuffix(out, ": ok\n") {
		t.Errorf("health with --ca-file: %v, output %q", err, out)
	}
}

// TestHealthWaitProbesUntilTheNodeIsReady: --wait keeps probing a node that is not ready
// yet and succeeds once it is; a node that stays unready fails the command when --wait
// has passed, with the last probe's error.
func TestHealthWaitProbesUntilTheNodeIsReady(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	var probes atomic.Int32
	const readyAfter = 3
	srv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: func() bool {
		return probes.Add(1) > readyAfter && n.Shard.Ready()
	}}))
	t.Cleanup(srv.Close)

	out, _, err := execCairn(t, "health", "--ready", "--wait", "30s", "--server", srv.URL)
	if err != nil || out != srv.URL+"/readyz: ready\n" {
		t.Fatalf("health --ready --wait: %v, output %q", err, out)
	}
	if got := probes.Load(); got != readyAfter+1 {
		t.Errorf("the node was probed %d times, want %d (until its first ready answer)", got, readyAfter+1)
	}

	never := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: func() bool { return false }}))
	t.Cleanup(never.Close)
	_, _, err = execCairn(t, "health", "--ready", "--wait", "600ms", "--server", never.URL)
	if code, _ := describeError(err); err == nil || code != "Unavailable" {
		t.Errorf("health --wait of a node that never gets ready: %v (code %s), want Unavailable", err, code)
	}
	if _, _, err := execCairn(t, "health", "--wait", "-1s", "--server", srv.URL); err == nil {
		t.Error("a negative --wait was accepted")
	}
}
