package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolCommandsRefuseAnEmptyAgent: every command that takes --agent and --json
// (addOutputFlags) refuses --agent "" as a usage error before it sends anything; the
// server named here does not listen, so a request would fail otherwise.
func TestToolCommandsRefuseAnEmptyAgent(t *testing.T) {
	for _, args := range [][]string{
		{"diff", "w", "--from", "1"},
		{"workbench", "list"},
		{"workbench", "delete", "w"},
		{"usage"},
		{"aggregate"},
		{"catalog"},
		{"find"},
		{"propose", "w", "input/a.txt", "--text", "t"},
		{"proposals", "w"},
		{"decide", "w", "p", "accept"},
		{"search"},
		{"grep", "w", "x"},
		{"commit", "w", "--manifest", "m.json", "--content-digest", "sha256:00"},
		{"snapshot", "w"},
		{"snapshot", "create", "w"},
		{"snapshot", "renew", "w", "1"},
		{"snapshot", "retire", "w", "1"},
		{"snapshot", "list", "w"},
		{"commits", "w"},
		{"restore", "w", "d", "--commit", "c"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, _, err := execCairn(t, append(args, "--agent", "", "--server", "http://127.0.0.1:1")...)
			if code, msg := describeError(err); code != "InvalidArguments" || !strings.Contains(msg, "--agent must not be empty") {
				t.Fatalf("cairn %s --agent \"\": %s: %s; want InvalidArguments naming --agent", strings.Join(args, " "), code, msg)
			}
		})
	}
}

// TestCommitsListsNewestFirstThroughEveryPage: `cairn commits ID` walks every page (one
// commit each with --limit 1) and prints the commits newest first, the head marked; --json
// prints each commit as the server sent it.
func TestCommitsListsNewestFirstThroughEveryPage(t *testing.T) {
	srv := newTestServer(t)
	run := func(args ...string) string {
		t.Helper()
		return cli(t, append(args, "--agent", "a", "--server", srv)...)
	}
	dir := t.TempDir()
	var made []string
	for i, m := range []string{`{"run":1}`, `{"run":2}`, `{"run":3}`} {
		file := filepath.Join(dir, "m.json")
		if err := os.WriteFile(file, []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
		run("put", "--workbench", "w", "outputs/r.txt", file)
		var c struct {
			Identity string `json:"commit_identity"`
		}
		args := []string{"commit", "w", "--manifest", file, "--content-digest", "sha256:" + strings.Repeat("a", 64), "--json"}
		if i > 0 {
			args = append(args, "--replace")
		}
		if err := json.Unmarshal([]byte(run(args...)), &c); err != nil || c.Identity == "" {
			t.Fatalf("commit %d: %v", i, err)
		}
		made = append(made, c.Identity)
	}
	lines := strings.Split(strings.TrimSpace(run("commits", "w", "--limit", "1")), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "COMMIT") {
		t.Fatalf("cairn commits:\n%s", strings.Join(lines, "\n"))
	}
	for i, want := range []string{made[2], made[1], made[0]} {
		fields := strings.Fields(lines[i+1])
		if fields[0] != want || (fields[3] == "*") != (i == 0) {
			t.Errorf("line %d reads %q, want commit %s (head: %v)", i+1, lines[i+1], want, i == 0)
		}
	}
	var first struct {
		Identity string `json:"commit_identity"`
		Head     bool   `json:"head"`
	}
	out := strings.Split(strings.TrimSpace(run("commits", "w", "--json")), "\n")
	if len(out) != 3 || json.Unmarshal([]byte(out[0]), &first) != nil || first.Identity != made[2] || !first.Head {
		t.Errorf("cairn commits --json:\n%s", strings.Join(out, "\n"))
	}
}

// TestCommitsRefusesALimitOutOfRange: `cairn commits --limit` is a page size of 1..100
// (0: the server's); a negative one is refused before any request, naming the flag, not
// taken as the default (the command would print an empty table and exit 0).
func TestCommitsRefusesALimitOutOfRange(t *testing.T) {
	for _, limit := range []string{"-1", "-100"} {
		_, _, err := execCairn(t, "commits", "w", "--limit", limit, "--agent", "a", "--server", "http://127.0.0.1:1")
		if code, msg := describeError(err); code != "InvalidArguments" || !strings.Contains(msg, "--limit") {
			t.Fatalf("cairn commits --limit %s: %s: %s; want InvalidArguments naming --limit", limit, code, msg)
		}
	}
}
