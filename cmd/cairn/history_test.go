package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliNode starts a node behind its tenant and admin listeners and returns them with run,
// which runs a cairn command that must succeed and returns its stdout.
func cliNode(t *testing.T) (srv, admin *httptest.Server, run func(args ...string) string) {
	_, h := testHandler(t)
	srv, admin = httptest.NewServer(h), httptest.NewServer(h.Admin())
	t.Cleanup(srv.Close)
	t.Cleanup(admin.Close)
	return srv, admin, func(args ...string) string {
		t.Helper()
		return cli(t, args...)
	}
}

func TestHistoryGenerationReadsAndRetentionThroughTheCLI(t *testing.T) {
	srv, admin, run := cliNode(t)
	dir := t.TempDir()
	for i, body := range []string{"first", "second", "third"} {
		p := filepath.Join(dir, "v"+string(rune('1'+i)))
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		run("put", "--agent", "a", "--workbench", "w", "outputs/r.txt", p, "--server", srv.URL)
	}
	out := run("history", "--agent", "a", "w", "outputs/r.txt", "--json", "--server", srv.URL)
	var gens []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct {
			Generation json.Number `json:"generation"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("history line %q: %v", line, err)
		}
		gens = append(gens, v.Generation.String())
	}
	if len(gens) != 3 {
		t.Fatalf("history:\n%s", out)
	}
	table := run("history", "--agent", "a", "--workbench", "w", "outputs/r.txt", "--limit", "1", "--server", srv.URL)
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], gens[0]+" ") {
		t.Fatalf("history --limit 1:\n%s", table)
	}
	for i, want := range []string{"third", "second", "first"} {
		if got := run("get", "--agent", "a", "--workbench", "w", "outputs/r.txt", "--generation", gens[i], "--server", srv.URL); got != want {
			t.Fatalf("get --generation %s: %q, want %q", gens[i], got, want)
		}
	}
	out = run("admin", "retention", "show", "--agent", "a", "--admin-server", admin.URL)
	if !strings.Contains(out, "the server default") || !strings.Contains(out, "versions      100") {
		t.Fatalf("retention show:\n%s", out)
	}
	out = run("admin", "retention", "set", "--agent", "a", "--versions", "1", "--age", "0s", "--admin-server", admin.URL)
	if !strings.Contains(out, "its own") || !strings.Contains(out, "versions      1\n") || !strings.Contains(out, "age           0s") {
		t.Fatalf("retention set:\n%s", out)
	}
	_, _, err := execCairn(t, "cat", "--agent", "a", "--workbench", "w", "outputs/r.txt", "--generation", gens[2], "--server", srv.URL)
	if code, msg := describeError(err); code != "NotFound" || !strings.Contains(msg, "generation") {
		t.Fatalf("a pruned generation: %s %s", code, msg)
	}
	if _, _, err := execCairn(t, "admin", "retention", "set", "--agent", "a", "--admin-server", admin.URL); err == nil {
		t.Fatal("retention set without a value ran")
	}
	if out := run("admin", "retention", "set", "--agent", "a", "--reset", "--json", "--admin-server", admin.URL); !strings.Contains(out, `"default":true`) {
		t.Fatalf("retention reset: %s", out)
	}
}
