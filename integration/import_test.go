package integration

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/integration/framework"
)

// fileFact is what a round trip must preserve of one regular file.
type fileFact struct {
	size int64
	sum  [sha256.Size]byte
	exec bool // owner-execute bit
}

// localTree is a scanned local directory.
type localTree struct {
	files    map[string]fileFact // slash path relative to the root → facts
	symlinks []string            // slash paths of symlinks, relative to the root
	bytes    int64               // total size of the regular files
	empty    int                 // zero-byte files
	execs    int                 // executable files
}

// TestImportExportGoSourceTreeRoundTrips imports the Go source tree ($GOROOT/src: about
// 11,500 files, 133 MB, binary testdata, zero-byte files, executables) with `cairn import`,
// exports it again with `cairn export`, and requires every regular file back with the same
// SHA-256 and owner-execute bit, and every symlink skipped with a warning naming it.
//
// $GOROOT/src has no symlinks, so the test imports a mirror of it (hard links, or copies
// across devices) with a few added entries: symlinks to a file, to a directory, dangling
// and deep in the tree, plus names that need escaping in URLs and an executable zero-byte
// file. No directory of $GOROOT/src exceeds one listing page (1,000 entries), so a
// second, small import into another section checks a directory of 2,345 files.
func TestImportExportGoSourceTreeRoundTrips(t *testing.T) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	mirror := filepath.Join(t.TempDir(), "src")
	linked := mirrorTree(t, src, mirror)
	addImportExtras(t, mirror)
	want := scanTree(t, mirror, true)
	if len(want.files) < 5000 || want.bytes < 50e6 {
		t.Fatalf("%s looks too small to be the Go source tree: %d files, %d bytes", src, len(want.files), want.bytes)
	}
	t.Logf("source: %s mirrored (%d hard links) with extras: %d regular files (%d empty, %d executable), %.1f MB, %d symlinks",
		src, linked, len(want.files), want.empty, want.execs, float64(want.bytes)/1e6, len(want.symlinks))

	srv := framework.StartProcess(t, cairnBin, t.TempDir())
	opts := cliOptions{bin: cairnBin, timeout: 8 * time.Minute}

	loadImport := loadAverage()
	imp := mustCLI(t, opts, "import", mirror, "--agent", "a", "--workbench", "goroot", "--server", srv.URL)
	checkSummary(t, imp, "imported", len(want.files), want.bytes)
	checkSymlinkWarnings(t, imp.stderr, mirror, want.symlinks)

	out := filepath.Join(t.TempDir(), "out")
	loadExport := loadAverage()
	exp := mustCLI(t, opts, "export", "--agent", "a", "--workbench", "goroot", "--section", "input", out, "--server", srv.URL)
	checkSummary(t, exp, "exported", len(want.files), want.bytes)
	if exp.stderr != "" {
		t.Errorf("export wrote to stderr (no terminal, no warnings expected):\n%s", exp.stderr)
	}
	compareTrees(t, want, out)
	for _, l := range want.symlinks {
		if _, err := os.Lstat(filepath.Join(out, filepath.FromSlash(l))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("symlink %s of the source exists in the export (Lstat: %v)", l, err)
		}
	}

	mb := float64(want.bytes) / 1e6
	for _, c := range []struct {
		verb string
		r    cliResult
		load string
	}{{"import", imp, loadImport}, {"export", exp, loadExport}} {
		t.Logf("THROUGHPUT cairn %s of the Go source tree: %d files, %.1f MB in %.2f s = %.1f MB/s, %.0f files/s "+
			"(process wall time, concurrency %d, loopback, %d CPUs, load average before: %s; CLI summary: %q)",
			c.verb, len(want.files), mb, c.r.elapsed.Seconds(), mb/c.r.elapsed.Seconds(), float64(len(want.files))/c.r.elapsed.Seconds(),
			client.DefaultConcurrency, runtime.NumCPU(), c.load, strings.TrimSpace(c.r.stdout))
	}

	// Without --section the whole workbench comes back, each section a subdirectory.
	whole := filepath.Join(t.TempDir(), "whole")
	all := mustCLI(t, opts, "export", "--agent", "a", "--workbench", "goroot", whole, "--server", srv.URL)
	checkSummary(t, all, "exported", len(want.files), want.bytes)
	top, err := os.ReadDir(whole)
	if err != nil {
		t.Fatal(err)
	}
	sections := []string{"input", "logs", "metadata", "outputs", "scripts"}
	var names []string
	for _, e := range top {
		names = append(names, e.Name())
		switch {
		case !e.IsDir() || !slices.Contains(sections, e.Name()):
			t.Errorf("whole-workbench export has %q (%v) at the top; want only section directories %v", e.Name(), e.Type(), sections)
		case e.Name() != "input":
			if sub, err := os.ReadDir(filepath.Join(whole, e.Name())); err != nil || len(sub) != 0 {
				t.Errorf("section %s was never written, but its export directory holds %d entries (%v)", e.Name(), len(sub), err)
			}
		}
	}
	if !slices.Contains(names, "input") {
		t.Fatalf("whole-workbench export has no input/ directory; top level: %v", names)
	}
	compareTrees(t, want, filepath.Join(whole, "input"))

	// A directory larger than a listing page, imported into another section: the export's
	// walk must follow the cursors.
	manyRoot := t.TempDir()
	many := filepath.Join(manyRoot, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 2345 {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("f%04d.txt", i)), fmt.Appendf(nil, "file %d\n", i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantMany := scanTree(t, manyRoot, true)
	r := mustCLI(t, opts, "import", manyRoot, "--agent", "a", "--workbench", "many", "--section", "outputs", "--server", srv.URL)
	checkSummary(t, r, "imported", len(wantMany.files), wantMany.bytes)
	outMany := filepath.Join(t.TempDir(), "many-out")
	r = mustCLI(t, opts, "export", "--agent", "a", "--workbench", "many", "--section", "outputs", outMany, "--server", srv.URL)
	checkSummary(t, r, "exported", len(wantMany.files), wantMany.bytes)
	compareTrees(t, wantMany, outMany)
}

// loadAverage returns the 1-minute load average (Linux), to put throughput in context.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// mirrorTree recreates the directory tree src at dst with every regular file hard-linked
// (or copied when linking fails) and symlinks recreated; it returns the number of links.
func mirrorTree(t *testing.T, src, dst string) (links int) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case d.Type().IsRegular():
			if os.Link(p, target) == nil {
				links++
				return nil
			}
			return copyFile(p, target)
		}
		return nil // sockets, devices: not part of a source tree
	})
	if err != nil {
		t.Fatalf("mirror %s: %v", src, err)
	}
	return links
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(to, fi.Mode().Perm())
}

// addImportExtras adds to the mirror what $GOROOT/src lacks: symlinks of every kind and
// names that must be escaped in URLs.
func addImportExtras(t *testing.T, root string) {
	t.Helper()
	x := filepath.Join(root, "zz-cairn-integration")
	deep := filepath.Join(x, "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(deep, 0o755))
	for name, content := range map[string]string{
		"name with spaces & #hash %41 ?query.txt": "escaped name\n",
		"ünïcødé-名前.txt":                          "unicode name\n",
		"plus+semi;colon:equals=comma,.txt":       "punctuation\n",
		"d1/d2/d3/d4/d5/d6/d7/d8/deep.txt":        "deep\n",
	} {
		must(os.WriteFile(filepath.Join(x, filepath.FromSlash(name)), []byte(content), 0o644))
	}
	must(os.WriteFile(filepath.Join(x, "empty-executable"), nil, 0o755))
	must(os.Chmod(filepath.Join(x, "empty-executable"), 0o755))
	must(os.Symlink("../go.mod", filepath.Join(x, "link-to-file")))
	must(os.Symlink("../errors", filepath.Join(x, "link-to-dir")))
	must(os.Symlink("does-not-exist", filepath.Join(x, "dangling-link")))
	must(os.Symlink("../../../../../../../../../go.mod", filepath.Join(deep, "deep-link")))
	must(os.Symlink("../../go.mod", filepath.Join(root, "net", "http", "zz-cairn-link")))
}

// scanTree walks root and records every regular file (hashing it when hash is set) and
// every symlink; anything else but directories fails the test.
func scanTree(t *testing.T, root string, hash bool) localTree {
	t.Helper()
	tree := localTree{files: map[string]fileFact{}}
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			tree.symlinks = append(tree.symlinks, rel)
		case d.IsDir():
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			f := fileFact{size: info.Size(), exec: info.Mode()&0o100 != 0}
			tree.files[rel] = f
			tree.bytes += f.size
			if f.size == 0 {
				tree.empty++
			}
			if f.exec {
				tree.execs++
			}
			paths = append(paths, rel)
		default:
			return fmt.Errorf("%s: unexpected file type %v", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", root, err)
	}
	if hash {
		sums := hashFiles(t, root, paths)
		for i, p := range paths {
			f := tree.files[p]
			f.sum = sums[i]
			tree.files[p] = f
		}
	}
	return tree
}

// hashFiles returns the SHA-256 of each root-relative slash path, hashing a few at once.
func hashFiles(t *testing.T, root string, paths []string) [][sha256.Size]byte {
	t.Helper()
	sums := make([][sha256.Size]byte, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				sums[i], errs[i] = hashFile(filepath.Join(root, filepath.FromSlash(paths[i])))
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("hashing files under %s: %v", root, err)
	}
	return sums
}

func hashFile(p string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(p)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// compareTrees requires dir to hold exactly want's regular files, byte-identical, with the
// same owner-execute bit and mode 0755 (executable) or 0644, and nothing else but
// directories.
func compareTrees(t *testing.T, want localTree, dir string) {
	t.Helper()
	got := scanTree(t, dir, true)
	var problems []string
	for p, w := range want.files {
		g, ok := got.files[p]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing: %s (%d bytes)", p, w.size))
		case g.size != w.size || g.sum != w.sum:
			problems = append(problems, fmt.Sprintf("content differs: %s: got %d bytes sha256 %x, want %d bytes sha256 %x", p, g.size, g.sum, w.size, w.sum))
		case g.exec != w.exec:
			problems = append(problems, fmt.Sprintf("owner-exec bit differs: %s: got %v, want %v", p, g.exec, w.exec))
		}
	}
	for p := range got.files {
		if _, ok := want.files[p]; !ok {
			problems = append(problems, "unexpected file: "+p)
		}
	}
	for _, l := range got.symlinks {
		problems = append(problems, "unexpected symlink: "+l)
	}
	// Exact modes: the export contract is 0755 for executables, 0644 otherwise.
	modeProblems := 0
	for p, g := range got.files {
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		wantMode := fs.FileMode(0o644)
		if g.exec {
			wantMode = 0o755
		}
		if fi.Mode().Perm() != wantMode {
			modeProblems++
			if modeProblems <= 5 {
				problems = append(problems, fmt.Sprintf("mode of %s is %v, want %v", p, fi.Mode().Perm(), wantMode))
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		shown := problems[:min(len(problems), 30)]
		t.Errorf("export %s differs from the source in %d ways (first %d):\n  %s", dir, len(problems), len(shown), strings.Join(shown, "\n  "))
	}
}

// summaryLine is the result line of cairn import/export.
var summaryLine = regexp.MustCompile(`^(imported|exported) (\d+) files?, ([0-9.]+) MB in ([0-9.]+) s \(([0-9.]+) MB/s\)$`)

// checkSummary checks the one stdout line of an import or export against the source.
func checkSummary(t *testing.T, r cliResult, verb string, files int, bytes int64) {
	t.Helper()
	line := strings.TrimSuffix(r.stdout, "\n")
	m := summaryLine.FindStringSubmatch(line)
	if m == nil || m[1] != verb || strings.Contains(line, "\n") {
		t.Fatalf("want one stdout line %q, got:\n%s", verb+" N files, X MB in S s (R MB/s)", r)
	}
	n, _ := strconv.Atoi(m[2])
	mb, _ := strconv.ParseFloat(m[3], 64)
	if n != files {
		t.Errorf("%s reports %d files, the source has %d regular files", verb, n, files)
	}
	if want := fmt.Sprintf("%.1f", float64(bytes)/1e6); m[3] != want {
		t.Errorf("%s reports %.1f MB, the source has %s MB (%d bytes)", verb, mb, want, bytes)
	}
}

// checkSymlinkWarnings requires one stderr warning per symlink of the source, naming it,
// and no other warning or error.
func checkSymlinkWarnings(t *testing.T, stderr, root string, symlinks []string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	used := make([]bool, len(lines))
	for _, s := range symlinks {
		want := "cairn: warning: skipping symlink " + filepath.Join(root, filepath.FromSlash(s))
		i := slices.Index(lines, want)
		if i < 0 {
			t.Errorf("import did not warn about symlink %s: want the stderr line %q", s, want)
			continue
		}
		used[i] = true
	}
	for i, l := range lines {
		if !used[i] {
			t.Errorf("unexpected stderr line from import: %q", l)
		}
	}
	if t.Failed() {
		t.Logf("import stderr:\n%s", stderr)
	}
}
