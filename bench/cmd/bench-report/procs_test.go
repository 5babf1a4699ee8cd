//go:build linux

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCairnEnv makes the test binary a stand-in for `cairn serve` (TestFakeCairnServe).
const fakeCairnEnv = "BENCH_REPORT_FAKE_CAIRN"

// TestFakeCairnServe is not a test: run by TestStartCairnStartsAgainWhenAPortWasTaken as
// the child process, it answers /readyz on the address after --listen until killed.
func TestFakeCairnServe(t *testing.T) {
	if os.Getenv(fakeCairnEnv) == "" {
		return
	}
	for i, a := range os.Args {
		if a == "--listen" && i+1 < len(os.Args) {
			_ = http.ListenAndServe(os.Args[i+1], http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		}
	}
	os.Exit(2)
}

// A node whose first start fails because a port it was given was taken (another process
// bound it after freeAddr found it free) is started again on other ports; a node that
// fails otherwise is not, and its error quotes the end of its log.
func TestStartCairnStartsAgainWhenAPortWasTaken(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := func(name, firstError string) string {
		path := filepath.Join(dir, name)
		body := "#!/bin/sh\nif [ ! -e \"$0.ran\" ]; then touch \"$0.ran\"; echo '" + firstError + "' >&2; exit 1; fi\n" +
			"exec '" + self + "' -test.run '^TestFakeCairnServe$' -- \"$@\"\n"
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	env := []string{fakeCairnEnv + "=1"}

	taken := script("taken", "serve: listen tcp 127.0.0.1:40000: bind: address already in use")
	p, url, _, err := startCairn(t.Context(), "taken", taken, dir, env)
	if err != nil {
		t.Fatalf("a node whose first port was taken: %v", err)
	}
	p.stop()
	if url == "" {
		t.Fatal("no URL")
	}

	broken := script("broken", "serve: the data directory is damaged")
	if _, _, _, err := startCairn(t.Context(), "broken", broken, dir, env); err == nil ||
		!strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "its log ends:\nserve: the data directory is damaged") {
		t.Fatalf("a node that fails otherwise: %v", err)
	}
}
