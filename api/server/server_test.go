package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnstore/cairn/ops"
)

func testConfig(t *testing.T) ops.Config {
	cfg := ops.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	return cfg
}

func TestDataDirIsLockedAndIdentityPersists(t *testing.T) {
	cfg := testConfig(t)
	n, err := Open(t.Context(), cfg, ops.Credentials{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), cfg, ops.Credentials{}, nil); !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("second open: %v, want ErrDataDirLocked", err)
	}
	id1, _ := os.ReadFile(filepath.Join(cfg.DataDir, "node-id"))
	key1, _ := os.ReadFile(filepath.Join(cfg.DataDir, "cursor.key"))
	if len(id1) == 0 || len(key1) != 32 {
		t.Fatalf("node-id %q, cursor key %d bytes", id1, len(key1))
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2, err := Open(t.Context(), cfg, ops.Credentials{}, nil)
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	defer n2.Close()
	id2, _ := os.ReadFile(filepath.Join(cfg.DataDir, "node-id"))
	key2, _ := os.ReadFile(filepath.Join(cfg.DataDir, "cursor.key"))
	if string(id1) != string(id2) || string(key1) != string(key2) {
		t.Fatal("node identity or cursor key changed across a restart")
	}
}

func TestServeAnswersUntilTheContextEnds(t *testing.T) {
	n := openReady(t, testConfig(t), ops.Credentials{})
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- n.Serve(ctx, func(a net.Addr) { addrc <- a }) }()
	addr := <-addrc
	for _, path := range []string{"/readyz", "/healthz", "/metrics", "/v1/openapi.json"} {
		resp, err := http.Get("http://" + addr.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after a graceful shutdown", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
}

func TestInvalidConfigFailsBeforeTouchingTheDisk(t *testing.T) {
	cfg := testConfig(t)
	cfg.DataDir = filepath.Join(cfg.DataDir, "never")
	cfg.InlineMaxBytes = -1
	if _, err := Open(t.Context(), cfg, ops.Credentials{}, nil); err == nil {
		t.Fatal("an invalid config opened a node")
	}
	if _, err := os.Stat(cfg.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the data dir was created: %v", err)
	}
}

// An embedding program's Open checks what `cairn serve` checks before anything opens: a
// TLS file that does not load is the *ops.ConfigError naming its setting, and nothing is
// written to the data directory.
func TestOpenRefusesATLSFileThatDoesNotLoad(t *testing.T) {
	cfg := testConfig(t)
	cfg.DataDir = filepath.Join(cfg.DataDir, "never")
	cfg.TLSCert = filepath.Join(t.TempDir(), "missing.crt")
	cfg.TLSKey = filepath.Join(t.TempDir(), "missing.key")
	n, err := Open(t.Context(), cfg, ops.Credentials{}, nil)
	var ce *ops.ConfigError
	if !errors.As(err, &ce) || ce.Field != "TLSCert" {
		if err == nil {
			n.Close()
		}
		t.Fatalf("open with a missing certificate: %v, want the ConfigError naming TLSCert", err)
	}
	if _, err := os.Stat(cfg.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the data directory after a refused open: %v", err)
	}
}
