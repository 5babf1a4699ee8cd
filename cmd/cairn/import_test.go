package main

import (
	"os"
	"path/filepath"
	"testing"
)

// import --delete mirrors DIR into the section: files DIR no longer has are deleted, files
// of other sections are untouched, and a plain import deletes nothing.
func TestImportDeleteMirrorsDeletionsWithinTheSection(t *testing.T) {
	url := newTestServer(t)
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("keep.txt", "k")
	write("sub/gone.txt", "g")
	write("gone-too.txt", "g2")
	tgt := func(args ...string) []string { return append(args, "--agent", "a", "--workbench", "w") }
	runCases(t, url, []cliCase{
		{"the first import uploads three files", tgt("import", dir), "", `^imported 3 files`, ""},
		{"a file in another section", tgt("put", "outputs/other.txt", "-"), "other", "", ""},
	})
	if err := os.Remove(filepath.Join(dir, "sub", "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "gone-too.txt")); err != nil {
		t.Fatal(err)
	}
	runCases(t, url, []cliCase{
		{"a plain import deletes nothing", tgt("import", dir), "", `^imported 1 file,`, ""},
		{"gone.txt is still there", tgt("stat", "input/sub/gone.txt"), "", `kind: +file`, ""},
		{"import --delete deletes the two", tgt("import", "--delete", dir), "", `^imported 1 file,.*, deleted 2\n$`, ""},
		{"gone.txt is deleted", tgt("stat", "input/sub/gone.txt"), "", "", "NotFound"},
		{"gone-too.txt is deleted", tgt("stat", "input/gone-too.txt"), "", "", "NotFound"},
		{"keep.txt stays", tgt("cat", "input/keep.txt"), "", `^k$`, ""},
		{"another section is untouched", tgt("cat", "outputs/other.txt"), "", `^other$`, ""},
		{"a second import --delete deletes nothing more", tgt("import", "--delete", dir), "", `, deleted 0\n$`, ""},
	})
}
