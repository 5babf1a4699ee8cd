package tidy

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// layer is one row of the import order of docs/architecture.md ("Packages"): the
// packages whose path is one of prefixes (a prefix names that directory and everything
// below it) and the rank that orders the rows. A package may import a package of a
// lower rank, or one of its own row; nothing of a higher rank and nothing of another row
// of the same rank (meta and blob import nothing of each other).
type layer struct {
	name     string
	rank     int
	prefixes []string
}

// layers is the module's import order, lowest first. The longest matching prefix wins,
// so api/server (the node's assembly, which reads ops's configuration) sits above ops,
// while the surfaces beside it in api/ sit below ops (ops takes their defaults).
var layers = []layer{
	{"internal", 0, []string{"internal"}},
	{"meta", 1, []string{"meta"}},
	{"blob", 1, []string{"blob"}},
	{"shard", 2, []string{"shard"}},
	{"workbench", 3, []string{"workbench"}},
	{"surfaces", 4, []string{"api"}},
	{"ops", 5, []string{"ops"}},
	{"assembly", 6, []string{"api/server"}},
	{"bench", 7, []string{"bench"}},
	{"cmd", 8, []string{"cmd"}},
	{"integration", 9, []string{"integration", "scripts"}},
}

// layerOf returns the row of a package directory (slash path relative to the module).
func layerOf(dir string) (layer, bool) {
	var best layer
	bestLen := -1
	for _, l := range layers {
		for _, p := range l.prefixes {
			if (dir == p || strings.HasPrefix(dir, p+"/")) && len(p) > bestLen {
				best, bestLen = l, len(p)
			}
		}
	}
	return best, bestLen >= 0
}

// upwardImports reports every import of a non-test file that goes against layers, and
// every package directory no row holds. mod is the module path.
func upwardImports(files []goFile, mod string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, f := range files {
		if f.test {
			continue
		}
		dir := path.Dir(f.rel)
		from, ok := layerOf(dir)
		if !ok {
			add(fmt.Sprintf("%s: no row of the import order holds this package (internal/tidy/layers_test.go)", dir))
			continue
		}
		for _, imp := range f.file.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil || !strings.HasPrefix(p, mod+"/") {
				continue
			}
			target := strings.TrimPrefix(p, mod+"/")
			to, ok := layerOf(target)
			if !ok || to.name == from.name || to.rank < from.rank {
				continue
			}
			add(fmt.Sprintf("%s (%s, rank %d) imports %s (%s, rank %d)", dir, from.name, from.rank, target, to.name, to.rank))
		}
	}
	sort.Strings(out)
	return out
}

func TestNoPackageImportsUpward(t *testing.T) {
	_, files := repo(t)
	report(t, upwardImports(files, module))
}

func TestUpwardImportsReportsAnImportAgainstTheOrder(t *testing.T) {
	const m = "example.com/m"
	src := func(pkg string, imports ...string) *fstest.MapFile {
		s := "package " + pkg + "\n"
		for _, i := range imports {
			s += "import _ \"" + m + "/" + i + "\"\n"
		}
		return &fstest.MapFile{Data: []byte(s)}
	}
	files := parsed(t, fstest.MapFS{
		"meta/a.go":                src("meta", "blob"),                 // same rank, other row
		"shard/a.go":               src("shard", "meta", "workbench"),   // workbench is above
		"shard/host/a.go":          src("host", "shard"),                // its own row
		"shard/host/a_test.go":     src("host", "workbench/corestest"),  // tests may
		"api/rest/a.go":            src("rest", "workbench", "api/mcp"), // down, and its own row
		"ops/a.go":                 src("ops", "api/rest"),              // surfaces are below ops
		"api/server/a.go":          src("server", "ops", "api/rest"),    // the assembly is above ops
		"workbench/a.go":           src("workbench", "api/rest"),        // surfaces are above
		"elsewhere/a.go":           src("elsewhere"),                    // no row
		"workbench/corestest/a.go": src("corestest", "workbench"),
	})
	wantOffenders(t, upwardImports(files, m),
		"elsewhere: no row",
		"meta (meta, rank 1) imports blob (blob, rank 1)",
		"shard (shard, rank 2) imports workbench",
		"workbench (workbench, rank 3) imports api/rest")
}
