package integration

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/integration/framework"
)

// Lines the Workbench tool commands print on stdout.
var (
	snapshotLine = regexp.MustCompile(`^(renewed )?snapshot (\d+)( "[^"]*")? of (\S+): (alive|expired|retired|reaped) until (\S+) \((\d+) days\), read version (\d+)\n$`)
	commitLine   = regexp.MustCompile(`^(committed|already committed) (\S+): generation (\d+), identity ([0-9a-f]{64}), tree (sha256:[0-9a-f]{64})\n$`)
	restoreLine  = regexp.MustCompile(`^(restored|already restored) (\S+) at (snapshot \d+|commit [0-9a-f]{64}) into (\S+): (\d+) files, generation (\d+), operation ([0-9a-f]{64})\n$`)
	searchFooter = regexp.MustCompile(`^(\d+) of (\d+) files?(; more with --cursor (\S+))?$`)
	grepMore     = regexp.MustCompile(`^cairn: more matches; continue with --cursor (\S+)\n$`)
)

// wantCLIError checks the one-line error format of a failed command: exit 1, empty
// stdout, one stderr line "cairn: CODE: message".
func wantCLIError(t *testing.T, what string, r cliResult, code string) {
	t.Helper()
	wantCLIFailure(t, what, r, code, 1)
}

// wantCLIFailure is wantCLIError for a command whose failures exit with status exit
// (grep: 2).
func wantCLIFailure(t *testing.T, what string, r cliResult, code string, exit int) {
	t.Helper()
	prefix := "cairn: " + code + ": "
	if r.code != exit || r.stdout != "" || !strings.HasPrefix(r.stderr, prefix) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("%s: want exit %d, empty stdout and one stderr line %q...:\n%s", what, exit, prefix, r)
	}
}

// commitIdentity computes docs/workbench.md, workbench_commit's identity of a manifest already in
// canonical form (compact, keys sorted): what the server must report for it.
func commitIdentity(wb, contentDigest string, canonicalManifest []byte) string {
	return sessionCommitIdentity(wb, contentDigest, fmt.Sprintf("sha256:%x", sha256.Sum256(canonicalManifest)))
}

// TestCLISnapshotCommitRestore drives `cairn snapshot` (create, renew, retire, list),
// `cairn cat/ls --at-snapshot`, `cairn commit` and `cairn restore` against a real server:
// what each prints, --json, replays, and the error line of each failure.
func TestCLISnapshotCommitRestore(t *testing.T) {
	t.Parallel()
	srv := framework.StartProcess(t, cairnRaceBin, t.TempDir())
	srvFlag := "--server=" + srv.URL
	agent := []string{"--agent", "cli"}
	cmd := func(args ...string) []string { return append(append(args, agent...), srvFlag) }
	files := func(args ...string) []string { return cmd(append(args, "--workbench", "wb")...) }
	none := cliOptions{}
	stdin := func(s string) cliOptions { return cliOptions{stdin: strings.NewReader(s)} }

	mustCLI(t, stdin("weights v1\n"), files("put", "outputs/model.bin")...)
	mustCLI(t, stdin("epoch 1\n"), files("put", "logs/train.log")...)

	// snapshot: one summary line; the name and reason show up in the list.
	r := mustCLI(t, none, cmd("snapshot", "wb", "--name", "v1", "--reason", "before tuning", "--metadata", `{"run":7}`)...)
	m := snapshotLine.FindStringSubmatch(r.stdout)
	if m == nil || m[1] != "" || m[3] != ` "v1"` || m[4] != "wb" || m[5] != "alive" || m[7] != "7" {
		t.Fatalf(`snapshot: want "snapshot N "v1" of wb: alive until T (7 days), read version V":%s`, r)
	}
	snapID := m[2]

	// After a change, reads at the snapshot (by name and by id) still see the old state.
	mustCLI(t, stdin("weights v2\n"), files("put", "outputs/model.bin")...)
	mustCLI(t, stdin("late\n"), files("put", "outputs/late.bin")...)
	for _, at := range []string{"v1", snapID} {
		if r := mustCLI(t, none, files("cat", "outputs/model.bin", "--at-snapshot", at)...); r.stdout != "weights v1\n" {
			t.Errorf("cat --at-snapshot %s: %q, want the body at the snapshot", at, r.stdout)
		}
		var names []string
		for _, e := range parseLs(t, mustCLI(t, none, files("ls", "outputs", "--at-snapshot", at)...)) {
			names = append(names, e.name)
		}
		if !slices.Equal(names, []string{"model.bin"}) {
			t.Errorf("ls outputs --at-snapshot %s: %v, want [model.bin] (late.bin came later)", at, names)
		}
	}
	var all []string
	for _, e := range parseLs(t, mustCLI(t, none, files("ls", "-r", "--at-snapshot", "v1")...)) {
		all = append(all, e.name)
	}
	if !slices.Contains(all, "outputs/model.bin") || slices.Contains(all, "outputs/late.bin") {
		t.Errorf("ls -r --at-snapshot v1: %v", all)
	}
	if r := mustCLI(t, none, files("cat", "outputs/model.bin")...); r.stdout != "weights v2\n" {
		t.Errorf("live cat: %q", r.stdout)
	}

	// A workbench named like a subcommand is snapshotted with `snapshot create`.
	mustCLI(t, stdin("x"), cmd("put", "--workbench", "list", "input/x")...)
	r = mustCLI(t, none, cmd("snapshot", "create", "list")...)
	if m := snapshotLine.FindStringSubmatch(r.stdout); m == nil || m[4] != "list" || m[3] != "" {
		t.Errorf("snapshot create list:%s", r)
	}

	r = mustCLI(t, none, cmd("snapshot", "renew", "wb", "v1", "--ttl-days", "30")...)
	if m := snapshotLine.FindStringSubmatch(r.stdout); m == nil || m[1] != "renewed " || m[2] != snapID || m[7] != "30" {
		t.Errorf("snapshot renew wb v1 --ttl-days 30:%s", r)
	}
	r = mustCLI(t, none, cmd("snapshot", "list", "wb")...)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "ID STATE LEASE EXPIRES TTL READ VERSION NAME REASON" {
		t.Fatalf("snapshot list: want a header and one snapshot:%s", r)
	}
	if f := strings.Fields(lines[1]); len(f) != 8 || f[0] != snapID || f[1] != "alive" || f[3] != "30" || f[5] != "v1" || f[6]+" "+f[7] != "before tuning" {
		t.Errorf("snapshot list row %q", lines[1])
	}
	var list struct {
		Status        string `json:"status"`
		SnapshotCount int    `json:"snapshot_count"`
		Snapshots     []struct {
			Annotation struct {
				Metadata map[string]any `json:"metadata"`
			} `json:"annotation"`
		} `json:"snapshots"`
	}
	r = mustCLI(t, none, cmd("snapshot", "list", "wb", "--json")...)
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.Status != "success" || list.SnapshotCount != 1 ||
		list.Snapshots[0].Annotation.Metadata["run"] != float64(7) || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("snapshot list --json (%v):%s", err, r)
	}

	// commit: from a file, then the same from stdin is a replay; the identity is the
	// contract's over the manifest exactly as given.
	manifest := `{"model":"resnet","score":0.93}`
	mf := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(mf, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	r = mustCLI(t, none, cmd("commit", "wb", "--manifest", mf, "--content-digest", digest)...)
	m = commitLine.FindStringSubmatch(r.stdout)
	if want := commitIdentity("wb", digest, []byte(manifest)); m == nil || m[1] != "committed" || m[2] != "wb" || m[4] != want {
		t.Fatalf("commit: want %q:%s", "committed wb: generation G, identity "+want+", tree sha256:…", r)
	}
	identity := m[4]
	r = mustCLI(t, stdin(manifest), cmd("commit", "wb", "--manifest", "-", "--content-digest", digest)...)
	if m := commitLine.FindStringSubmatch(r.stdout); m == nil || m[1] != "already committed" || m[4] != identity {
		t.Errorf("commit replay from stdin:%s", r)
	}
	wantCLIError(t, "a commit with another manifest", runCLI(t, stdin(`{"model":"vit"}`), cmd("commit", "wb", "--manifest", "-", "--content-digest", digest)...), "WorkbenchCommitConflict")
	r = mustCLI(t, stdin(`{"model":"vit"}`), cmd("commit", "wb", "--manifest", "-", "--content-digest", digest, "--replace", "--json")...)
	var cm map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &cm); err != nil || cm["status"] != "success" || cm["replace"] != true ||
		cm["commit_identity"] != commitIdentity("wb", digest, []byte(`{"model":"vit"}`)) {
		t.Errorf("commit --replace --json (%v):%s", err, r)
	}
	if r := mustCLI(t, none, files("cat", "metadata/run_manifest.json")...); !strings.Contains(r.stdout, `"model":"vit"`) {
		t.Errorf("the run manifest after the replace: %s", r.stdout)
	}

	// restore from the snapshot and from the first commit.
	r = mustCLI(t, none, cmd("restore", "wb", "wb-v1", "--snapshot", "v1")...)
	m = restoreLine.FindStringSubmatch(r.stdout)
	if m == nil || m[1] != "restored" || m[2] != "wb" || m[3] != "snapshot "+snapID || m[4] != "wb-v1" || m[5] != "2" {
		t.Fatalf("restore --snapshot v1: want \"restored wb at snapshot %s into wb-v1: 2 files, ...\":%s", snapID, r)
	}
	op := m[7]
	if r := mustCLI(t, none, cmd("cat", "--workbench", "wb-v1", "outputs/model.bin")...); r.stdout != "weights v1\n" {
		t.Errorf("the restored file: %q", r.stdout)
	}
	r = mustCLI(t, none, cmd("restore", "wb", "wb-v1", "--snapshot", snapID)...)
	if m := restoreLine.FindStringSubmatch(r.stdout); m == nil || m[1] != "already restored" || m[7] != op {
		t.Errorf("restore replay (by id):%s", r)
	}
	r = mustCLI(t, none, cmd("restore", "wb", "wb-c1", "--commit", identity, "--json")...)
	var rs map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rs); err != nil || rs["state"] != "complete" || rs["commit_id"] != identity || rs["destination_workbench_id"] != "wb-c1" {
		t.Errorf("restore --commit --json (%v):%s", err, r)
	}
	if r := mustCLI(t, none, cmd("cat", "--workbench", "wb-c1", "outputs/late.bin")...); r.stdout != "late\n" {
		t.Errorf("restored from the commit: %q", r.stdout)
	}

	// retire: then reads at the snapshot fail; a second retire reports the first reason.
	r = mustCLI(t, none, cmd("snapshot", "retire", "wb", "v1", "--reason", "done")...)
	if r.stdout != "retired snapshot "+snapID+" of wb (reason: done)\n" {
		t.Errorf("snapshot retire:%s", r)
	}
	r = mustCLI(t, none, cmd("snapshot", "retire", "wb", snapID, "--reason", "again")...)
	if r.stdout != "snapshot "+snapID+" of wb was already retired (reason: done)\n" {
		t.Errorf("snapshot retire again:%s", r)
	}
	wantCLIError(t, "cat at a retired snapshot", runCLI(t, none, files("cat", "outputs/model.bin", "--at-snapshot", "v1")...), "SnapshotExpired")

	for _, c := range []struct {
		name string
		opts cliOptions
		args []string
		code string
	}{
		{"cat at an unknown snapshot", none, files("cat", "outputs/model.bin", "--at-snapshot", "99"), "SnapshotNotFound"},
		{"ls at an unknown snapshot name", none, files("ls", "--at-snapshot", "nope"), "SnapshotNotFound"},
		{"an empty --at-snapshot", none, files("cat", "outputs/model.bin", "--at-snapshot="), "InvalidArguments"},
		{"a snapshot of a missing workbench", none, cmd("snapshot", "nope"), "NotFound"},
		{"snapshot without a workbench", none, cmd("snapshot"), "InvalidArguments"},
		{"a lease beyond 90 days", none, cmd("snapshot", "wb", "--ttl-days", "91"), "InvalidArguments"},
		{"metadata that is not JSON", none, cmd("snapshot", "wb", "--metadata", "{run:7}"), "InvalidArguments"},
		{"renew of an unknown snapshot", none, cmd("snapshot", "renew", "wb", "42"), "SnapshotNotFound"},
		{"renew of a retired snapshot", none, cmd("snapshot", "renew", "wb", "v1"), "SnapshotExpired"},
		{"retire without a snapshot", none, cmd("snapshot", "retire", "wb"), "InvalidArguments"},
		{"list of a missing workbench", none, cmd("snapshot", "list", "nope"), "NotFound"},
		{"commit without --content-digest", none, cmd("commit", "wb", "--manifest", mf), "InvalidArguments"},
		{"a manifest that is not JSON", stdin("{"), cmd("commit", "wb", "--manifest", "-", "--content-digest", digest), "InvalidArguments"},
		{"a manifest that is not an object", stdin("[1]"), cmd("commit", "wb", "--manifest", "-", "--content-digest", digest), "InvalidArguments"},
		{"a missing manifest file", none, cmd("commit", "wb", "--manifest", filepath.Join(t.TempDir(), "absent"), "--content-digest", digest), "NotFound"},
		{"a malformed content digest", none, cmd("commit", "wb", "--manifest", mf, "--content-digest", "sha256:XYZ"), "InvalidArguments"},
		{"restore without a source point", none, cmd("restore", "wb", "wb-x"), "InvalidArguments"},
		{"restore with both source points", none, cmd("restore", "wb", "wb-x", "--snapshot", "1", "--commit", identity), "InvalidArguments"},
		{"restore into an existing workbench", none, cmd("restore", "wb", "wb-v1", "--commit", identity), "AlreadyExists"},
		{"restore from an unknown commit", none, cmd("restore", "wb", "wb-x", "--commit", strings.Repeat("0", 64)), "NotFound"},
		{"restore from a retired snapshot", none, cmd("restore", "wb", "wb-x", "--snapshot", "v1"), "SnapshotExpired"},
	} {
		wantCLIError(t, c.name, runCLI(t, c.opts, c.args...), c.code)
	}
}

// TestCLISearchAndGrep attaches fields with `cairn put --field` (and Cairn-Field-* over
// REST), finds files with `cairn search` (conditions, sort, facets, pages) and their
// lines with `cairn grep` (recursion, sections, globs, pages).
func TestCLISearchAndGrep(t *testing.T) {
	t.Parallel()
	srv := framework.StartProcess(t, cairnRaceBin, t.TempDir())
	srvFlag := "--server=" + srv.URL
	cmd := func(args ...string) []string { return append(args, "--agent", "cli", srvFlag) }
	none := cliOptions{}
	put := func(wb, path, body string, fields ...string) {
		t.Helper()
		args := cmd("put", "--workbench", wb, path)
		for _, f := range fields {
			args = append(args, "--field", f)
		}
		mustCLI(t, cliOptions{stdin: strings.NewReader(body)}, args...)
	}
	put("run1", "outputs/model.bin", "weights", "accuracy=0.93", "owner=alice", "epochs=12")
	put("run1", "outputs/draft.bin", "draft", "accuracy=0.41", `owner="bob smith"`)
	put("run1", "logs/train.log", "epoch 1 loss 0.5\nepoch 2 LOSS 0.3\nsaved\n")
	put("run1", "logs/deep/eval.txt", "eval loss 0.2\n")
	put("run1", "logs/deep/notes.md", "no loss here? yes: loss\n")
	// The same fields over REST: quoted JSON strings, bare numbers.
	h := doHTTP(t, "PUT", fileURL(srv.URL, "cli", "run2", "outputs/model.bin"), strings.NewReader("w2"),
		"Cairn-Field-Accuracy", "0.88", "Cairn-Field-Owner", `"alice"`)
	if h.status != 201 {
		t.Fatalf("PUT with Cairn-Field-*: %d %s", h.status, h.body)
	}

	// One workbench, a condition and a sort: the fields of both are printed.
	r := mustCLI(t, none, cmd("search", "run1", "--where", "accuracy > 0.3", "--sort", "accuracy:desc", "--facet", "owner")...)
	want := "outputs/model.bin  accuracy=0.93\n" +
		"outputs/draft.bin  accuracy=0.41\n" +
		`facet owner: alice 1, "bob smith" 1` + "\n" +
		"2 of 2 files\n"
	if r.stdout != want {
		t.Errorf("search run1 --where 'accuracy > 0.3' --sort accuracy:desc --facet owner:\nwant:\n%sgot:%s", want, r)
	}
	// The whole agent root: paths are prefixed with their workbench; --field picks what
	// is printed; `in` takes a list.
	r = mustCLI(t, none, cmd("search", "--where", `owner in alice,"bob smith"`, "--where", "accuracy>=0.5", "--field", "owner", "--field", "epochs", "--sort", "artifact.size_bytes")...)
	want = "run2/outputs/model.bin  owner=alice  epochs=null\n" +
		"run1/outputs/model.bin  owner=alice  epochs=12\n" +
		"2 of 2 files\n"
	if r.stdout != want {
		t.Errorf("root-wide search:\nwant:\n%sgot:%s", want, r)
	}
	r = mustCLI(t, none, cmd("search", "run1", "--where", "artifact.ext eq log")...)
	if r.stdout != "logs/train.log  artifact.ext=log\n1 of 1 file\n" {
		t.Errorf("search on a built-in field:%s", r)
	}

	// Pages: --limit caps what is printed and the footer gives the cursor that
	// continues; --limit 0 prints everything.
	for i := range 13 {
		put("many", fmt.Sprintf("outputs/f%02d", i), "x", fmt.Sprintf("idx=%d", i))
	}
	page := func(args ...string) ([]string, []string) {
		t.Helper()
		r := mustCLI(t, none, cmd(append([]string{"search", "many", "--where", "idx gte 0", "--sort", "idx:desc"}, args...)...)...)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		m := searchFooter.FindStringSubmatch(lines[len(lines)-1])
		if m == nil {
			t.Fatalf("no footer:%s", r)
		}
		return lines[:len(lines)-1], m
	}
	hits, foot := page("--limit", "3")
	if len(hits) != 3 || hits[0] != "outputs/f12  idx=12" || foot[1] != "3" || foot[2] != "13" || foot[4] == "" {
		t.Fatalf("--limit 3: hits %q, footer %q", hits, foot[0])
	}
	rest, foot := page("--limit", "0", "--cursor", foot[4])
	if len(rest) != 10 || rest[0] != "outputs/f09  idx=9" || rest[9] != "outputs/f00  idx=0" || foot[0] != "10 of 13 files" {
		t.Errorf("the rest after the cursor: %q, footer %q", rest, foot[0])
	}
	all, foot := page("--limit", "0")
	if len(all) != 13 || foot[0] != "13 of 13 files" {
		t.Errorf("--limit 0: %d hits, footer %q", len(all), foot[0])
	}
	r = mustCLI(t, none, cmd("search", "many", "--where", "idx lt 5", "--json", "--limit", "2")...)
	var sr struct {
		Status     string            `json:"status"`
		MatchCount int               `json:"match_count"`
		Matches    []json.RawMessage `json:"matches"`
		NextCursor string            `json:"next_cursor"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil || sr.Status != "success" || sr.MatchCount != 5 || len(sr.Matches) != 2 || sr.NextCursor == "" {
		t.Errorf("search --json --limit 2 (%v):%s", err, r)
	}

	// grep: recursive, per section, by glob, alternatives; PATH:LINE:TEXT.
	r = mustCLI(t, none, cmd("grep", "run1", "LOSS", "-r")...)
	want = "logs/deep/eval.txt:1:eval loss 0.2\n" +
		"logs/deep/notes.md:1:no loss here? yes: loss\n" +
		"logs/train.log:1:epoch 1 loss 0.5\n" +
		"logs/train.log:2:epoch 2 LOSS 0.3\n"
	if r.stdout != want || r.stderr != "" {
		t.Errorf("grep -r:\nwant:\n%sgot:%s", want, r)
	}
	// No match exits 1 and prints nothing, as grep(1).
	if r := runCLI(t, none, cmd("grep", "run1", "loss")...); r.code != 1 || r.stdout != "" || r.stderr != "" {
		t.Errorf("grep without -r searches only files at the workbench top, and finding nothing exits 1 silently:%s", r)
	}
	if r := mustCLI(t, none, cmd("grep", "run1", "loss", "--section", "logs")...); r.stdout != "logs/train.log:1:epoch 1 loss 0.5\nlogs/train.log:2:epoch 2 LOSS 0.3\n" {
		t.Errorf("grep --section logs (not recursive):%s", r)
	}
	if r := mustCLI(t, none, cmd("grep", "run1", "loss", "-r", "--glob", "*.txt")...); r.stdout != "logs/deep/eval.txt:1:eval loss 0.2\n" {
		t.Errorf("grep --glob '*.txt':%s", r)
	}
	if r := mustCLI(t, none, cmd("grep", "run1", "saved|weights", "-r")...); r.stdout != "logs/train.log:3:saved\noutputs/model.bin:1:weights\n" {
		t.Errorf("grep with alternatives:%s", r)
	}
	r = mustCLI(t, none, cmd("grep", "run1", "loss", "-r", "--limit", "3")...)
	m := grepMore.FindStringSubmatch(r.stderr)
	if strings.Count(r.stdout, "\n") != 3 || m == nil {
		t.Fatalf("grep --limit 3: want 3 lines and a --cursor on stderr:%s", r)
	}
	r = mustCLI(t, none, cmd("grep", "run1", "loss", "-r", "--cursor", m[1])...)
	if r.stdout != "logs/train.log:2:epoch 2 LOSS 0.3\n" || r.stderr != "" {
		t.Errorf("grep --cursor: the fourth match only:%s", r)
	}
	r = mustCLI(t, none, cmd("grep", "run1", "loss", "-r", "--json")...)
	var gr struct {
		Status  string `json:"status"`
		Matches []struct {
			LineNumber int `json:"line_number"`
		} `json:"matches"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &gr); err != nil || gr.Status != "success" || len(gr.Matches) != 4 {
		t.Errorf("grep --json (%v):%s", err, r)
	}

	for _, c := range []struct {
		name string
		args []string
		code string
		exit int
	}{
		{"an unknown operator", cmd("search", "--where", "accuracy between 1"), "InvalidArguments", 1},
		{"a condition without a value", cmd("search", "--where", "accuracy gt"), "InvalidArguments", 1},
		{"a bad sort direction", cmd("search", "--sort", "accuracy:up"), "InvalidArguments", 1},
		{"a reserved field name", cmd("search", "--where", "Accuracy gt 1"), "InvalidArguments", 1},
		{"search in a missing workbench", cmd("search", "nope"), "NotFound", 1},
		{"a --json page over the maximum", cmd("search", "--json", "--limit", "11"), "InvalidArguments", 1},
		{"a field that is not a scalar", append(cmd("put", "--workbench", "run1", "input/x", "--field", "tags=[1]"), "-"), "InvalidArguments", 1},
		{"grep in a missing workbench", cmd("grep", "nope", "x", "-r"), "NotFound", 2},
		{"an empty grep pattern", cmd("grep", "run1", ""), "InvalidArguments", 2},
		{"a grep cursor for other arguments", cmd("grep", "run1", "other", "-r", "--cursor", m[1]), "InvalidArguments", 2},
	} {
		wantCLIFailure(t, c.name, runCLI(t, cliOptions{stdin: strings.NewReader("x")}, c.args...), c.code, c.exit)
	}
}
