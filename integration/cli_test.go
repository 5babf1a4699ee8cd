package integration

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/integration/framework"
)

// putLine is the stdout of a successful `cairn put`.
var putLine = regexp.MustCompile(`^(created|replaced) (\S+): (\d+) bytes, generation (\d+), (sha256:[0-9a-f]{64})\n$`)

// lsEntry is one parsed line of `cairn ls`.
type lsEntry struct{ kind, size, gen, name string }

func parseLs(t *testing.T, r cliResult) []lsEntry {
	t.Helper()
	var out []lsEntry
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("ls line %q does not have four fields (kind size generation name):\n%s", line, r)
		}
		out = append(out, lsEntry{f[0], f[1], f[2], f[3]})
	}
	return out
}

// TestCLIPutCatLs drives the file commands as a user would: put from a file and from
// stdin, cat, ls and ls -r, the one-line error format with exit status 1, and the
// CAIRN_SERVER / CAIRN_AGENT environment variables.
func TestCLIPutCatLs(t *testing.T) {
	t.Parallel()
	srv := framework.StartProcess(t, cairnRaceBin, t.TempDir())
	srvFlag := "--server=" + srv.URL
	target := []string{"--agent", "cli", "--workbench", "wb"}
	cmd := func(args ...string) []string { return append(append(args, target...), srvFlag) }
	none := cliOptions{}

	// put from a file: the owner-execute bit becomes the executable flag.
	script := []byte("#!/bin/sh\necho hi\n\x00binary tail\xff\n")
	local := filepath.Join(t.TempDir(), "tool.sh")
	if err := os.WriteFile(local, script, 0o755); err != nil {
		t.Fatal(err)
	}
	r := mustCLI(t, none, cmd("put", "input/bin/tool.sh", local)...)
	m := putLine.FindStringSubmatch(r.stdout)
	if m == nil || m[1] != "created" || m[2] != "input/bin/tool.sh" || m[3] != strconv.Itoa(len(script)) ||
		m[5] != fmt.Sprintf("sha256:%x", sha256.Sum256(script)) {
		t.Fatalf("put from a file: want %q, got:\n%s", fmt.Sprintf("created input/bin/tool.sh: %d bytes, generation N, sha256:%x", len(script), sha256.Sum256(script)), r)
	}
	toolGen := m[4]
	if h := doHTTP(t, "HEAD", fileURL(srv.URL, "cli", "wb", "input/bin/tool.sh"), nil); h.header.Get("Cairn-Executable") != "true" || h.header.Get("ETag") != `"`+toolGen+`"` {
		t.Errorf("after put of a 0755 file: Cairn-Executable %q, ETag %q; want true and %q", h.header.Get("Cairn-Executable"), h.header.Get("ETag"), toolGen)
	}

	// put from stdin, with "-" and with FILE absent (then a replace).
	notes := "notes from stdin\nline two\n"
	r = mustCLI(t, cliOptions{stdin: strings.NewReader(notes)}, cmd("put", "input/notes.txt", "-")...)
	if m := putLine.FindStringSubmatch(r.stdout); m == nil || m[1] != "created" || m[3] != strconv.Itoa(len(notes)) {
		t.Fatalf("put from stdin (-):\n%s", r)
	}
	notes2 := "replaced from stdin\n"
	r = mustCLI(t, cliOptions{stdin: strings.NewReader(notes2)}, cmd("put", "input/notes.txt")...)
	if m := putLine.FindStringSubmatch(r.stdout); m == nil || m[1] != "replaced" || m[3] != strconv.Itoa(len(notes2)) {
		t.Fatalf("put from stdin (no FILE) over an existing file: want %q:\n%s", "replaced input/notes.txt: ...", r)
	}
	if h := doHTTP(t, "HEAD", fileURL(srv.URL, "cli", "wb", "input/notes.txt"), nil); h.header.Get("Cairn-Executable") != "false" {
		t.Errorf("put from stdin: Cairn-Executable %q, want false", h.header.Get("Cairn-Executable"))
	}
	mustCLI(t, cliOptions{stdin: strings.NewReader("")}, cmd("put", "outputs/empty.txt", "-")...)

	// cat is byte-exact, including NUL and invalid UTF-8.
	if r := mustCLI(t, none, cmd("cat", "input/bin/tool.sh")...); !bytes.Equal([]byte(r.stdout), script) {
		t.Errorf("cat input/bin/tool.sh: got %q, want %q", r.stdout, script)
	}
	if r := mustCLI(t, none, cmd("cat", "input/notes.txt")...); r.stdout != notes2 {
		t.Errorf("cat input/notes.txt: got %q, want %q", r.stdout, notes2)
	}
	if r := mustCLI(t, none, cmd("cat", "outputs/empty.txt")...); r.stdout != "" || r.stderr != "" {
		t.Errorf("cat of an empty file:\n%s", r)
	}

	// ls of the workbench top shows the five sections; ls of a section its children.
	top := parseLs(t, mustCLI(t, none, cmd("ls")...))
	var topNames []string
	for _, e := range top {
		topNames = append(topNames, e.name)
		if e.kind != "dir" || e.size != "-" || e.gen != "-" {
			t.Errorf("ls: section entry %+v, want kind dir, size and generation -", e)
		}
	}
	if want := []string{"input/", "logs/", "metadata/", "outputs/", "scripts/"}; !slices.Equal(topNames, want) {
		t.Errorf("ls of the workbench top: %v, want %v", topNames, want)
	}
	in := parseLs(t, mustCLI(t, none, cmd("ls", "input")...))
	wantIn := []lsEntry{{"dir", "-", "-", "bin/"}, {"file", strconv.Itoa(len(notes2)), "", "notes.txt"}}
	if len(in) != len(wantIn) || in[0] != wantIn[0] || in[1].kind != "file" || in[1].size != wantIn[1].size || in[1].name != "notes.txt" {
		t.Errorf("ls input: %+v, want %+v (any generation)", in, wantIn)
	}
	// ls -r lists everything below DIR, named relative to it; without DIR, from the top.
	rec := parseLs(t, mustCLI(t, none, cmd("ls", "-r", "input")...))
	var recNames []string
	for _, e := range rec {
		recNames = append(recNames, e.name)
		if e.name == "bin/tool.sh" && (e.kind != "file" || e.size != strconv.Itoa(len(script)) || e.gen != toolGen) {
			t.Errorf("ls -r input: %+v, want file, %d bytes, generation %s", e, len(script), toolGen)
		}
	}
	slices.Sort(recNames)
	if want := []string{"bin/", "bin/tool.sh", "notes.txt"}; !slices.Equal(recNames, want) {
		t.Errorf("ls -r input: names %v, want %v", recNames, want)
	}
	var all []string
	for _, e := range parseLs(t, mustCLI(t, none, cmd("ls", "--recursive")...)) {
		all = append(all, e.name)
	}
	for _, want := range []string{"input/", "input/bin/", "input/bin/tool.sh", "input/notes.txt", "outputs/", "outputs/empty.txt", "logs/"} {
		if !slices.Contains(all, want) {
			t.Errorf("ls -r of the whole workbench lacks %q: %v", want, all)
		}
	}

	// Errors: one line "cairn: <Code>: <message>" on stderr, nothing on stdout, exit 1.
	for _, c := range []struct {
		name string
		opts cliOptions
		args []string
		code string
	}{
		{"cat of a missing file", none, cmd("cat", "input/missing.txt"), "NotFound"},
		{"ls of a missing workbench", none, []string{"ls", "--agent", "cli", "--workbench", "nope", srvFlag}, "NotFound"},
		{"ls of a file", none, cmd("ls", "input/notes.txt"), "NotDirectory"},
		{"create-only put over an existing file", cliOptions{stdin: strings.NewReader("x")}, cmd("put", "--if-none-match", "input/notes.txt"), "AlreadyExists"},
		{"put with a stale --if-match", cliOptions{stdin: strings.NewReader("x")}, cmd("put", "--if-match", "1", "input/notes.txt"), "Conflict"},
		{"put of a missing local file", none, cmd("put", "input/x", filepath.Join(t.TempDir(), "absent")), "NotFound"},
		{"an unsafe path", cliOptions{stdin: strings.NewReader("x")}, cmd("put", "input/../x"), "InvalidArguments"},
		{"a missing --workbench", none, []string{"cat", "--agent", "cli", "input/notes.txt", srvFlag}, "InvalidArguments"},
		{"an unreachable server", none, []string{"cat", "--agent", "cli", "--workbench", "wb", "input/notes.txt", "--server", "http://127.0.0.1:1"}, "Unavailable"},
	} {
		r := runCLI(t, c.opts, c.args...)
		prefix := "cairn: " + c.code + ": "
		if r.code != 1 || r.stdout != "" || !strings.HasPrefix(r.stderr, prefix) || strings.Count(r.stderr, "\n") != 1 || len(r.stderr) <= len(prefix)+1 {
			t.Errorf("%s: want exit 1, empty stdout and one stderr line %q + message:\n%s", c.name, prefix+"...", r)
		}
	}

	// CAIRN_SERVER and CAIRN_AGENT stand in for --server and --agent; flags win over them.
	env := cliOptions{env: []string{"CAIRN_SERVER=" + srv.URL, "CAIRN_AGENT=cli"}}
	if r := mustCLI(t, env, "cat", "--workbench", "wb", "input/notes.txt"); r.stdout != notes2 {
		t.Errorf("cat with CAIRN_SERVER and CAIRN_AGENT: got %q, want %q", r.stdout, notes2)
	}
	dead := cliOptions{env: []string{"CAIRN_SERVER=http://127.0.0.1:1"}}
	if r := mustCLI(t, dead, cmd("cat", "input/notes.txt")...); r.stdout != notes2 {
		t.Errorf("--server must override CAIRN_SERVER: got %q", r.stdout)
	}
	if r := runCLI(t, dead, "cat", "--agent", "cli", "--workbench", "wb", "input/notes.txt"); r.code != 1 || !strings.HasPrefix(r.stderr, "cairn: Unavailable: ") {
		t.Errorf("CAIRN_SERVER pointing at nothing must be used (and fail as Unavailable):\n%s", r)
	}
	if r := runCLI(t, env, "cat", "--agent", "other", "--workbench", "wb", "input/notes.txt"); r.code != 1 || !strings.HasPrefix(r.stderr, "cairn: NotFound: ") {
		t.Errorf("--agent must override CAIRN_AGENT (agent other has no workbench wb):\n%s", r)
	}
}
