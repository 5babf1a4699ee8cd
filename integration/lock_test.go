package integration

import (
	"strings"
	"testing"

	"github.com/cairnstore/cairn/integration/framework"
)

// TestSecondProcessOnTheSameDataDirFails starts a second `cairn serve` (and a `cairn mcp`
// with an embedded node) on the data directory of a running server: each must exit 1 with
// one error line saying the directory is in use, and the running server must not notice.
// Once the first server stopped, the directory is free again.
func TestSecondProcessOnTheSameDataDirFails(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	srv := framework.StartProcess(t, cairnRaceBin, dataDir)
	u := fileURL(srv.URL, "a", "w", "input/before.txt")
	if r := doHTTP(t, "PUT", u, strings.NewReader("written before")); r.status != 201 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}

	for _, c := range []struct {
		name string
		args []string
		hint string // what else the message must say
	}{
		{"serve", []string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0"}, ""},
		{"mcp", []string{"mcp", "--agent", "a", "--data-dir", dataDir}, "--server"},
	} {
		r := runCLI(t, cliOptions{stdin: strings.NewReader("")}, c.args...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		var errLines []string
		for _, l := range lines {
			if strings.HasPrefix(l, "cairn: ") {
				errLines = append(errLines, l)
			}
		}
		switch {
		case r.code != 1:
			t.Errorf("second %s on a locked data directory: want exit status 1:\n%s", c.name, r)
		case len(errLines) != 1 || !strings.Contains(errLines[0], "data directory is in use") || !strings.Contains(errLines[0], dataDir):
			t.Errorf("second %s: want one error line naming %s and saying the data directory is in use:\n%s", c.name, dataDir, r)
		case c.hint != "" && !strings.Contains(errLines[0], c.hint):
			t.Errorf("second %s: the error should point to %s:\n%s", c.name, c.hint, r)
		case r.stdout != "":
			t.Errorf("second %s wrote to stdout:\n%s", c.name, r)
		case strings.Contains(r.stderr, "cairn is serving"):
			t.Errorf("second %s claims to serve:\n%s", c.name, r)
		}
	}

	// The first server is unaffected: still ready, still serving reads and writes.
	if r := doHTTP(t, "GET", srv.URL+"/readyz", nil); r.status != 200 {
		t.Errorf("first server after the attempts: /readyz %d %s", r.status, r.body)
	}
	if r := doHTTP(t, "GET", u, nil); r.status != 200 || string(r.body) != "written before" {
		t.Errorf("first server after the attempts: GET %d %q", r.status, r.body)
	}
	if r := doHTTP(t, "PUT", fileURL(srv.URL, "a", "w", "input/after.txt"), strings.NewReader("written after")); r.status != 201 {
		t.Errorf("first server after the attempts: PUT %d %s", r.status, r.body)
	}

	// A graceful stop releases the lock: a new process opens the directory with its data.
	srv.Stop()
	srv.Restart()
	if r := doHTTP(t, "GET", fileURL(srv.URL, "a", "w", "input/after.txt"), nil); r.status != 200 || string(r.body) != "written after" {
		t.Errorf("after a restart on the released directory: GET %d %q", r.status, r.body)
	}
}
