package workbench_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"
)

// maxMethods is the most methods one type of this package may have: a type past it is
// two types (doc.go: the Service is cut into parts, each with its own files).
const maxMethods = 40

// TestNoTypeHasMoreThanMaxMethods counts the methods of every type declared in this
// package, exported and unexported, test files included, and fails for each type above
// maxMethods.
func TestNoTypeHasMoreThanMaxMethods(t *testing.T) {
	counts := methodCounts(t, ".")
	if counts["Service"] == 0 {
		t.Fatalf("found no methods of Service (counts %v): the count reads the wrong files", counts)
	}
	var over []string
	for typ, n := range counts {
		if n > maxMethods {
			over = append(over, typ)
		}
	}
	sort.Strings(over)
	for _, typ := range over {
		t.Errorf("type %s has %d methods, more than %d: cut it into parts (doc.go)", typ, counts[typ], maxMethods)
	}
}

// TestMethodCountSeesEveryReceiver checks the counter itself on a package written for
// it: pointer and value receivers, and generic receivers, count for their type.
func TestMethodCountSeesEveryReceiver(t *testing.T) {
	dir := t.TempDir()
	src := "package p\ntype A struct{}\ntype G[T any] struct{}\n" +
		"func (A) a1() {}\nfunc (*A) a2() {}\nfunc (g *G[T]) g1() {}\nfunc f() {}\n"
	if err := os.WriteFile(dir+"/p.go", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := methodCounts(t, dir)
	if got["A"] != 2 || got["G"] != 1 || len(got) != 2 {
		t.Fatalf("counts = %v, want A:2 G:1", got)
	}
}

// methodCounts returns the number of methods of each receiver type declared in the Go
// files of dir.
func methodCounts(t *testing.T, dir string) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, dir+"/"+e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
				counts[receiverType(fd.Recv.List[0].Type)]++
			}
		}
	}
	return counts
}

// receiverType names a receiver's type: T for T, *T, T[P] and *T[P].
func receiverType(x ast.Expr) string {
	switch v := x.(type) {
	case *ast.StarExpr:
		return receiverType(v.X)
	case *ast.IndexExpr:
		return receiverType(v.X)
	case *ast.IndexListExpr:
		return receiverType(v.X)
	case *ast.ParenExpr:
		return receiverType(v.X)
	case *ast.Ident:
		return v.Name
	}
	return ""
}
