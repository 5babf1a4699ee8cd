package integration

import (
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/integration/framework"
)

// TestCLIChangeAndMetadataCommands drives rm, stat, append, edit, aggregate, catalog and
// find against a real node, with the exit status of each outcome.
func TestCLIChangeAndMetadataCommands(t *testing.T) {
	t.Parallel()
	srv := framework.StartProcess(t, cairnRaceBin, t.TempDir())
	srvFlag := "--server=" + srv.URL
	tgt := func(args ...string) []string { return append(args, "--agent", "more", "--workbench", "wb", srvFlag) }
	root := func(args ...string) []string { return append(args, "--agent", "more", srvFlag) }
	in := func(s string) cliOptions { return cliOptions{stdin: strings.NewReader(s)} }
	match := func(what string, r cliResult, pattern string) {
		t.Helper()
		if !regexp.MustCompile(pattern).MatchString(r.stdout) {
			t.Errorf("%s: stdout does not match %s:\n%s", what, pattern, r)
		}
	}

	match("append creates", mustCLI(t, in("one\n"), tgt("append", "logs/run.log")...), `^created logs/run.log: \+4 bytes, 4 bytes, generation \d+\n$`)
	match("append extends", mustCLI(t, in("two\n"), tgt("append", "logs/run.log", "-")...), `^appended to logs/run.log: \+4 bytes, 8 bytes, generation \d+\n$`)
	match("edit", mustCLI(t, cliOptions{}, tgt("edit", "logs/run.log", "--old", "two", "--new", "deux")...), `^edited logs/run.log: 1 replacement, 9 bytes, generation \d+\n$`)
	if r := mustCLI(t, cliOptions{}, tgt("cat", "logs/run.log")...); r.stdout != "one\ndeux\n" {
		t.Errorf("after append and edit:%s", r)
	}
	wantCLIError(t, "edit of absent text", runCLI(t, cliOptions{}, tgt("edit", "logs/run.log", "--old", "trois", "--new", "3")...), "NoMatch")
	match("stat of a file", mustCLI(t, cliOptions{}, tgt("stat", "logs/run.log")...), `(?s)kind: +file\nsize: +9 bytes\ngeneration: +\d+\n.*digest: +sha256:[0-9a-f]{64}\n`)
	match("stat of a directory", mustCLI(t, cliOptions{}, tgt("stat", "logs")...), `(?s)kind: +directory\nentries: +1\n`)
	match("stat of the workbench", mustCLI(t, cliOptions{}, tgt("stat")...), `(?s)kind: +workbench\nsize: +9 bytes\nfiles: +1\n`)
	wantCLIError(t, "stat of a missing path", runCLI(t, cliOptions{}, tgt("stat", "logs/none")...), "NotFound")

	mustCLI(t, in("a"), tgt("put", "outputs/m1.json", "--field", "accuracy=0.93", "--field", "owner=alice")...)
	mustCLI(t, in("bb"), tgt("put", "outputs/m2.json", "--field", "accuracy=0.81", "--field", "owner=bob")...)
	match("aggregate", mustCLI(t, cliOptions{}, root("aggregate", "wb", "--where", "owner exists", "--group-by", "owner", "--measure", "count", "--measure", "best=max:accuracy", "--sort", "owner")...),
		`^OWNER +COUNT +BEST\nalice +1 +0.93\nbob +1 +0.81\n2 of 2 groups over 2 files\n$`)
	match("catalog", mustCLI(t, cliOptions{}, root("catalog", "wb", "--prefix", "acc")...), `^FIELD +KIND +TYPES +FILES +OPERATORS\naccuracy +attached +number +2 +eq ne in gt gte lt lte exists not_exists\n1 field over 3 files\n$`)
	match("find", mustCLI(t, cliOptions{}, root("find")...), `^wb uncommitted 3 files 12 bytes\n$`)
	// A --where typo is an error naming the condition, not "0 of 0 files".
	r := runCLI(t, cliOptions{}, root("search", "wb", "--where", "acuracy > 0.9")...)
	wantCLIError(t, "a --where typo", r, "InvalidArguments")
	if !strings.Contains(r.stderr, `--where "acuracy > 0.9"`) || !strings.Contains(r.stderr, "accuracy") {
		t.Errorf("the typo error does not name the condition and the fields in scope:\n%s", r)
	}
	match("a real field without a match", mustCLI(t, cliOptions{}, root("search", "wb", "--where", "accuracy > 0.99")...), `^0 of 0 files\n$`)

	match("rm", mustCLI(t, cliOptions{}, tgt("rm", "logs/run.log", "outputs/m2.json")...), `^deleted logs/run.log: generation \d+\ndeleted outputs/m2.json: generation \d+\n$`)
	wantCLIError(t, "rm of a missing file", runCLI(t, cliOptions{}, tgt("rm", "logs/run.log")...), "NotFound")
	if r := mustCLI(t, cliOptions{}, tgt("rm", "-f", "logs/run.log")...); r.stdout != "" {
		t.Errorf("rm -f of a missing file:%s", r)
	}

	// grep(1) exit statuses: 0 on a match, 1 on none (silently), 2 on an error.
	mustCLI(t, in("loss 0.1\n"), tgt("put", "logs/train.log")...)
	if r := runCLI(t, cliOptions{}, root("grep", "wb", "loss", "-r")...); r.code != 0 || r.stdout != "logs/train.log:1:loss 0.1\n" {
		t.Errorf("grep with a match:%s", r)
	}
	if r := runCLI(t, cliOptions{}, root("grep", "wb", "zebra", "-r")...); r.code != 1 || r.stdout != "" || r.stderr != "" {
		t.Errorf("grep without a match: want exit 1 and no output:%s", r)
	}
	wantCLIFailure(t, "grep in a missing workbench", runCLI(t, cliOptions{}, root("grep", "none", "x", "-r")...), "NotFound", 2)
}

// TestCLIOnAnEmbeddedNode: --version, and `admin cluster status` saying the node is no
// cluster.
func TestCLIOnAnEmbeddedNode(t *testing.T) {
	t.Parallel()
	srv := framework.StartProcess(t, cairnBin, t.TempDir())
	r := mustCLI(t, cliOptions{bin: cairnBin}, "--version")
	if !regexp.MustCompile(`^cairn \S.*go1\.\d+.*\n$`).MatchString(r.stdout) {
		t.Errorf("--version:%s", r)
	}
	r = runCLI(t, cliOptions{bin: cairnBin}, "admin", "cluster", "status", "--admin-server", srv.AdminURL)
	wantCLIError(t, "cluster status of an embedded node", r, "InvalidState")
	if !strings.Contains(r.stderr, "is not a cluster node") {
		t.Errorf("cluster status of an embedded node does not say it is not a cluster:\n%s", r)
	}
}

// TestCLIRetriesAcrossARestart: a command sent while the node is down (connection
// refused) succeeds once the node is back, within the client's retry budget.
func TestCLIRetriesAcrossARestart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := framework.StartProcess(t, cairnBin, t.TempDir(), "--listen", addr, "--admin-listen", "127.0.0.1:0")
	srvFlag := "--server=" + srv.URL
	mustCLI(t, cliOptions{bin: cairnBin, stdin: strings.NewReader("kept\n")}, "put", "input/a.txt", "--agent", "r", "--workbench", "w", srvFlag)
	srv.Stop()
	done := make(chan cliResult, 1)
	go func() {
		done <- runCLI(t, cliOptions{bin: cairnBin}, "cat", "input/a.txt", "--agent", "r", "--workbench", "w", srvFlag)
	}()
	// The node's restart (a new process, Raft replay, /readyz) takes far longer than the
	// command's first dial, which is refused: without retries it would exit 1.
	srv.Restart()
	r := <-done
	if r.code != 0 || r.stdout != "kept\n" {
		t.Fatalf("cat across a restart: want the file once the node is back:\n%s", r)
	}
}
