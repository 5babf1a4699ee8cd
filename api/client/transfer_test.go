package client

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// writeTree creates files (path → content) under dir; a path ending in "*" is made
// executable (the "*" is not part of the name).
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		mode := os.FileMode(0o644)
		if name, ok := strings.CutSuffix(p, "*"); ok {
			p, mode = name, 0o755
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns every regular file under dir as slash path → content, with "*"
// appended to the path of owner-executable files, and fails on anything else but
// directories.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		key := filepath.ToSlash(rel)
		if info.Mode()&0o100 != 0 {
			key += "*"
		}
		got[key] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestImportUploadsEveryRegularFileAndSkipsSymlinks(t *testing.T) {
	f, c := newFakeServer(t)
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"a.txt":            "alpha",
		"sub/b.csv":        "x,y\n1,2\n",
		"sub/deep/run.sh*": "#!/bin/sh\n",
		"empty":            "",
	})
	if err := os.Symlink("a.txt", filepath.Join(src, "link-to-file")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(src, "link-to-dir")); err != nil {
		t.Fatal(err)
	}

	var (
		mu                     sync.Mutex
		warnings               []string
		startFiles, startBytes int64
		lastFiles, lastBytes   int64
	)
	stats, err := Import(t.Context(), c, ImportOptions{
		Agent: "a", Workbench: "w", Dir: src, Concurrency: 3,
		Start: func(files, bytes int64) { startFiles, startBytes = files, bytes },
		Progress: func(files, bytes int64) {
			mu.Lock()
			defer mu.Unlock()
			if files < lastFiles || bytes < lastBytes {
				t.Errorf("progress went backwards: %d,%d after %d,%d", files, bytes, lastFiles, lastBytes)
			}
			lastFiles, lastBytes = files, bytes
		},
		Warn: func(msg string) { warnings = append(warnings, msg) },
	})
	if err != nil {
		t.Fatal(err)
	}
	const total = int64(len("alpha") + len("x,y\n1,2\n") + len("#!/bin/sh\n"))
	if stats.Files != 4 || stats.Bytes != total || stats.Duration <= 0 {
		t.Fatalf("stats %+v", stats)
	}
	if startFiles != 4 || startBytes != total || lastFiles != 4 || lastBytes != total {
		t.Fatalf("start %d,%d last progress %d,%d", startFiles, startBytes, lastFiles, lastBytes)
	}

	slices.Sort(warnings)
	want := []string{
		"skipping symlink " + filepath.Join(src, "link-to-dir"),
		"skipping symlink " + filepath.Join(src, "link-to-file"),
	}
	if !slices.Equal(warnings, want) {
		t.Fatalf("warnings %q, want %q", warnings, want)
	}

	for p, want := range map[string]struct {
		body string
		exec bool
	}{
		"input/a.txt":           {"alpha", false},
		"input/sub/b.csv":       {"x,y\n1,2\n", false},
		"input/sub/deep/run.sh": {"#!/bin/sh\n", true},
		"input/empty":           {"", false},
	} {
		got := f.file("a", "w", p)
		if got == nil || string(got.data) != want.body || got.exec != want.exec {
			t.Errorf("%s: got %+v, want %+v", p, got, want)
		}
	}
	if f.file("a", "w", "input/link-to-file") != nil || f.file("a", "w", "input/link-to-dir/b.csv") != nil {
		t.Fatal("a symlink was followed")
	}
	if f.countRequests(http.MethodPut) != 5 { // the workbench, then four files
		t.Fatalf("%d PUTs", f.countRequests(http.MethodPut))
	}
}

func TestImportIntoAnotherSection(t *testing.T) {
	f, c := newFakeServer(t)
	src := t.TempDir()
	writeTree(t, src, map[string]string{"x.py": "print(1)"})
	if _, err := Import(t.Context(), c, ImportOptions{Agent: "a", Workbench: "w", Section: "scripts", Dir: src}); err != nil {
		t.Fatal(err)
	}
	if got := f.file("a", "w", "scripts/x.py"); got == nil {
		t.Fatal("scripts/x.py missing")
	}
}

func TestImportOfAnEmptyDirectoryCreatesTheWorkbench(t *testing.T) {
	f, c := newFakeServer(t)
	stats, err := Import(t.Context(), c, ImportOptions{Agent: "a", Workbench: "w", Dir: t.TempDir()})
	if err != nil || stats.Files != 0 {
		t.Fatalf("stats %+v err %v", stats, err)
	}
	if !f.wbs["a"]["w"] {
		t.Fatal("workbench not created")
	}
}

func TestImportRejectsNamesTheServerWouldRejectBeforeUploading(t *testing.T) {
	f, c := newFakeServer(t)
	src := t.TempDir()
	writeTree(t, src, map[string]string{"ok.txt": "ok", `bad\name.txt`: "bad"})
	_, err := Import(t.Context(), c, ImportOptions{Agent: "a", Workbench: "w", Dir: src})
	if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), `bad\name.txt`) {
		t.Fatalf("got %v, want ErrUnsafePath naming the file", err)
	}
	if n := f.countRequests(http.MethodPut); n != 0 {
		t.Fatalf("%d PUTs before the bad name was found", n)
	}
}

func TestImportStopsAtTheFirstFailureAndNamesTheFile(t *testing.T) {
	f, c := newFakeServer(t)
	f.failPut = func(p string) (int, string) {
		if p == "input/f05" {
			return 413, "PayloadTooLarge"
		}
		return 0, ""
	}
	src := t.TempDir()
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d", i)] = "data"
	}
	writeTree(t, src, files)
	stats, err := Import(t.Context(), c, ImportOptions{Agent: "a", Workbench: "w", Dir: src, Concurrency: 1})
	if ErrorCode(err) != "PayloadTooLarge" || !strings.Contains(err.Error(), "f05") {
		t.Fatalf("got %v", err)
	}
	// One worker, files in name order: exactly the five before f05 completed.
	if stats.Files != 5 || stats.Bytes != 20 {
		t.Fatalf("stats %+v", stats)
	}
}

func TestImportOfAMissingDirectoryFails(t *testing.T) {
	f, c := newFakeServer(t)
	_, err := Import(t.Context(), c, ImportOptions{Agent: "a", Workbench: "w", Dir: filepath.Join(t.TempDir(), "nope")})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
	if f.countRequests(http.MethodPut) != 0 {
		t.Fatal("the workbench was created for a missing directory")
	}
}

func TestImportFollowsASymlinkedRootDirectory(t *testing.T) {
	f, c := newFakeServer(t)
	real := t.TempDir()
	writeTree(t, real, map[string]string{"x": "x"})
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(t.Context(), c, ImportOptions{Agent: "a", Workbench: "w", Dir: link}); err != nil {
		t.Fatal(err)
	}
	if f.file("a", "w", "input/x") == nil {
		t.Fatal("input/x missing")
	}
}

func TestExportRoundTripsAnImport(t *testing.T) {
	_, c := newFakeServer(t)
	tree := map[string]string{
		"a.txt":            "alpha",
		"sub/b.csv":        "x,y\n",
		"sub/deep/run.sh*": "#!/bin/sh\n",
		"empty":            "",
		"odd name %?.txt":  "odd",
	}
	src := t.TempDir()
	writeTree(t, src, tree)
	if _, err := Import(t.Context(), c, ImportOptions{Agent: "a", Workbench: "w", Dir: src}); err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(t.TempDir(), "created", "by", "export")
	var startFiles, lastFiles, lastBytes int64
	stats, err := Export(t.Context(), c, ExportOptions{
		Agent: "a", Workbench: "w", Section: "input", Dir: dst, Concurrency: 2,
		Start:    func(files, _ int64) { startFiles = files },
		Progress: func(files, bytes int64) { lastFiles, lastBytes = files, bytes },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for k, v := range tree {
		want[k] = v
	}
	if got := readTree(t, dst); !equalMaps(got, want) {
		t.Fatalf("exported %v, want %v", got, want)
	}
	if stats.Files != 5 || stats.Bytes != 22 || startFiles != 5 || lastFiles != 5 || lastBytes != 22 {
		t.Fatalf("stats %+v start %d last %d,%d", stats, startFiles, lastFiles, lastBytes)
	}
	info, err := os.Stat(filepath.Join(dst, "a.txt"))
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("a.txt mode %v, %v", info.Mode(), err)
	}
	info, err = os.Stat(filepath.Join(dst, "sub", "deep", "run.sh"))
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("run.sh mode %v, %v", info.Mode(), err)
	}
}

func TestExportOfAllSectionsUsesSubdirectories(t *testing.T) {
	f, c := newFakeServer(t)
	for p, body := range map[string]string{"input/i": "i", "logs/run.log": "log", "outputs/r/x.json": "{}", "loose.txt": "l"} {
		mustPut(t, c, "a", "w", p, body, PutOptions{})
	}
	f.pageCap = 1
	dst := t.TempDir()
	stats, err := Export(t.Context(), c, ExportOptions{Agent: "a", Workbench: "w", Dir: dst})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"input/i": "i", "logs/run.log": "log", "outputs/r/x.json": "{}", "loose.txt": "l"}
	if got := readTree(t, dst); !equalMaps(got, want) || stats.Files != 4 {
		t.Fatalf("exported %v (stats %+v), want %v", got, stats, want)
	}
	for _, s := range sections { // even the empty ones
		if info, err := os.Stat(filepath.Join(dst, s)); err != nil || !info.IsDir() {
			t.Fatalf("section directory %s: %v", s, err)
		}
	}
}

func TestExportReplacesExistingFilesAndLeavesNoTemporaries(t *testing.T) {
	_, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "input/x", "new", PutOptions{})
	dst := t.TempDir()
	writeTree(t, dst, map[string]string{"x": "old", "unrelated": "keep"})
	if _, err := Export(t.Context(), c, ExportOptions{Agent: "a", Workbench: "w", Section: "input", Dir: dst}); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dst); !equalMaps(got, map[string]string{"x": "new", "unrelated": "keep"}) {
		t.Fatalf("got %v", got)
	}
}

func TestExportRefusesRemotePathsThatWouldEscape(t *testing.T) {
	tests := []struct {
		name, entries string
	}{
		{"a dot-dot component",
			`[{"name":"..","section":"input","relative_path":"..","kind":"file","size_bytes":1}]`},
		{"a backslash component",
			`[{"name":"..\\evil","section":"input","relative_path":"..\\evil","kind":"file","size_bytes":1}]`},
		{"a name whose path disagrees with it",
			`[{"name":"x","section":"input","relative_path":"../../x","kind":"file","size_bytes":1}]`},
		{"an absolute relative path",
			`[{"name":"x","section":"input","relative_path":"/x","kind":"file","size_bytes":1}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := listingServer(t, tt.entries)
			parent := t.TempDir()
			dst := filepath.Join(parent, "out")
			_, err := Export(t.Context(), c, ExportOptions{Agent: "a", Workbench: "w", Section: "input", Dir: dst})
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("got %v, want ErrUnsafePath", err)
			}
			entries, _ := os.ReadDir(parent)
			if len(entries) != 1 {
				t.Fatalf("something was written next to the destination: %v", entries)
			}
			if got := readTree(t, dst); len(got) != 0 {
				t.Fatalf("files written: %v", got)
			}
		})
	}
}

func TestExportDoesNotFollowASymlinkOutOfTheDestination(t *testing.T) {
	_, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "input/x", "payload", PutOptions{})
	outside := t.TempDir()
	dst := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dst, "input")); err != nil {
		t.Fatal(err)
	}
	_, err := Export(t.Context(), c, ExportOptions{Agent: "a", Workbench: "w", Dir: dst})
	if err == nil {
		t.Fatal("export wrote through a symlink leaving the destination")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote outside the destination: %v", entries)
	}
}

func TestExportVerifiesTheDigest(t *testing.T) {
	f, c := newFakeServer(t)
	mustPut(t, c, "a", "w", "input/x", "payload", PutOptions{})
	f.corrupt = true
	dst := t.TempDir()
	_, err := Export(t.Context(), c, ExportOptions{Agent: "a", Workbench: "w", Section: "input", Dir: dst})
	if err == nil || !strings.Contains(err.Error(), "digest mismatch") || !strings.Contains(err.Error(), "input/x") {
		t.Fatalf("got %v", err)
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 0 {
		t.Fatalf("left behind %v", entries)
	}
}

func TestCheckLocalRel(t *testing.T) {
	tests := []struct {
		rel string
		ok  bool
	}{
		{"a", true},
		{"a/b/c.txt", true},
		{"..a/b..", true},
		{"", false},
		{"/a", false},
		{"a//b", false},
		{"a/./b", false},
		{"a/../b", false},
		{"..", false},
		{`a\b`, false},
		{"a\x00b", false},
		{"a/", false},
	}
	for _, tt := range tests {
		err := checkLocalRel(tt.rel)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrUnsafePath)) {
			t.Errorf("checkLocalRel(%q) = %v, want ok=%v", tt.rel, err, tt.ok)
		}
	}
}

func TestExportWalksAgainAfterReadFenceChanged(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		wantErr  bool
	}{
		{"one fence change is absorbed by a second walk", 1, false},
		{"the last allowed walk succeeds", ListingAttempts - 1, false},
		{"a workbench that keeps changing fails with the retryable code", ListingAttempts, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeServer(t)
			for _, p := range []string{"input/a", "input/b", "input/c"} {
				mustPut(t, c, "a", "w", p, p, PutOptions{})
			}
			f.pageCap = 2
			f.fenceFailures = tt.failures
			dst := t.TempDir()
			stats, err := Export(t.Context(), c, ExportOptions{Agent: "a", Workbench: "w", Section: "input", Dir: dst})
			if tt.wantErr {
				if ErrorCode(err) != "ReadFenceChanged" || !errors.Is(err, ErrWorkbenchKeptChanging) {
					t.Fatalf("got %v", err)
				}
				if stats.Files != 0 || len(readTree(t, dst)) != 0 {
					t.Fatalf("a failed export wrote: stats %+v, tree %v", stats, readTree(t, dst))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if stats.Files != 3 || len(readTree(t, dst)) != 3 {
				t.Fatalf("stats %+v, tree %v", stats, readTree(t, dst))
			}
		})
	}
}

func TestImportRejectsAnUnknownSectionBeforeUploading(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Import(t.Context(), New("http://127.0.0.1:1", nil), ImportOptions{Agent: "a", Workbench: "w", Section: "ouputs", Dir: dir})
	if !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("import into a misspelt section: %v", err)
	}
}
