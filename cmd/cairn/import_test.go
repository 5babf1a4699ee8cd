package main

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
		{"a plain import deletes nothing (and skips the unchanged file)", tgt("import", dir), "", `^imported 0 files,.*, 1 unchanged\n$`, ""},
		{"gone.txt is still there", tgt("stat", "input/sub/gone.txt"), "", `kind: +file`, ""},
		{"import --delete deletes the two", tgt("import", "--delete", dir), "", `^imported 0 files,.*, 1 unchanged, deleted 2\n$`, ""},
		{"gone.txt is deleted", tgt("stat", "input/sub/gone.txt"), "", "", "NotFound"},
		{"gone-too.txt is deleted", tgt("stat", "input/gone-too.txt"), "", "", "NotFound"},
		{"keep.txt stays", tgt("cat", "input/keep.txt"), "", `^k$`, ""},
		{"another section is untouched", tgt("cat", "outputs/other.txt"), "", `^other$`, ""},
		{"a second import --delete deletes nothing more", tgt("import", "--delete", dir), "", `, deleted 0\n$`, ""},
	})
}

// writeFiles writes name → body under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// generations returns the generation (ETag) of each path under /v1/agents/a/workbenches/w.
func generations(t *testing.T, url string, paths ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range paths {
		resp, err := http.Head(url + "/v1/agents/a/workbenches/w/files/" + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("HEAD %s: %d", p, resp.StatusCode)
		}
		out[p] = resp.Header.Get("ETag")
	}
	return out
}

// TestImportReRunWritesNoNewVersions: a second import of an unchanged directory uploads
// nothing and leaves every generation as it was; a changed file (bytes or executable bit)
// is uploaded; --force uploads every file.
func TestImportReRunWritesNoNewVersions(t *testing.T) {
	url := newTestServer(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "alpha", "sub/b.txt": "beta", "c.sh": "#!/bin/sh\n"})
	tgt := func(args ...string) []string { return append(args, "--agent", "a", "--workbench", "w") }
	paths := []string{"input/a.txt", "input/sub/b.txt", "input/c.sh"}
	runCases(t, url, []cliCase{{"the first import", tgt("import", dir), "", `^imported 3 files`, ""}})
	first := generations(t, url, paths...)
	runCases(t, url, []cliCase{{"a re-run", tgt("import", dir), "", `^imported 0 files,.*, 3 unchanged\n$`, ""}})
	if again := generations(t, url, paths...); !maps.Equal(again, first) {
		t.Fatalf("a re-run of an unchanged import wrote new versions: %v, then %v", first, again)
	}
	writeFiles(t, dir, map[string]string{"a.txt": "ALPHA"})
	if err := os.Chmod(filepath.Join(dir, "c.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	runCases(t, url, []cliCase{{"a re-run after two changes", tgt("import", dir), "", `^imported 2 files,.*, 1 unchanged\n$`, ""}})
	changed := generations(t, url, paths...)
	if changed["input/sub/b.txt"] != first["input/sub/b.txt"] || changed["input/a.txt"] == first["input/a.txt"] || changed["input/c.sh"] == first["input/c.sh"] {
		t.Fatalf("generations %v, then %v: want a.txt and c.sh rewritten, b.txt kept", first, changed)
	}
	runCases(t, url, []cliCase{{"--force uploads everything", tgt("import", "--force", dir), "", `^imported 3 files,[^,]*\)\n$`, ""}})
	for p, g := range generations(t, url, paths...) {
		if g == changed[p] {
			t.Errorf("--force did not write %s", p)
		}
	}
}

// TestImportRetriesUploadsWhoseConnectionBroke: the first PUT of one file is cut off
// mid-body (nothing applied), the first PUT of another is applied but its connection closes
// before the answer; the import retries both, succeeds, and the second file has exactly
// the version the lost answer would have named (the retry's Idempotency-Key replays it).
func TestImportRetriesUploadsWhoseConnectionBroke(t *testing.T) {
	_, inner := testHandler(t)
	const base = "/v1/agents/a/workbenches/w/files/input/"
	var (
		mu                  sync.Mutex
		cutMidBody, lostAns bool
		appliedETag         string
		attempts            = map[string]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || !strings.HasPrefix(r.URL.Path, base) {
			inner.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		attempts[r.URL.Path]++
		first := attempts[r.URL.Path] == 1
		mu.Unlock()
		switch {
		case first && r.URL.Path == base+"cut.bin":
			_, _ = io.ReadFull(r.Body, make([]byte, 1024)) // part of the body, then the connection breaks
			mu.Lock()
			cutMidBody = true
			mu.Unlock()
			dropConnection(t, w)
		case first && r.URL.Path == base+"lost.txt":
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, r) // applied ...
			mu.Lock()
			lostAns, appliedETag = rec.Code == http.StatusCreated, rec.Header().Get("ETag")
			mu.Unlock()
			dropConnection(t, w) // ... but the answer never arrives
		default:
			inner.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB: cut off well before its end
	writeFiles(t, dir, map[string]string{"cut.bin": big, "lost.txt": "applied once", "plain.txt": "p"})
	runCases(t, srv.URL, []cliCase{{"an import through broken connections", []string{"import", dir, "--agent", "a", "--workbench", "w"}, "", `^imported 3 files`, ""}})
	mu.Lock()
	defer mu.Unlock()
	if !cutMidBody || !lostAns || attempts[base+"cut.bin"] != 2 || attempts[base+"lost.txt"] != 2 {
		t.Fatalf("cut mid-body %t, answer lost %t, attempts %v: want both faults and one retry each", cutMidBody, lostAns, attempts)
	}
	got := generations(t, srv.URL, "input/lost.txt", "input/cut.bin")
	if got["input/lost.txt"] != appliedETag {
		t.Fatalf("lost.txt is at %s, the applied write made %s: the retry wrote a second version", got["input/lost.txt"], appliedETag)
	}
	out, err := runCLI(t.Context(), srv.URL, "cat", "input/cut.bin", "--agent", "a", "--workbench", "w")
	if err != nil || out != big {
		t.Fatalf("cut.bin after the retry: %d bytes, %v", len(out), err)
	}
}

// dropConnection closes the connection of w's request without an answer.
func dropConnection(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}
