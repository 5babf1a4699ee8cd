package main

import (
	"regexp"
	"strings"
	"testing"
)

// cliCase is one command line and what it must print or fail with.
type cliCase struct {
	name     string
	args     []string
	stdin    string
	out      string // regexp stdout must match; "" for none
	failCode string // the code describeError must give; "" for success
}

func runCases(t *testing.T, url string, cases []cliCase) {
	t.Helper()
	for _, tt := range cases {
		out, _, err := execCairnIn(t.Context(), strings.NewReader(tt.stdin), append([]string{"--server", url}, tt.args...)...)
		code := ""
		if err != nil {
			code, _ = describeError(err)
		}
		if code != tt.failCode {
			t.Fatalf("%s: cairn %s: error %v (code %q), want code %q", tt.name, strings.Join(tt.args, " "), err, code, tt.failCode)
		}
		if tt.out != "" && !regexp.MustCompile(tt.out).MatchString(out) {
			t.Fatalf("%s: cairn %s printed %q, want it to match %s", tt.name, strings.Join(tt.args, " "), out, tt.out)
		}
	}
}

func TestChangeCommands(t *testing.T) {
	url := newTestServer(t)
	tgt := func(args ...string) []string { return append(args, "--agent", "a", "--workbench", "w") }
	runCases(t, url, []cliCase{
		{"append creates a missing file", tgt("append", "logs/run.log"), "one\n", `^created logs/run.log: \+4 bytes, 4 bytes, generation \d+\n$`, ""},
		{"append extends it", tgt("append", "logs/run.log", "-"), "two\n", `^appended to logs/run.log: \+4 bytes, 8 bytes, generation \d+\n$`, ""},
		{"the file holds both appends", tgt("cat", "logs/run.log"), "", `^one\ntwo\n$`, ""},
		{"edit replaces one occurrence", tgt("edit", "logs/run.log", "--old", "two", "--new", "2"), "", `^edited logs/run.log: 1 replacement, 6 bytes, generation \d+\n$`, ""},
		{"edit of absent text is NoMatch", tgt("edit", "logs/run.log", "--old", "three", "--new", "3"), "", "", "NoMatch"},
		{"edit without --new is a usage error", tgt("edit", "logs/run.log", "--old", "one"), "", "", "InvalidArguments"},
		{"edit --new '' deletes the text", tgt("edit", "logs/run.log", "--old", "one\n", "--new", ""), "", `^edited logs/run.log: 1 replacement, 2 bytes`, ""},
		{"edit to the same text changes nothing", tgt("edit", "logs/run.log", "--old", "2", "--new", "2"), "", `^unchanged logs/run.log`, ""},
		{"stat of a file", tgt("stat", "logs/run.log"), "", `(?s)kind: +file\nsize: +2 bytes\ngeneration: +\d+\ncontent type: .*digest: +sha256:[0-9a-f]{64}\n`, ""},
		{"stat of a directory", tgt("stat", "logs"), "", `(?s)kind: +directory\nentries: +1\n`, ""},
		{"stat of the workbench", tgt("stat"), "", `(?s)kind: +workbench\nsize: +2 bytes\nfiles: +1\nentries: +5\n`, ""},
		{"stat --json of a file", tgt("stat", "--json", "logs/run.log"), "", `^\{"path":"logs/run.log","kind":"file","size_bytes":2,`, ""},
		{"stat of a missing path is NotFound", tgt("stat", "logs/nope"), "", "", "NotFound"},
		{"put with a content type holding <, & and >", tgt("put", "logs/typed.txt", "--content-type", `text/plain; x="<&>"`), "x", ``, ""},
		{"stat --json prints <, & and > as the server does", tgt("stat", "--json", "logs/typed.txt"), "", `"content_type":"text/plain; x=\\"<&>\\""`, ""},
		{"rm of the typed file", tgt("rm", "logs/typed.txt"), "", ``, ""},
		{"rm deletes", tgt("rm", "logs/run.log"), "", `^deleted logs/run.log: generation \d+\n$`, ""},
		{"rm of a missing file is NotFound", tgt("rm", "logs/run.log"), "", "", "NotFound"},
		{"rm -f of a missing file succeeds quietly", tgt("rm", "-f", "logs/run.log"), "", `^$`, ""},
		{"rm --if-match takes one path", tgt("rm", "--if-match", "3", "a", "b"), "", "", "InvalidArguments"},
	})
}
