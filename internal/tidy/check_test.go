package tidy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The checkers read a tree through fs.FS, so the tests run them on the repository
// (os.DirFS of the module root) and on in-memory fixtures (fstest.MapFS) alike. Each
// returns its offenders as sorted, human-readable lines; none means the tree is tidy.

// goFile is one parsed .go file of the tree.
type goFile struct {
	rel   string // slash path from the tree's root
	test  bool   // a _test.go file
	lines int
	fset  *token.FileSet
	file  *ast.File
}

// skipDir reports whether a directory is outside the tree the rules apply to: hidden
// directories, the ones the go command ignores (testdata, _x), and build output.
func skipDir(name string) bool {
	return name != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin")
}

// goFiles parses every .go file of the tree (comments kept).
func goFiles(fsys fs.FS) ([]goFile, error) {
	var out []goFile
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
		if err != nil {
			return err
		}
		out = append(out, goFile{
			rel:   p,
			test:  strings.HasSuffix(p, "_test.go"),
			lines: bytes.Count(src, []byte("\n")) + boolInt(len(src) > 0 && src[len(src)-1] != '\n'),
			fset:  fset,
			file:  f,
		})
		return nil
	})
	return out, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// longFiles reports the non-test files over limit lines that allow does not list, and
// the entries of allow that no longer name such a file.
func longFiles(files []goFile, limit int, allow map[string]string) []string {
	var out []string
	long := map[string]bool{}
	for _, f := range files {
		if f.test || f.lines <= limit {
			continue
		}
		long[f.rel] = true
		if _, ok := allow[f.rel]; !ok {
			out = append(out, fmt.Sprintf("%s: %d lines, more than %d: split it by concern, or list it with a reason", f.rel, f.lines, limit))
		}
	}
	for rel := range allow {
		if !long[rel] {
			out = append(out, fmt.Sprintf("%s: allowed to be long but is not (or is gone): remove it from the allow-list", rel))
		}
	}
	sort.Strings(out)
	return out
}

// funcKey names a function for the allow-list: its directory, then Recv.Name for a method
// or Name for a function ("workbench.Service.Write").
func funcKey(rel string, fd *ast.FuncDecl) string {
	name := fd.Name.Name
	if fd.Recv != nil && len(fd.Recv.List) == 1 {
		t := fd.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		if g, ok := t.(*ast.IndexExpr); ok { // generic receiver T[P]
			t = g.X
		}
		if g, ok := t.(*ast.IndexListExpr); ok {
			t = g.X
		}
		if id, ok := t.(*ast.Ident); ok {
			name = id.Name + "." + name
		}
	}
	return path.Dir(rel) + "." + name
}

// longFuncs reports the functions and methods of non-test files longer than limit lines
// (from `func` to the closing brace) that allow does not list, and the stale entries of
// allow.
func longFuncs(files []goFile, limit int, allow map[string]string) []string {
	var out []string
	long := map[string]bool{}
	for _, f := range files {
		if f.test {
			continue
		}
		for _, decl := range f.file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := f.fset.Position(fd.End()).Line - f.fset.Position(fd.Pos()).Line + 1
			if n <= limit {
				continue
			}
			key := funcKey(f.rel, fd)
			long[key] = true
			if _, ok := allow[key]; !ok {
				out = append(out, fmt.Sprintf("%s (%s:%d): %d lines, more than %d: split it, or list it with a reason",
					key, f.rel, f.fset.Position(fd.Pos()).Line, n, limit))
			}
		}
	}
	for key := range allow {
		if !long[key] {
			out = append(out, fmt.Sprintf("%s: allowed to be long but is not (or is gone): remove it from the allow-list", key))
		}
	}
	sort.Strings(out)
	return out
}

// typeAllowance lets a type keep more methods than the limit: at most most, for why.
type typeAllowance struct {
	most int
	why  string
}

// bigTypes reports the types whose methods declared in non-test files (value and pointer
// receivers together, "dir.Type") number more than limit and that allow does not list,
// the listed ones that grew past their allowance, and the stale entries of allow: the
// allow-list only shrinks.
func bigTypes(files []goFile, limit int, allow map[string]typeAllowance) []string {
	methods := map[string]int{}
	for _, f := range files {
		if f.test {
			continue
		}
		for _, decl := range f.file.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil {
				key := funcKey(f.rel, fd)
				methods[key[:strings.LastIndexByte(key, '.')]]++
			}
		}
	}
	var out []string
	for typ, n := range methods {
		a, listed := allow[typ]
		switch {
		case n <= limit:
		case !listed:
			out = append(out, fmt.Sprintf("%s: %d methods, more than %d: split it by concern, or list it with a reason", typ, n, limit))
		case n > a.most:
			out = append(out, fmt.Sprintf("%s: %d methods, more than the %d it is allowed: split it rather than grow it", typ, n, a.most))
		}
	}
	for typ := range allow {
		if methods[typ] <= limit {
			out = append(out, fmt.Sprintf("%s: allowed many methods but has %d (or is gone): remove it from the allow-list", typ, methods[typ]))
		}
	}
	sort.Strings(out)
	return out
}

// packageDirs returns the directories holding a non-test .go file: the packages the
// module builds ("." for the root).
func packageDirs(files []goFile) []string {
	var dirs []string
	for _, f := range files {
		if d := path.Dir(f.rel); !f.test && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// missingDocs reports the package directories without a doc.go.
func missingDocs(files []goFile) []string {
	have := map[string]bool{}
	for _, f := range files {
		if path.Base(f.rel) == "doc.go" {
			have[path.Dir(f.rel)] = true
		}
	}
	var out []string
	for _, d := range packageDirs(files) {
		if !have[d] {
			out = append(out, d+": a package without doc.go (what it is for, what it never does, its invariants)")
		}
	}
	return out
}

// mcpTools returns the tool names of the MCP schemas: the top-level keys of every
// api/mcp/schemas/*.json.
func mcpTools(fsys fs.FS) ([]string, error) {
	paths, err := fs.Glob(fsys, "api/mcp/schemas/*.json")
	if err != nil {
		return nil, err
	}
	var tools []string
	for _, p := range paths {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for name := range m {
			tools = append(tools, name)
		}
	}
	sort.Strings(tools)
	return tools, nil
}

// adminRoutePrefix starts every admin route (api/rest/handler.go sends it to the admin
// listener only).
const adminRoutePrefix = "/v1/admin/"

// adminRouteDirs are where admin routes are declared: the admin handler's own routes
// (api/rest/admin.go and the files it dispatches to) and Options.AdminRoutes (api/server).
var adminRouteDirs = []string{"api/rest", "api/server"}

// adminRoutes returns every string literal that names an admin route in the non-test
// files of adminRouteDirs.
func adminRoutes(files []goFile) []string {
	var routes []string
	for _, f := range files {
		if f.test || !slices.Contains(adminRouteDirs, path.Dir(f.rel)) {
			continue
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && strings.HasPrefix(s, adminRoutePrefix) && len(s) > len(adminRoutePrefix) && !slices.Contains(routes, s) {
				routes = append(routes, s)
			}
			return true
		})
	}
	sort.Strings(routes)
	return routes
}

// unnamed reports the names of kind that doc does not hold in backquotes (`name`).
func unnamed(doc, kind string, names []string) []string {
	var out []string
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+"`") {
			out = append(out, fmt.Sprintf("%s %s: docs/architecture.md does not name it (`%s`)", kind, n, n))
		}
	}
	return out
}

// section returns the body of the Markdown section "## title" (up to the next heading of
// level two or less), and whether it exists.
func section(doc, title string) (string, bool) {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "## "+title {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "# ") || strings.HasPrefix(lines[j], "## ") {
				end = j
				break
			}
		}
		return strings.Join(lines[i+1:end], "\n"), true
	}
	return "", false
}

var (
	backquoted = regexp.MustCompile("`([^`\n]+)`")
	mdLink     = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	// repoPath is a backquoted token that names a file or directory of the repository,
	// optionally followed by :Func or :Type.Method.
	repoPath = regexp.MustCompile(`^([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)(?::([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?))?$`)
)

// readingOrder reports the problems of the "Reading order" section of the document at
// docPath: missing, or naming a path that does not exist, or a function the named file
// does not declare. Backquoted tokens count as paths when they hold a slash or end in .go
// or .md; Markdown links are relative to the document's directory.
func readingOrder(fsys fs.FS, docPath string) []string {
	doc, err := fs.ReadFile(fsys, docPath)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", docPath, err)}
	}
	body, ok := section(string(doc), "Reading order")
	if !ok {
		return []string{docPath + ": no \"## Reading order\" section"}
	}
	var out []string
	named := 0
	for _, m := range backquoted.FindAllStringSubmatch(body, -1) {
		pm := repoPath.FindStringSubmatch(m[1])
		if pm == nil || !(strings.Contains(pm[1], "/") || strings.HasSuffix(pm[1], ".go") || strings.HasSuffix(pm[1], ".md")) {
			continue
		}
		named++
		out = append(out, checkPath(fsys, pm[1], pm[2])...)
	}
	for _, m := range mdLink.FindAllStringSubmatch(body, -1) {
		if strings.Contains(m[1], "://") {
			continue
		}
		named++
		out = append(out, checkPath(fsys, path.Join(path.Dir(docPath), m[1]), "")...)
	}
	if named == 0 {
		out = append(out, docPath+": the Reading order section names no repository path")
	}
	sort.Strings(out)
	return out
}

// checkPath reports whether p exists in fsys and, when sym is set, whether the Go file p
// declares the function sym (Name or Recv.Name).
func checkPath(fsys fs.FS, p, sym string) []string {
	if _, err := fs.Stat(fsys, p); err != nil {
		return []string{fmt.Sprintf("Reading order: %s does not exist", p)}
	}
	if sym == "" {
		return nil
	}
	src, err := fs.ReadFile(fsys, p)
	if err != nil {
		return []string{fmt.Sprintf("Reading order: %s: %v", p, err)}
	}
	f, err := parser.ParseFile(token.NewFileSet(), p, src, 0)
	if err != nil {
		return []string{fmt.Sprintf("Reading order: %s: %v", p, err)}
	}
	for _, decl := range f.Decls {
		if fd, ok := decl.(*ast.FuncDecl); ok && strings.TrimPrefix(funcKey(p, fd), path.Dir(p)+".") == sym {
			return nil
		}
	}
	return []string{fmt.Sprintf("Reading order: %s does not declare %s", p, sym)}
}
