package workbench_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

func grepService(t *testing.T) *workbench.Service {
	t.Helper()
	return workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096}).Service
}

// grepPut writes a whole file (an upsert) in workbench "w" of agent "a".
func grepPut(t testing.TB, svc *workbench.Service, path, body string) {
	t.Helper()
	if _, err := svc.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
		Body: strings.NewReader(body), CreateWorkbench: true}); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

func grepRef[T any](v T) *T { return &v }

type grepHit struct {
	Path, RelativePath string
	Section            any
	Line               int64
	Snippet            string
}

func (h grepHit) String() string { return fmt.Sprintf("%s:%d:%s", h.Path, h.Line, h.Snippet) }

type grepPage struct {
	hits      []grepHit
	files     int
	cursor    string
	truncated bool
}

func grepCall(t *testing.T, svc *workbench.Service, in workbench.GrepInput) (grepPage, error) {
	t.Helper()
	if in.ID == "" {
		in.ID = "w"
	}
	r, err := svc.Tools.Grep(t.Context(), "a", in)
	if err != nil {
		return grepPage{}, err
	}
	if r["status"] != "success" || r["workbench_id"] != in.ID || r["workbench_path"] != "/agents/a/wb/"+in.ID {
		t.Fatalf("result header %v", r)
	}
	var p grepPage
	for _, m := range r["matches"].([]map[string]any) {
		p.hits = append(p.hits, grepHit{Path: m["path"].(string), RelativePath: m["relative_path"].(string),
			Section: m["section"], Line: m["line_number"].(int64), Snippet: m["snippet"].(string)})
	}
	p.files = r["files_scanned"].(int)
	p.truncated = r["truncated"].(bool)
	if c, ok := r["next_cursor"].(string); ok {
		p.cursor = c
	} else if r["next_cursor"] != nil {
		t.Fatalf("next_cursor %v", r["next_cursor"])
	}
	if p.truncated != (p.cursor != "") {
		t.Fatalf("truncated=%v with cursor %q", p.truncated, p.cursor)
	}
	return p, nil
}

func mustGrep(t *testing.T, svc *workbench.Service, in workbench.GrepInput) grepPage {
	t.Helper()
	p, err := grepCall(t, svc, in)
	if err != nil {
		t.Fatalf("grep %+v: %v", in, err)
	}
	return p
}

// grepAll follows cursors to the end and returns every hit and the number of calls.
func grepAll(t *testing.T, svc *workbench.Service, in workbench.GrepInput) ([]grepHit, int) {
	t.Helper()
	var all []grepHit
	for calls := 1; ; calls++ {
		p := mustGrep(t, svc, in)
		all = append(all, p.hits...)
		if !p.truncated {
			return all, calls
		}
		if calls > 1000 {
			t.Fatal("no end after 1000 pages")
		}
		in.Cursor = grepRef(p.cursor)
	}
}

func grepHitStrings(hits []grepHit) string {
	s := make([]string, len(hits))
	for i, h := range hits {
		s[i] = h.String()
	}
	return strings.Join(s, "\n")
}

func grepWantHits(t *testing.T, got []grepHit, want ...string) {
	t.Helper()
	if g, w := grepHitStrings(got), strings.Join(want, "\n"); g != w {
		t.Fatalf("hits\n%s\nwant\n%s", g, w)
	}
}

func grepWantCode(t *testing.T, err error, code, field string) *workbench.Error {
	t.Helper()
	var we *workbench.Error
	if !errors.As(err, &we) || we.Code != code || (field != "" && we.Details["field"] != field) {
		t.Fatalf("want %s (field %q), got %v", code, field, err)
	}
	return we
}

const grepRoot = "/agents/a/wb/w/"

func TestGrepMatchesAcrossSectionsIgnoringCase(t *testing.T) {
	svc := grepService(t)
	grepPut(t, svc, "input/a.txt", "Hello World\nnothing here\nsay HELLO\n")
	grepPut(t, svc, "outputs/deep/er/b.log", "hElLo again")
	grepPut(t, svc, "logs/c.log", "no\nno\nhello\n")
	grepPut(t, svc, "notes.txt", "hello from outside the sections\n")
	grepPut(t, svc, "scripts/unicode.txt", "ÉCOLE\nthe KELVIN sign: \u212a\nStraße\n")

	p := mustGrep(t, svc, workbench.GrepInput{Pattern: "hello", Recursive: true})
	grepWantHits(t, p.hits,
		grepRoot+"input/a.txt:1:Hello World", grepRoot+"input/a.txt:3:say HELLO", grepRoot+"logs/c.log:3:hello",
		grepRoot+"notes.txt:1:hello from outside the sections", grepRoot+"outputs/deep/er/b.log:1:hElLo again")
	if p.truncated || p.files != 5 {
		t.Fatalf("truncated=%v files_scanned=%d", p.truncated, p.files)
	}
	if h := p.hits[0]; h.Section != "input" || h.RelativePath != "a.txt" {
		t.Fatalf("first hit %+v", h)
	}
	if h := p.hits[3]; h.Section != nil || h.RelativePath != "notes.txt" {
		t.Fatalf("a hit outside the sections has section %v", h.Section)
	}
	if h := p.hits[4]; h.Section != "outputs" || h.RelativePath != "deep/er/b.log" {
		t.Fatalf("deep hit %+v", h)
	}

	for _, c := range []struct {
		name, pattern string
		want          []string
	}{
		{"non-ASCII letters fold", "école", []string{grepRoot + "scripts/unicode.txt:1:ÉCOLE"}},
		{"the Kelvin sign folds with k", "k", []string{grepRoot + "scripts/unicode.txt:2:the KELVIN sign: \u212a"}},
		{"folding is simple, not full: ß is not ss", "STRASSE", nil},
		{"ß folds with ẞ", "STRAẞE", []string{grepRoot + "scripts/unicode.txt:3:Straße"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustGrep(t, svc, workbench.GrepInput{Pattern: c.pattern, Recursive: true, Section: grepRef("scripts")})
			grepWantHits(t, p.hits, c.want...)
		})
	}

	t.Run("a section narrows the search", func(t *testing.T) {
		p := mustGrep(t, svc, workbench.GrepInput{Pattern: "HELLO", Recursive: true, Section: grepRef("outputs")})
		grepWantHits(t, p.hits, grepRoot+"outputs/deep/er/b.log:1:hElLo again")
	})
	t.Run("a path names one file", func(t *testing.T) {
		p := mustGrep(t, svc, workbench.GrepInput{Pattern: "hello", Section: grepRef("input"), Path: grepRef("a.txt")})
		grepWantHits(t, p.hits, grepRoot+"input/a.txt:1:Hello World", grepRoot+"input/a.txt:3:say HELLO")
		if p.files != 1 {
			t.Fatalf("files_scanned %d", p.files)
		}
	})
	t.Run("a path names a directory", func(t *testing.T) {
		p := mustGrep(t, svc, workbench.GrepInput{Pattern: "hello", Recursive: true, Section: grepRef("outputs"), Path: grepRef("deep")})
		grepWantHits(t, p.hits, grepRoot+"outputs/deep/er/b.log:1:hElLo again")
	})
	t.Run("an empty section is empty", func(t *testing.T) {
		p := mustGrep(t, svc, workbench.GrepInput{Pattern: "hello", Recursive: true, Section: grepRef("metadata")})
		if len(p.hits) != 0 || p.truncated {
			t.Fatalf("%+v", p)
		}
	})
	t.Run("a missing directory is NotFound", func(t *testing.T) {
		_, err := grepCall(t, svc, workbench.GrepInput{Pattern: "x", Recursive: true, Section: grepRef("input"), Path: grepRef("nope")})
		grepWantCode(t, err, workbench.CodeNotFound, "")
	})
	t.Run("a missing workbench is NotFound", func(t *testing.T) {
		_, err := grepCall(t, svc, workbench.GrepInput{ID: "other", Pattern: "x", Recursive: true})
		grepWantCode(t, err, workbench.CodeNotFound, "")
	})
}

func TestGrepPatterns(t *testing.T) {
	svc := grepService(t)
	grepPut(t, svc, "input/p.txt", "foo\nBAR\nbaz\na|b\nnone\n")
	for _, c := range []struct {
		name string
		in   workbench.GrepInput
		want []string
	}{
		{"'|' separates alternatives without patterns", workbench.GrepInput{Pattern: "foo|bar"}, []string{"1:foo", "2:BAR"}},
		{"an empty patterns list splits pattern too", workbench.GrepInput{Pattern: "foo|baz", Patterns: []string{}}, []string{"1:foo", "3:baz"}},
		{"with patterns, pattern is one literal term and both count",
			workbench.GrepInput{Pattern: "A|B", Patterns: []string{"baz"}}, []string{"3:baz", "4:a|b"}},
		{"patterns are ORed", workbench.GrepInput{Pattern: "nothing", Patterns: []string{"FOO", "none", "Bar"}},
			[]string{"1:foo", "2:BAR", "5:none"}},
		{"terms equal after folding count once",
			workbench.GrepInput{Pattern: "x", Patterns: []string{"F", "f", "b", "B", "o", "O", "a", "A", "z", "Z", "n", "N", "e", "E", "|", "X"}},
			[]string{"1:foo", "2:BAR", "3:baz", "4:a|b", "5:none"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.in.Section = grepRef("input")
			p := mustGrep(t, svc, c.in)
			var got []string
			for _, h := range p.hits {
				got = append(got, fmt.Sprintf("%d:%s", h.Line, h.Snippet))
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	many := make([]string, 16)
	for i := range many {
		many[i] = fmt.Sprintf("term%d", i)
	}
	for _, c := range []struct {
		name  string
		in    workbench.GrepInput
		field string
	}{
		{"an empty pattern", workbench.GrepInput{Pattern: ""}, "pattern"},
		{"an empty pattern beside patterns", workbench.GrepInput{Pattern: "", Patterns: []string{"x"}}, "pattern"},
		{"an empty alternative", workbench.GrepInput{Pattern: "a||b"}, "pattern"},
		{"a trailing '|'", workbench.GrepInput{Pattern: "a|"}, "pattern"},
		{"an empty item in patterns", workbench.GrepInput{Pattern: "a", Patterns: []string{"b", ""}}, "patterns"},
		{"more than 16 items in patterns", workbench.GrepInput{Pattern: "a", Patterns: append(many, "x")}, "patterns"},
		{"17 distinct terms in all", workbench.GrepInput{Pattern: "a", Patterns: many}, "patterns"},
		{"17 alternatives", workbench.GrepInput{Pattern: strings.Join(append(many, "x"), "|")}, "pattern"},
		{"a newline in a pattern", workbench.GrepInput{Pattern: "a\nb"}, "pattern"},
		{"an over-long pattern", workbench.GrepInput{Pattern: strings.Repeat("x", workbench.MaxGrepPatternBytes+1)}, "pattern"},
		{"a bracket glob", workbench.GrepInput{Pattern: "a", Glob: grepRef("[ab].txt")}, "glob"},
		{"a backslash glob", workbench.GrepInput{Pattern: "a", Glob: grepRef(`\*.txt`)}, "glob"},
		{"a glob with a slash", workbench.GrepInput{Pattern: "a", Glob: grepRef("input/*.txt")}, "glob"},
		{"limit 0", workbench.GrepInput{Pattern: "a", Limit: grepRef(0)}, "limit"},
		{"limit 301", workbench.GrepInput{Pattern: "a", Limit: grepRef(301)}, "limit"},
		{"a path with the section repeated", workbench.GrepInput{Pattern: "a", Section: grepRef("input"), Path: grepRef("input/p.txt")}, "path"},
		{"a bad section", workbench.GrepInput{Pattern: "a", Section: grepRef("secrets")}, "section"},
	} {
		t.Run("rejects "+c.name, func(t *testing.T) {
			_, err := grepCall(t, svc, c.in)
			grepWantCode(t, err, workbench.CodeInvalidArguments, c.field)
		})
	}
	// The same 16 terms with pattern repeating one of them are fine.
	if _, err := grepCall(t, svc, workbench.GrepInput{Pattern: "TERM3", Patterns: many}); err != nil {
		t.Fatalf("16 distinct terms: %v", err)
	}
}

func TestGrepGlobAndRecursion(t *testing.T) {
	svc := grepService(t)
	for _, p := range []string{"scripts/run.py", "scripts/run.sh", "scripts/README", "scripts/sub/x.py", "scripts/sub/deeper/y.py", "scripts/Run.PY"} {
		grepPut(t, svc, p, "TODO in "+p+"\n")
	}
	rel := func(p grepPage) string {
		var s []string
		for _, h := range p.hits {
			s = append(s, h.RelativePath)
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		name      string
		glob      *string
		recursive bool
		want      string
	}{
		{"recursive without a glob takes every file", nil, true, "README Run.PY run.py run.sh sub/deeper/y.py sub/x.py"},
		{"non-recursive takes only direct children", nil, false, "README Run.PY run.py run.sh"},
		{"a glob selects base names at every depth", grepRef("*.py"), true, "run.py sub/deeper/y.py sub/x.py"},
		{"globs are case-sensitive", grepRef("*.PY"), true, "Run.PY"},
		{"? matches one character", grepRef("run.??"), false, "run.py run.sh"},
		{"an empty glob selects everything", grepRef(""), false, "README Run.PY run.py run.sh"},
		{"a glob without metacharacters is exact", grepRef("x.py"), true, "sub/x.py"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustGrep(t, svc, workbench.GrepInput{Pattern: "todo", Recursive: c.recursive, Section: grepRef("scripts"), Glob: c.glob})
			if got := rel(p); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestGrepSkipsFilesContainingNUL(t *testing.T) {
	svc := grepService(t)
	grepPut(t, svc, "input/a-text", "match\n")
	grepPut(t, svc, "input/b-binary-early", "match\x00\nmatch\n")
	grepPut(t, svc, "input/c-binary-late", "match\nmatch\n"+strings.Repeat("filler\n", 2000)+"\x00")
	grepPut(t, svc, "input/d-text", "MATCH\n")
	p := mustGrep(t, svc, workbench.GrepInput{Pattern: "match", Section: grepRef("input")})
	grepWantHits(t, p.hits, grepRoot+"input/a-text:1:match", grepRoot+"input/d-text:1:MATCH")
	if p.files != 4 {
		t.Fatalf("files_scanned %d, want 4 (NUL files are scanned, then skipped)", p.files)
	}
	// Paging never leaks a match of a NUL file, even when the page fills inside it.
	all, _ := grepAll(t, svc, workbench.GrepInput{Pattern: "match", Section: grepRef("input"), Limit: grepRef(1)})
	grepWantHits(t, all, grepRoot+"input/a-text:1:match", grepRoot+"input/d-text:1:MATCH")
}

func TestGrepLongLinesKeepSnippetsBounded(t *testing.T) {
	svc := grepService(t)
	const buf = 64 << 10 // the scanner's read buffer: matches straddle it below
	long := strings.Repeat("a", 100_000) + "NEEDLE" + strings.Repeat("b", 100_000)
	straddle := strings.Repeat("x", buf-3) + "needle" + strings.Repeat("y", 10)
	multibyte := strings.Repeat("é", buf) + "Needle" + strings.Repeat("ü", 500)
	tailOnly := strings.Repeat("z", 3*buf+17) + "needle"
	cutRune := strings.Repeat("q", buf-1) + "é needle" // "é" straddles the buffer boundary
	short := "short needle line\r"
	body := strings.Join([]string{long, "no match", straddle, multibyte, tailOnly, cutRune, short, "needle at the end"}, "\n")
	grepPut(t, svc, "logs/long.log", body)
	p := mustGrep(t, svc, workbench.GrepInput{Pattern: "needle", Section: grepRef("logs")})
	wantLines := []int64{1, 3, 4, 5, 6, 7, 8}
	if len(p.hits) != len(wantLines) {
		t.Fatalf("%d hits, want %d:\n%s", len(p.hits), len(wantLines), grepHitStrings(p.hits))
	}
	for i, h := range p.hits {
		n := utf8.RuneCountInString(h.Snippet)
		if h.Line != wantLines[i] || !utf8.ValidString(h.Snippet) || n > workbench.GrepSnippetChars ||
			!strings.Contains(strings.ToLower(h.Snippet), "needle") {
			t.Fatalf("hit %d: line %d (want %d), %d chars, valid=%v: %q", i, h.Line, wantLines[i], n, utf8.ValidString(h.Snippet), h.Snippet)
		}
	}
	if want := strings.Repeat("a", 117) + "NEEDLE" + strings.Repeat("b", 117); p.hits[0].Snippet != want {
		t.Fatalf("snippet of a long line is not centered on the match: %q", p.hits[0].Snippet)
	}
	if !strings.HasSuffix(p.hits[4].Snippet, "qé needle") {
		t.Fatalf("a code point cut by the read buffer is not put back together: %q", p.hits[4].Snippet)
	}
	if p.hits[5].Snippet != "short needle line" {
		t.Fatalf("a CRLF line's snippet keeps its CR: %q", p.hits[5].Snippet)
	}
	if p.hits[6].Snippet != "needle at the end" {
		t.Fatalf("last line without a newline: %q", p.hits[6].Snippet)
	}
}

func TestGrepPaging(t *testing.T) {
	svc := grepService(t)
	// 25 matching lines spread over files and directories, between lines that do not match.
	var want []string
	n := 0
	for _, f := range []string{"outputs/a.txt", "outputs/b/c.txt", "outputs/b/d.txt", "outputs/e.txt"} {
		var b strings.Builder
		for line := 1; line <= 13; line++ {
			if line%2 == 1 && n < 25 {
				fmt.Fprintf(&b, "hit %d\n", n)
				want = append(want, fmt.Sprintf("%s%s:%d:hit %d", grepRoot, f, line, n))
				n++
			} else {
				b.WriteString("miss\n")
			}
		}
		grepPut(t, svc, f, b.String())
	}
	if n != 25 {
		t.Fatalf("built %d matches", n)
	}
	in := workbench.GrepInput{Pattern: "HIT", Recursive: true, Section: grepRef("outputs")}
	for _, c := range []struct {
		name      string
		limit     int
		truncated bool
	}{
		{"exactly limit matches end the search", 25, false},
		{"limit+1 ends it too", 26, false},
		{"limit-1 leaves one for the next page", 24, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := in
			in.Limit = grepRef(c.limit)
			p := mustGrep(t, svc, in)
			if p.truncated != c.truncated || len(p.hits) != min(25, c.limit) {
				t.Fatalf("%d hits, truncated=%v", len(p.hits), p.truncated)
			}
			if !c.truncated {
				grepWantHits(t, p.hits, want...)
				return
			}
			in.Cursor = grepRef(p.cursor)
			next := mustGrep(t, svc, in)
			if next.truncated || len(next.hits) != 1 {
				t.Fatalf("second page: %d hits, truncated=%v", len(next.hits), next.truncated)
			}
			grepWantHits(t, append(p.hits, next.hits...), want...)
		})
	}
	for _, limit := range []int{1, 2, 3, 4, 7} {
		t.Run(fmt.Sprintf("pages of %d concatenate to the whole result", limit), func(t *testing.T) {
			in := in
			in.Limit = grepRef(limit)
			all, calls := grepAll(t, svc, in)
			grepWantHits(t, all, want...)
			if wantCalls := (25 + limit - 1) / limit; calls != wantCalls {
				t.Fatalf("%d calls, want %d", calls, wantCalls)
			}
		})
	}
	t.Run("the limit may change between pages", func(t *testing.T) {
		in := in
		in.Limit = grepRef(10)
		p := mustGrep(t, svc, in)
		in.Limit, in.Cursor = grepRef(300), grepRef(p.cursor)
		rest := mustGrep(t, svc, in)
		grepWantHits(t, append(p.hits, rest.hits...), want...)
	})
}

func TestGrepCursors(t *testing.T) {
	svc := grepService(t)
	for i := range 6 {
		grepPut(t, svc, fmt.Sprintf("input/f%d.txt", i), "match\nmatch\n")
	}
	if _, err := svc.Lifecycle.CreateWorkbench(t.Context(), "a", "w2", ""); err != nil {
		t.Fatal(err)
	}
	base := workbench.GrepInput{Pattern: "match", Recursive: true, Section: grepRef("input"), Limit: grepRef(3)}
	first := mustGrep(t, svc, base)
	if !first.truncated {
		t.Fatal("first page not truncated")
	}
	with := func(mod func(*workbench.GrepInput)) workbench.GrepInput {
		in := base
		in.Cursor = grepRef(first.cursor)
		mod(&in)
		return in
	}
	tampered := []byte(first.cursor)
	tampered[5] ^= 1
	for _, c := range []struct {
		name string
		in   workbench.GrepInput
	}{
		{"a forged cursor", with(func(in *workbench.GrepInput) { in.Cursor = grepRef("eyJrIjoiZ3JlcCJ9.AAAA") })},
		{"a tampered cursor", with(func(in *workbench.GrepInput) { in.Cursor = grepRef(string(tampered)) })},
		{"not a cursor at all", with(func(in *workbench.GrepInput) { in.Cursor = grepRef("garbage") })},
		{"another pattern", with(func(in *workbench.GrepInput) { in.Pattern = "other" })},
		{"an added pattern", with(func(in *workbench.GrepInput) { in.Patterns = []string{"more"} })},
		{"another glob", with(func(in *workbench.GrepInput) { in.Glob = grepRef("*.txt") })},
		{"recursion switched off", with(func(in *workbench.GrepInput) { in.Recursive = false })},
		{"another section", with(func(in *workbench.GrepInput) { in.Section = grepRef("logs") })},
		{"another path", with(func(in *workbench.GrepInput) { in.Path = grepRef("f1.txt") })},
		{"another workbench", with(func(in *workbench.GrepInput) { in.ID = "w2" })},
	} {
		t.Run("rejects "+c.name, func(t *testing.T) {
			_, err := grepCall(t, svc, c.in)
			grepWantCode(t, err, workbench.CodeInvalidArguments, "cursor")
		})
	}
	t.Run("a list cursor is not a grep cursor", func(t *testing.T) {
		lr, err := svc.Reads.List(t.Context(), workbench.ListRequest{Agent: "a", Workbench: "w", Path: "input", Limit: 1})
		if err != nil || lr.NextCursor == "" {
			t.Fatalf("list: %+v %v", lr, err)
		}
		_, err = grepCall(t, svc, with(func(in *workbench.GrepInput) { in.Cursor = grepRef(lr.NextCursor) }))
		grepWantCode(t, err, workbench.CodeInvalidArguments, "cursor")
	})
	t.Run("the same search in other words continues", func(t *testing.T) {
		// Patterns are bound as a folded set: "MATCH" via patterns is the same search.
		p := mustGrep(t, svc, with(func(in *workbench.GrepInput) { in.Pattern = "MATCH"; in.Patterns = []string{"match"} }))
		if len(p.hits) != 3 {
			t.Fatalf("%d hits", len(p.hits))
		}
	})
	t.Run("a write between pages is ReadFenceChanged", func(t *testing.T) {
		grepPut(t, svc, "logs/elsewhere.log", "an unrelated file of the same workbench\n")
		_, err := grepCall(t, svc, with(func(*workbench.GrepInput) {}))
		if we := grepWantCode(t, err, workbench.CodeReadFenceChanged, ""); !we.Retryable {
			t.Fatal("ReadFenceChanged must be retryable")
		}
		// Starting again works.
		all, _ := grepAll(t, svc, base)
		if len(all) != 12 {
			t.Fatalf("%d hits after restarting", len(all))
		}
	})
	t.Run("deleting files between pages is ReadFenceChanged", func(t *testing.T) {
		p := mustGrep(t, svc, base)
		for i := range 6 {
			if _, err := svc.Writes.Delete(t.Context(), "a", "w", fmt.Sprintf("input/f%d.txt", i), 0, ""); err != nil {
				t.Fatal(err)
			}
		}
		in := base
		in.Cursor = grepRef(p.cursor)
		_, err := grepCall(t, svc, in)
		grepWantCode(t, err, workbench.CodeReadFenceChanged, "")
	})
}

// A line the test can find in a big body: "line <n> ...".
func grepBigBody(lines int, last string) string {
	var b strings.Builder
	for i := 1; i < lines; i++ {
		fmt.Fprintf(&b, "line %07d of a large log without the word\n", i)
	}
	b.WriteString(last)
	return b.String()
}

func TestGrepBoundsWorkPerCall(t *testing.T) {
	svc := grepService(t)
	// 9 MiB+: bigger than one call's whole budget. The only match is on its last line.
	lines := workbench.GrepMaxScanBytes/44 + 20_000
	big := grepBigBody(lines, "the last line has the NEEDLE\n")
	if len(big) <= workbench.GrepMaxScanBytes {
		t.Fatalf("body of %d bytes is not above the budget", len(big))
	}
	grepPut(t, svc, "outputs/big.log", big)

	t.Run("a file above the budget takes several calls, each truncated with a cursor", func(t *testing.T) {
		in := workbench.GrepInput{Pattern: "needle", Section: grepRef("outputs")}
		first := mustGrep(t, svc, in)
		if !first.truncated || len(first.hits) != 0 || first.files != 1 {
			t.Fatalf("first call: %d hits, truncated=%v, files=%d", len(first.hits), first.truncated, first.files)
		}
		all, calls := grepAll(t, svc, in)
		grepWantHits(t, all, fmt.Sprintf("%soutputs/big.log:%d:the last line has the NEEDLE", grepRoot, lines))
		// ~9.4 MiB checked for NUL then searched: at least 3 calls of 8 MiB each.
		if calls < 3 {
			t.Fatalf("%d calls", calls)
		}
	})
	t.Run("a big file with a NUL at its end is skipped", func(t *testing.T) {
		grepPut(t, svc, "logs/big.bin", big+"\x00")
		all, _ := grepAll(t, svc, workbench.GrepInput{Pattern: "needle", Section: grepRef("logs")})
		if len(all) != 0 {
			t.Fatalf("hits in a NUL file: %s", grepHitStrings(all))
		}
	})
	t.Run("a file that does not fit what is left waits for the next call", func(t *testing.T) {
		half := grepBigBody(workbench.GrepMaxScanBytes/44*5/8, "NEEDLE one\n")
		grepPut(t, svc, "input/one.log", half)
		grepPut(t, svc, "input/two.log", strings.Replace(half, "one", "two", 1))
		in := workbench.GrepInput{Pattern: "needle", Section: grepRef("input")}
		p := mustGrep(t, svc, in)
		if !p.truncated || p.files != 1 || len(p.hits) != 1 {
			t.Fatalf("first call: %d hits, truncated=%v, files=%d", len(p.hits), p.truncated, p.files)
		}
		in.Cursor = grepRef(p.cursor)
		p = mustGrep(t, svc, in)
		if p.truncated || p.files != 1 || len(p.hits) != 1 || p.hits[0].Snippet != "NEEDLE two" {
			t.Fatalf("second call: %s, truncated=%v, files=%d", grepHitStrings(p.hits), p.truncated, p.files)
		}
	})
	t.Run("the page fills inside a file above the budget", func(t *testing.T) {
		body := strings.Repeat("NEEDLE x\n", workbench.GrepMaxScanBytes/9+1000)
		grepPut(t, svc, "scripts/many.txt", body)
		in := workbench.GrepInput{Pattern: "needle", Section: grepRef("scripts"), Limit: grepRef(300)}
		var line int64
		for calls := 0; calls < 5; calls++ {
			p := mustGrep(t, svc, in)
			for _, h := range p.hits {
				line++
				if h.Line != line {
					t.Fatalf("call %d: line %d, want %d", calls, h.Line, line)
				}
			}
			if !p.truncated {
				t.Fatal("ended early")
			}
			in.Cursor = grepRef(p.cursor)
		}
		if line == 0 {
			t.Fatal("no hits")
		}
	})
}

func TestGrepBoundsFilesPerCall(t *testing.T) {
	svc := grepService(t)
	for i := range workbench.GrepMaxFiles {
		grepPut(t, svc, fmt.Sprintf("input/a/f%04d", i), "nothing to see\n")
	}
	grepPut(t, svc, "input/b/zz", "the only match\n")
	in := workbench.GrepInput{Pattern: "match", Recursive: true, Section: grepRef("input")}
	p := mustGrep(t, svc, in)
	if !p.truncated || len(p.hits) != 0 || p.files != workbench.GrepMaxFiles {
		t.Fatalf("first call: %d hits, truncated=%v, files=%d", len(p.hits), p.truncated, p.files)
	}
	// The second call starts at the directory the first one stopped before.
	in.Cursor = grepRef(p.cursor)
	p = mustGrep(t, svc, in)
	if p.truncated || p.files != 1 {
		t.Fatalf("second call: truncated=%v, files=%d", p.truncated, p.files)
	}
	grepWantHits(t, p.hits, grepRoot+"input/b/zz:1:the only match")
}

// Lines longer than what one call reads resume in their middle.
func TestGrepResumesInsideALine(t *testing.T) {
	svc := grepService(t)
	const size = 9 << 20
	// One call reads 8 MiB: the first checks [0, 8 MiB) for NUL, the second checks the last
	// 1 MiB and then searches [0, 7 MiB) in 64 KiB reads. Put a match across 7 MiB.
	at := workbench.GrepMaxScanBytes - (size - workbench.GrepMaxScanBytes)
	straddling := strings.Repeat("a", at-3) + "NEEDLE" + strings.Repeat("b", size-at-3-len("\nneedle 2\n")) + "\nneedle 2\n"
	if len(straddling) != size {
		t.Fatalf("built %d bytes", len(straddling))
	}
	grepPut(t, svc, "outputs/straddle.txt", straddling)
	all, calls := grepAll(t, svc, workbench.GrepInput{Pattern: "needle", Section: grepRef("outputs"), Path: grepRef("straddle.txt")})
	if calls != 3 || len(all) != 2 || all[0].Line != 1 || all[1].Line != 2 || all[1].Snippet != "needle 2" ||
		all[0].Snippet != strings.Repeat("a", 117)+"NEEDLE"+strings.Repeat("b", 117) {
		t.Fatalf("%d calls, hits:\n%s", calls, grepHitStrings(all))
	}

	// A line that matched early is reported once, however many calls skip its rest.
	early := "needle early" + strings.Repeat("c", size) + " needle again\nand needle 2\n"
	grepPut(t, svc, "logs/early.txt", early)
	all, _ = grepAll(t, svc, workbench.GrepInput{Pattern: "needle", Section: grepRef("logs")})
	if len(all) != 2 || all[0].Line != 1 || all[1].Line != 2 || all[1].Snippet != "and needle 2" ||
		!strings.HasPrefix(all[0].Snippet, "needle earlyccc") {
		t.Fatalf("hits:\n%s", grepHitStrings(all))
	}
}

// grepBlobHook lets a test act when a body is read from the object store.
type grepBlobHook struct {
	blob.Store
	onGet func() error
	fired atomic.Bool
}

func (b *grepBlobHook) Get(ctx context.Context, key blob.Key, offset, length int64) (io.ReadCloser, error) {
	if b.onGet != nil && b.fired.CompareAndSwap(false, true) {
		if err := b.onGet(); err != nil {
			return nil, err
		}
	}
	return b.Store.Get(ctx, key, offset, length)
}

func TestGrepFileReplacedUnderTheScan(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 0})
	grepPut(t, n.Service, "outputs/r.txt", "match\n")
	hook := &grepBlobHook{Store: n.Blobs}
	svc, err := workbench.New(n.Shard, hook, workbench.Config{InlineMaxBytes: 0, CursorKey: workbenchtest.CursorKey})
	if err != nil {
		t.Fatal(err)
	}
	in := workbench.GrepInput{Pattern: "match", Section: grepRef("outputs")}

	// The old body is gone by the time the scan reads it, and the path holds a new one.
	hook.onGet = func() error {
		grepPut(t, n.Service, "outputs/r.txt", "replaced\n")
		return fmt.Errorf("test: %w", blob.ErrNotFound)
	}
	_, err = grepCall(t, svc, in)
	if we := grepWantCode(t, err, workbench.CodeReadFenceChanged, ""); !we.Retryable {
		t.Fatal("not retryable")
	}

	// The same failure with the file unchanged is not a fence change.
	hook.fired.Store(false)
	hook.onGet = func() error { return fmt.Errorf("test: %w", blob.ErrNotFound) }
	_, err = grepCall(t, svc, in)
	grepWantCode(t, err, workbench.CodeInternal, "")

	hook.onGet = nil
	p := mustGrep(t, svc, in)
	if len(p.hits) != 0 {
		t.Fatalf("hits in the replaced file: %s", grepHitStrings(p.hits))
	}
}

func TestGrepEmptyAndTinyFiles(t *testing.T) {
	svc := grepService(t)
	grepPut(t, svc, "input/empty", "")
	grepPut(t, svc, "input/newline", "\n")
	grepPut(t, svc, "input/one", "x")
	p := mustGrep(t, svc, workbench.GrepInput{Pattern: "x", Section: grepRef("input")})
	grepWantHits(t, p.hits, grepRoot+"input/one:1:x")
	if p.files != 3 {
		t.Fatalf("files_scanned %d", p.files)
	}
	// Invalid UTF-8 never matches and shows as U+FFFD.
	grepPut(t, svc, "input/latin1", "caf\xe9 match\n")
	p = mustGrep(t, svc, workbench.GrepInput{Pattern: "match", Section: grepRef("input"), Path: grepRef("latin1")})
	grepWantHits(t, p.hits, grepRoot+"input/latin1:1:caf\ufffd match")
	if p = mustGrep(t, svc, workbench.GrepInput{Pattern: "\ufffd", Section: grepRef("input")}); len(p.hits) != 0 {
		t.Fatalf("U+FFFD matched an invalid byte: %s", grepHitStrings(p.hits))
	}
}
