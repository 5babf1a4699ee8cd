package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cairn fork, merge and discard: a live fork pins a snapshot; a merge preview lists the
// fork's changes (A/D/M) and the conflicts (C) with the token; a token whose parent
// changed since is a Conflict; --yes --propose-conflicts applies, keeps the parent's side
// of the conflict and proposes the fork's; the merged files read back; discard retires the
// pin and deletes the fork.
func TestForkMergeDiscardCommands(t *testing.T) {
	_, srv := testNode(t)
	in := func(wb string, args ...string) []string { return append(args, "--agent", "a", "--workbench", wb) }
	runCases(t, srv.URL, []cliCase{
		{"a parent file", in("w", "put", "outputs/r.txt", "-"), "r1\n", "", ""},
		{"another", in("w", "put", "outputs/x.txt", "-"), "x1\n", "", ""},
		{"a third, which the fork deletes", in("w", "put", "outputs/gone.txt", "-"), "g\n", "", ""},
		{"a live fork pins a snapshot", []string{"fork", "w", "f", "--agent", "a"}, "",
			`^forked w into f at snapshot:\d+, pinned until the fork is discarded \(3 file\(s\)\)\n$`, ""},
		{"a fork named like a workbench that exists", []string{"fork", "w", "f", "--agent", "a"}, "", "", "AlreadyExists"},
		{"a fork under an idempotency key", []string{"fork", "w", "k", "--idempotency-key", "fk1", "--agent", "a"}, "",
			`^forked w into k at snapshot:\d+, pinned until the fork is discarded \(3 file\(s\)\)\n$`, ""},
		{"retried under it answers the first", []string{"fork", "w", "k", "--idempotency-key", "fk1", "--agent", "a"}, "",
			`^forked w into k at snapshot:\d+, pinned until the fork is discarded \(already, under this idempotency key\) \(3 file\(s\)\)\n$`, ""},
		{"the key with another fork", []string{"fork", "w", "k2", "--idempotency-key", "fk1", "--agent", "a"}, "", "", "InvalidArguments"},
		{"which is discarded", []string{"discard", "k", "--agent", "a"}, "", `^discarded k`, ""},
		{"a bad base is the server's InvalidArguments", []string{"fork", "w", "g", "--at", "yesterday", "--agent", "a"}, "", "", "InvalidArguments"},
		{"the fork changes a file", in("f", "put", "outputs/r.txt", "-"), "r2\n", "", ""},
		{"adds one", in("f", "put", "outputs/new.txt", "-"), "n\n", "", ""},
		{"deletes one", in("f", "rm", "outputs/gone.txt"), "", "", ""},
		{"and changes one the parent changes too", in("f", "put", "outputs/x.txt", "-"), "x-fork\n", "", ""},
		{"the parent's side", in("w", "put", "outputs/x.txt", "-"), "x-parent\n", "", ""},
		{"a merge of a workbench that is not a fork", []string{"merge", "w", "--agent", "a"}, "", "", "InvalidArguments"},
		{"--yes and --token together", []string{"merge", "f", "--yes", "--token", "t", "--agent", "a"}, "", "", "InvalidArguments"},
	})
	out, err := runCLI(t.Context(), srv.URL, "merge", "f", "--agent", "a")
	want := regexp.MustCompile(`^D outputs/gone.txt\nA outputs/new.txt\nM outputs/r.txt\nC outputs/x.txt\n` +
		`preview of 3 change\(s\) and 1 conflict\(s\) from f into w; apply with --token (\S+)\n$`)
	m := want.FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("preview printed %q, %v; want it to match %s", out, err, want)
	}
	runCases(t, srv.URL, []cliCase{
		{"a writer on the parent after the preview", in("w", "put", "outputs/late.txt", "-"), "l\n", "", ""},
		{"makes the token stale", []string{"merge", "f", "--token", m[1], "--agent", "a"}, "", "", "Conflict"},
		{"--yes previews and applies, proposing the conflict",
			[]string{"merge", "f", "--yes", "--propose-conflicts", "--idempotency-key", "m1", "--agent", "a"}, "",
			`^D outputs/gone.txt\nA outputs/new.txt\nM outputs/r.txt\nC outputs/x.txt \(proposed: \S+\)\n` +
				`merged 3 path\(s\) from f into w at generation \d+; 1 conflict\(s\) left as they are\n$`, ""},
		{"the fork's change landed", in("w", "cat", "outputs/r.txt"), "", `^r2\n$`, ""},
		{"its new file", in("w", "cat", "outputs/new.txt"), "", `^n\n$`, ""},
		{"its delete", in("w", "cat", "outputs/gone.txt"), "", "", "NotFound"},
		{"the conflict kept the parent's side", in("w", "cat", "outputs/x.txt"), "", `^x-parent\n$`, ""},
		{"the parent's later file stays", in("w", "cat", "outputs/late.txt"), "", `^l\n$`, ""},
		{"the conflict is a proposal against the parent", []string{"proposals", "w", "--agent", "a"}, "", `outputs/x.txt`, ""},
		{"the same --yes merge under its key answers the first apply",
			[]string{"merge", "f", "--yes", "--idempotency-key", "m1", "--agent", "a"}, "",
			`^D outputs/gone.txt\nA outputs/new.txt\nM outputs/r.txt\nC outputs/x.txt\n` +
				`merged 3 path\(s\) from f into w at generation \d+; 1 conflict\(s\) left as they are\n$`, ""},
		{"a second merge has nothing to merge", []string{"merge", "f", "--yes", "--agent", "a"}, "",
			`^C outputs/x.txt\nnothing to merge from f into w; 1 conflict\(s\) left as they are\n$`, ""},
	})
	snapshots := func() string {
		t.Helper()
		out, err := runCLI(t.Context(), srv.URL, "snapshot", "list", "w", "--agent", "a")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := snapshots(); strings.Count(out, "alive") != 1 {
		t.Fatalf("the parent's snapshots before the discard: %q; want the fork's pin alive", out)
	}
	runCases(t, srv.URL, []cliCase{
		{"discard retires the pin and deletes the fork", []string{"discard", "f", "--idempotency-key", "d1", "--agent", "a"}, "",
			`^discarded f, retired snapshot \d+ of w\n$`, ""},
		{"the fork is gone", in("f", "cat", "outputs/r.txt"), "", "", "NotFound"},
		{"a retried discard under its key answers the first", []string{"discard", "f", "--idempotency-key", "d1", "--agent", "a"}, "",
			`^discarded f \(already, under this idempotency key\)\n$`, ""},
		{"without the key it is NotFound", []string{"discard", "f", "--agent", "a"}, "", "", "NotFound"},
	})
	if out := snapshots(); strings.Contains(out, "alive") {
		t.Fatalf("the parent's snapshots after the discard: %q; want none alive", out)
	}
}

// A merge whose connection breaks after the apply was sent (the node killed with kill -9
// mid-merge) fails saying that whether it took effect is unknown and that sending it again
// under its idempotency key is safe; a merge sent without one says to look first; a commit
// and an rm, which send a key of their own unless given one, name it; a refused
// connection, which sent nothing, says no such thing.
func TestAMergeCutOffAfterItWasSentSaysItsOutcomeIsUnknown(t *testing.T) {
	_, node := testNode(t)
	runCairn(t, node.URL, "put", "outputs/r.txt", "-", "--agent", "a", "--workbench", "w")
	runCairn(t, node.URL, "fork", "w", "f", "--agent", "a")
	runCairn(t, node.URL, "put", "outputs/r.txt", "-", "--agent", "a", "--workbench", "f")
	target, err := url.Parse(node.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if (strings.HasSuffix(r.URL.Path, "/merge") && strings.Contains(string(body), `"token"`)) ||
			strings.HasSuffix(r.URL.Path, "/commit") || r.Method == http.MethodDelete {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close() // the whole request arrived; no answer leaves
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	_, errOut, err := execCairn(t, "--server", srv.URL, "merge", "f", "--yes", "--idempotency-key", "m1", "--agent", "a")
	if err == nil {
		t.Fatal("a merge whose answer never came succeeded")
	}
	if code, msg := describeError(err); code != "Unavailable" || !strings.Contains(msg, "whether it took effect is unknown") ||
		!strings.Contains(msg, "sending it again with --idempotency-key m1 is safe") {
		t.Fatalf("the merge cut off after it was sent: %s: %s (stderr %q)", code, msg, errOut)
	}
	// A merge sent without an idempotency key: the advice must not name one.
	_, _, err = execCairn(t, "--server", srv.URL, "merge", "f", "--yes", "--agent", "a")
	if code, msg := describeError(err); code != "Unavailable" || !strings.Contains(msg, "whether it took effect is unknown; look before sending it again") ||
		strings.Contains(msg, "idempotency") {
		t.Fatalf("the merge without a key cut off after it was sent: %s: %s", code, msg)
	}
	// A commit sends its key, given or its own, and names it.
	manifest := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(manifest, []byte(`{"run":"r1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	commit := []string{"--server", srv.URL, "commit", "w", "--manifest", manifest, "--content-digest", "sha256:" + strings.Repeat("ab", 32), "--agent", "a"}
	_, _, err = execCairn(t, append(commit, "--idempotency-key", "c-1")...)
	if code, msg := describeError(err); code != "Unavailable" || !strings.Contains(msg, "sending it again with --idempotency-key c-1 is safe") {
		t.Fatalf("the commit cut off after it was sent: %s: %s", code, msg)
	}
	_, _, err = execCairn(t, commit...)
	if code, msg := describeError(err); code != "Unavailable" || !strings.Contains(msg, "sending it again with --idempotency-key ") {
		t.Fatalf("the commit cut off after it was sent, without a key given: %s: %s", code, msg)
	}
	// rm sends its delete under a key, given or its own, and names it.
	_, _, err = execCairn(t, "--server", srv.URL, "rm", "outputs/r.txt", "--idempotency-key", "rm-1", "--agent", "a", "--workbench", "w")
	if code, msg := describeError(err); code != "Unavailable" || !strings.Contains(msg, "sending it again with --idempotency-key rm-1 is safe") {
		t.Fatalf("the rm cut off after it was sent: %s: %s", code, msg)
	}
	_, _, err = execCairn(t, "--server", srv.URL, "rm", "outputs/r.txt", "--agent", "a", "--workbench", "w")
	if code, msg := describeError(err); code != "Unavailable" || !strings.Contains(msg, "sending it again with --idempotency-key ") {
		t.Fatalf("the rm cut off after it was sent, without a key given: %s: %s", code, msg)
	}
	srv.Close()
	_, err = http.Post(srv.URL+"/v1/agents/a/workbenches/f/merge", "application/json", strings.NewReader(`{"token":"t"}`))
	if err == nil {
		t.Fatal("a POST to a closed port succeeded")
	}
	if code, msg := describeError(err); code != "Unavailable" || strings.Contains(msg, "unknown") {
		t.Fatalf("a merge to a closed port: %s: %s", code, msg)
	}
}
