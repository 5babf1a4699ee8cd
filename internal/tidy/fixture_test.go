package tidy

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The checkers against small in-memory trees: each rule reports the one offender a
// fixture holds, and is silent on its tidy twin, so none of the repository tests passes
// by checking nothing.

// funcOf returns Go source of a function name with n lines from `func` to `}`.
func funcOf(name string, n int) string {
	return "func " + name + "() {\n" + strings.Repeat("\t_ = 0\n", n-2) + "}\n"
}

func parsed(t *testing.T, fsys fstest.MapFS) []goFile {
	t.Helper()
	files, err := goFiles(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// wantOffenders fails unless got holds exactly one line per want, each containing it.
func wantOffenders(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("offenders %q, want %d matching %q", got, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("offender %q does not mention %q", got[i], w)
		}
	}
}

func TestLongFilesReportsAFileOverTheLimitAndAStaleAllowance(t *testing.T) {
	fsys := fstest.MapFS{
		"a/doc.go":       {Data: []byte("package a\n")},
		"a/long.go":      {Data: []byte("package a\n" + strings.Repeat("// x\n", 20))},
		"a/long_test.go": {Data: []byte("package a\n" + strings.Repeat("// x\n", 20))}, // tests are exempt
		"a/ok.go":        {Data: []byte("package a\n" + strings.Repeat("// x\n", 9))},
		"testdata/x.go":  {Data: []byte("package x\n" + strings.Repeat("// x\n", 20))}, // skipped
	}
	files := parsed(t, fsys)
	wantOffenders(t, longFiles(files, 10, nil), "a/long.go: 21 lines")
	wantOffenders(t, longFiles(files, 10, map[string]string{"a/long.go": "reason"}))
	wantOffenders(t, longFiles(files, 10, map[string]string{"a/long.go": "reason", "a/ok.go": "reason"}), "a/ok.go: allowed to be long but is not")
}

func TestLongFuncsReportsAFunctionOverTheLimitAndAStaleAllowance(t *testing.T) {
	fsys := fstest.MapFS{
		"p/q/f.go": {Data: []byte("package q\n\ntype T struct{}\n\n" +
			funcOf("short", 5) +
			funcOf("long", 12) +
			strings.Replace(funcOf("Method", 12), "func ", "func (t *T) ", 1))},
		"p/q/f_test.go": {Data: []byte("package q\n\n" + funcOf("TestLong", 50))}, // tests are exempt
	}
	files := parsed(t, fsys)
	wantOffenders(t, longFuncs(files, 10, nil), "p/q.T.Method (p/q/f.go:", "p/q.long (p/q/f.go:")
	wantOffenders(t, longFuncs(files, 10, map[string]string{"p/q.long": "r", "p/q.T.Method": "r"}))
	wantOffenders(t, longFuncs(files, 10, map[string]string{"p/q.long": "r", "p/q.T.Method": "r", "p/q.short": "r"}),
		"p/q.short: allowed to be long but is not")
}

func TestBigTypesReportsATypeWithTooManyMethodsAGrownOneAndAStaleAllowance(t *testing.T) {
	methods := func(recv string, n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("func (" + recv + ") M" + strings.Repeat("x", i+1) + "() {}\n")
		}
		return b.String()
	}
	fsys := fstest.MapFS{
		"p/f.go":      {Data: []byte("package p\n\ntype Big struct{}\ntype Small struct{}\n\n" + methods("b *Big", 3) + methods("s Small", 2))},
		"p/g.go":      {Data: []byte("package p\n\n" + strings.ReplaceAll(methods("b Big", 2), "M", "N"))},   // both receivers count
		"p/f_test.go": {Data: []byte("package p\n\n" + strings.ReplaceAll(methods("s Small", 9), "M", "T"))}, // tests are exempt
	}
	files := parsed(t, fsys)
	wantOffenders(t, bigTypes(files, 4, nil), "p.Big: 5 methods")
	wantOffenders(t, bigTypes(files, 4, map[string]typeAllowance{"p.Big": {5, "r"}}))
	wantOffenders(t, bigTypes(files, 4, map[string]typeAllowance{"p.Big": {4, "r"}}), "p.Big: 5 methods, more than the 4 it is allowed")
	wantOffenders(t, bigTypes(files, 4, map[string]typeAllowance{"p.Big": {5, "r"}, "p.Small": {2, "r"}}), "p.Small: allowed many methods but has 2")
}

func TestMissingDocsReportsAPackageWithoutDocGo(t *testing.T) {
	fsys := fstest.MapFS{
		"good/doc.go":         {Data: []byte("// Package good is tidy.\npackage good\n")},
		"good/good.go":        {Data: []byte("package good\n")},
		"bad/bad.go":          {Data: []byte("package bad\n")},
		"onlytests/x_test.go": {Data: []byte("package onlytests\n")},            // no package to document
		"bad/testdata/y.go":   {Data: []byte("package y\n")},                    // skipped
		".hidden/z.go":        {Data: []byte("package z\n")},                    // skipped
		"_tools/t.go":         {Data: []byte("package t\n")},                    // skipped, as the go command does
		"good/sub/doc.go":     {Data: []byte("// Package sub.\npackage sub\n")}, // doc.go alone is a package
	}
	wantOffenders(t, missingDocs(parsed(t, fsys)), "bad: a package without doc.go")
}

func TestUnnamedReportsWhatTheDocDoesNotBackquote(t *testing.T) {
	doc := "| `api/rest` | REST |\nthe tools `workbench_read` and workbench_stat; routes `/v1/admin/gc`, `/v1/admin/gc/more`"
	wantOffenders(t, unnamed(doc, "package", []string{"api/rest", "api/mcp"}), "package api/mcp")
	wantOffenders(t, unnamed(doc, "MCP tool", []string{"workbench_read", "workbench_stat"}), "MCP tool workbench_stat")
	wantOffenders(t, unnamed(doc, "admin route", []string{"/v1/admin/gc", "/v1/admin/quota"}), "admin route /v1/admin/quota")
}

func TestCollectorsFindToolsAndAdminRoutes(t *testing.T) {
	fsys := fstest.MapFS{
		"api/mcp/schemas/a.json": {Data: []byte(`{"tool_one": {"type": "object"}, "tool_two": {}}`)},
		"api/mcp/schemas/b.json": {Data: []byte(`{"tool_three": {}}`)},
		"api/rest/admin.go": {Data: []byte("package rest\n\nconst gc = \"/v1/admin/gc\"\n\n" +
			"func f(p string) bool { return p == \"/v1/admin/quota\" || len(p) > len(\"/v1/admin/\") }\n")},
		"api/rest/admin_test.go": {Data: []byte("package rest\n\nconst x = \"/v1/admin/test-only\"\n")},
		"api/client/c.go":        {Data: []byte("package client\n\nconst y = \"/v1/admin/client-only\"\n")},
		"api/server/keys.go":     {Data: []byte("package server\n\nvar routes = map[string]int{`/v1/admin/keys`: 1}\n")},
	}
	tools, err := mcpTools(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tools, " "); got != "tool_one tool_three tool_two" {
		t.Errorf("tools %q", got)
	}
	if got := strings.Join(adminRoutes(parsed(t, fsys)), " "); got != "/v1/admin/gc /v1/admin/keys /v1/admin/quota" {
		t.Errorf("admin routes %q", got)
	}
}

func TestReadingOrderReportsMissingPathsAndDeclarations(t *testing.T) {
	const tidy = "# T\n\n## Reading order\n\n1. `README.md`, then [the contract](workbench.md#rules) and `a/doc.go`, " +
		"`a/a.go:Run` and `a/a.go:T.Do`; then `a` itself (`go doc ./a` is not a path, nor is `Plan`).\n\n## Next\n\n`missing/after.go`\n"
	files := fstest.MapFS{
		"README.md":         {Data: []byte("r")},
		"docs/workbench.md": {Data: []byte("w")},
		"a/doc.go":          {Data: []byte("package a\n")},
		"a/a.go":            {Data: []byte("package a\n\ntype T struct{}\n\nfunc Run() {}\n\nfunc (T) Do() {}\n")},
	}
	with := func(doc string) fstest.MapFS {
		m := fstest.MapFS{"docs/architecture.md": {Data: []byte(doc)}}
		for k, v := range files {
			m[k] = v
		}
		return m
	}
	wantOffenders(t, readingOrder(with(tidy), "docs/architecture.md"))
	wantOffenders(t, readingOrder(with(strings.Replace(tidy, "`a/doc.go`", "`a/gone.go`", 1)), "docs/architecture.md"),
		"a/gone.go does not exist")
	wantOffenders(t, readingOrder(with(strings.Replace(tidy, "workbench.md#rules", "runbook.md", 1)), "docs/architecture.md"),
		"docs/runbook.md does not exist")
	wantOffenders(t, readingOrder(with(strings.Replace(tidy, "`a/a.go:T.Do`", "`a/a.go:T.Undo`", 1)), "docs/architecture.md"),
		"a/a.go does not declare T.Undo")
	wantOffenders(t, readingOrder(with(strings.Replace(tidy, "## Reading order", "## Reading", 1)), "docs/architecture.md"),
		"no \"## Reading order\" section")
	wantOffenders(t, readingOrder(with("# T\n\n## Reading order\n\nRead everything.\n"), "docs/architecture.md"),
		"names no repository path")
}
