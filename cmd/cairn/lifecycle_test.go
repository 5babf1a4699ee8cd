package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkbenchListDeleteAndQuotasThroughTheCLI(t *testing.T) {
	srv, admin, run := cliNode(t)
	body := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(body, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("admin", "quota", "set", "a", "--max-files", "2", "--admin-server", admin.URL)
	for _, wb := range []string{"w2", "w1"} {
		run("put", "--agent", "a", "--workbench", wb, "input/f.txt", body, "--server", srv.URL)
	}
	_, _, err := execCairn(t, "put", "--agent", "a", "--workbench", "w3", "input/f.txt", body, "--server", srv.URL)
	if code, msg := describeError(err); code != "ResourceExhausted" || !strings.Contains(msg, "files quota of 2") {
		t.Fatalf("put past the quota: %s %s", code, msg)
	}
	out := run("workbench", "list", "--agent", "a", "--server", srv.URL)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "w1 ") || !strings.HasPrefix(lines[2], "w2 ") {
		t.Fatalf("workbench list:\n%s", out)
	}
	if out := run("workbench", "delete", "w1", "--agent", "a", "--server", srv.URL); out != "deleted workbench w1\n" {
		t.Fatalf("delete: %q", out)
	}
	out = run("usage", "--agent", "a", "--server", srv.URL)
	if !strings.Contains(out, "files        1      2") || !strings.Contains(out, "workbenches  1      none") {
		t.Fatalf("usage:\n%s", out)
	}
	out = run("admin", "quota", "get", "a", "--json", "--admin-server", admin.URL)
	if !strings.Contains(out, `"files":1`) {
		t.Fatalf("quota get: %s", out)
	}
	// --json prints the server's result object as it sent it.
	if out := run("usage", "--agent", "a", "--json", "--server", srv.URL); !strings.HasPrefix(out, `{"status":"success",`) || !strings.Contains(out, `"files":1`) {
		t.Fatalf("usage --json: %s", out)
	}
	if _, _, err := execCairn(t, "admin", "purge", "a", "--admin-server", admin.URL); err == nil {
		t.Fatal("purge without --yes ran")
	}
	if out := run("admin", "purge", "a", "--yes", "--admin-server", admin.URL); !strings.Contains(out, "1 workbenches deleted") {
		t.Fatalf("purge: %q", out)
	}
}
