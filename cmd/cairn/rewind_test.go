package main

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// rewindNode is a node whose workbench w held outputs/r.txt "a" at snapshot s1 (id 1) and
// holds "b" and outputs/new.txt now, with helpers that write a file and take a snapshot.
func rewindNode(t *testing.T) (srv *httptest.Server, write func(path, body string), snapshot func(name string)) {
	t.Helper()
	n, srv := testNode(t)
	write = func(path, body string) {
		t.Helper()
		if _, err := n.Service.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: strings.NewReader(body), CreateWorkbench: true}); err != nil {
			t.Fatal(err)
		}
	}
	snapshot = func(name string) {
		t.Helper()
		if _, err := n.Service.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: &name}); err != nil {
			t.Fatal(err)
		}
	}
	write("outputs/r.txt", "a\n")
	snapshot("s1")
	write("outputs/r.txt", "b\n")
	write("outputs/new.txt", "n\n")
	return srv, write, snapshot
}

// cairn rewind previews (A/D/M lines, diffs, the token), applies a preview's token, and
// refuses a token whose scope changed since; --yes previews and applies at once.
func TestRewindCommand(t *testing.T) {
	srv, write, _ := rewindNode(t)
	runCases(t, srv.URL, []cliCase{
		{"a preview lists the changes, their diffs and the token", []string{"rewind", "w", "--to", "snapshot:s1", "--diff", "--agent", "a"}, "",
			`(?s)^D outputs/new.txt\n.*M outputs/r.txt\n--- outputs/r.txt@live\n\+\+\+ outputs/r.txt@snapshot:1\n@@ -1 \+1 @@\n-b\n\+a\npreview of 2 change\(s\) to snapshot:1; apply with --token \S+\n$`, ""},
		{"--to is required", []string{"rewind", "w", "--agent", "a"}, "", "", "InvalidArguments"},
		{"a bad target is the server's InvalidArguments", []string{"rewind", "w", "--to", "yesterday", "--agent", "a"}, "", "", "InvalidArguments"},
	})
	out, err := runCLI(t.Context(), srv.URL, "rewind", "w", "--to", "snapshot:s1", "--agent", "a")
	if err != nil {
		t.Fatal(err)
	}
	token := regexp.MustCompile(`--token (\S+)`).FindStringSubmatch(out)[1]
	write("outputs/r.txt", "c\n") // a writer between the preview and the apply
	// The refusal's line names the path that changed, as REST's details.paths does.
	if _, err := runCLI(t.Context(), srv.URL, "rewind", "w", "--to", "snapshot:s1", "--token", token, "--agent", "a"); err == nil {
		t.Fatal("a token whose scope changed since applied")
	} else if code, msg := describeError(err); code != "Conflict" || !strings.HasSuffix(msg, "(changed: outputs/r.txt)") {
		t.Fatalf("a token whose scope changed since: %s: %s, want a Conflict naming outputs/r.txt", code, msg)
	}
	runCases(t, srv.URL, []cliCase{
		{"a token whose scope changed since is a Conflict", []string{"rewind", "w", "--to", "snapshot:s1", "--token", token, "--agent", "a"}, "", "", "Conflict"},
		{"--yes previews and applies", []string{"rewind", "w", "--to", "snapshot:s1", "--yes", "--agent", "a"}, "",
			`^D outputs/new.txt\nM outputs/r.txt\nrewound 2 path\(s\) to snapshot:1 at generation \d+\n$`, ""},
		{"the file is as at the snapshot", []string{"cat", "--agent", "a", "--workbench", "w", "outputs/r.txt"}, "", `^a\n$`, ""},
		{"a second rewind finds nothing to do", []string{"rewind", "w", "--to", "snapshot:s1", "--yes", "--agent", "a"}, "", `^nothing to rewind`, ""},
	})
}

// cairn rewind --yes --idempotency-key K run again (a retry of the same intent: it previews
// again and so holds a new token) prints the first apply again, replayed; the same key
// with another target is refused.
func TestRewindYesRetriedUnderAKeyReplays(t *testing.T) {
	srv, write, snapshot := rewindNode(t)
	apply := []string{"rewind", "w", "--to", "snapshot:s1", "--yes", "--idempotency-key", "k1", "--agent", "a"}
	first, err := runCLI(t.Context(), srv.URL, apply...)
	if err != nil || !regexp.MustCompile(`^D outputs/new.txt\nM outputs/r.txt\nrewound 2 path\(s\) to snapshot:1 at generation \d+\n$`).MatchString(first) {
		t.Fatalf("first apply: %q, %v", first, err)
	}
	again, err := runCLI(t.Context(), srv.URL, apply...)
	if err != nil || again != first {
		t.Fatalf("the retry printed %q, %v; want the first apply's %q", again, err, first)
	}
	if again, err = runCLI(t.Context(), srv.URL, "rewind", "w", "--to", "snapshot:1", "--yes", "--idempotency-key", "k1", "--agent", "a"); err != nil || again != first {
		t.Fatalf("the retry naming the snapshot by id printed %q, %v; want the first apply's %q", again, err, first)
	}
	write("outputs/r.txt", "c\n")
	snapshot("s2")
	write("outputs/r.txt", "d\n")
	for _, other := range [][]string{{"--to", "snapshot:s1", "--prefix", "outputs"}, {"--to", "snapshot:s2"}} {
		args := append([]string{"rewind", "w", "--yes", "--idempotency-key", "k1", "--agent", "a"}, other...)
		if out, err := runCLI(t.Context(), srv.URL, args...); err == nil || !strings.Contains(err.Error(), "idempotency_key") {
			t.Fatalf("the key with %q: %q, %v; want it refused naming idempotency_key", other, out, err)
		}
	}
}
