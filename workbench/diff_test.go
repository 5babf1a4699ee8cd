package workbench_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/diff"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

func write(t testing.TB, svc *workbench.Service, path, body string) workbench.FileResult {
	t.Helper()
	r, err := svc.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
		Body: strings.NewReader(body), CreateWorkbench: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func side(t testing.TB, s string) workbench.DiffSide {
	t.Helper()
	d, err := workbench.ParseDiffSide("from", s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func commitNow(t testing.TB, svc *workbench.Service, n int) string {
	t.Helper()
	c, err := svc.Tools.Commit(context.Background(), "a", workbench.CommitInput{ID: "w", Manifest: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)),
		ContentDigestURI: "sha256:" + strings.Repeat("ab", 32), Replace: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	return c["commit_identity"].(string)
}

func codeOf(err error) string {
	var e *workbench.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestParseDiffSide(t *testing.T) {
	id := strings.Repeat("0f", 32)
	for _, s := range []string{"live", "generation:12", "snapshot:3", "snapshot:nightly", "commit:" + id} {
		d, err := workbench.ParseDiffSide("from", s)
		if err != nil || d.String() != s {
			t.Errorf("%q: %v, %v", s, d, err)
		}
	}
	for _, s := range []string{"", "now", "generation:0", "generation:x", "snapshot:", "commit:abc", "commit:" + strings.ToUpper(id)} {
		if _, err := workbench.ParseDiffSide("from", s); err == nil || err.Details["field"] != "from" {
			t.Errorf("%q: err %v, want InvalidArguments naming from", s, err)
		}
	}
}

// TestDiffFileSides diffs one file between each kind of side.
func TestDiffFileSides(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{})
	svc, ctx := n.Service, t.Context()
	g1 := write(t, svc, "outputs/r.txt", "one\ntwo\nthree\n").Generation
	if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: ptr("s1")}); err != nil {
		t.Fatal(err)
	}
	c1 := commitNow(t, svc, 1)
	g2 := write(t, svc, "outputs/r.txt", "one\n2\nthree\n").Generation
	const want = "@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
	for _, from := range []string{fmt.Sprintf("generation:%d", g1), "snapshot:s1", "snapshot:1", "commit:" + c1} {
		t.Run(from, func(t *testing.T) {
			r, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt", From: side(t, from)})
			if err != nil {
				t.Fatal(err)
			}
			u := r["unified"].(string)
			head := "--- outputs/r.txt@" + from + "\n+++ outputs/r.txt@live\n"
			if u != head+want || r["text"] != true || r["truncated"] != false {
				t.Fatalf("unified:\n%s\nwant:\n%s%s", u, head, want)
			}
			to := r["to"].(map[string]any)
			if to["generation"] != g2 || to["exists"] != true || r["from"].(map[string]any)["generation"] != g1 {
				t.Fatalf("from %v to %v, want generations %d and %d", r["from"], to, g1, g2)
			}
		})
	}
	t.Run("a generation that is not the file's is NotFound naming it", func(t *testing.T) {
		_, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt",
			From: workbench.DiffSide{Kind: workbench.SideGeneration, Generation: g1 + 1}})
		var e *workbench.Error
		if !errors.As(err, &e) || e.Code != workbench.CodeNotFound || e.Details["generation"] != g1+1 {
			t.Fatalf("err = %v, want NotFound with details.generation", err)
		}
	})
	t.Run("a file absent on one side diffs against empty", func(t *testing.T) {
		write(t, svc, "outputs/new.txt", "fresh\n")
		r, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", Path: "outputs/new.txt", From: side(t, "commit:"+c1)})
		if err != nil {
			t.Fatal(err)
		}
		if r["from"].(map[string]any)["exists"] != false || !strings.HasSuffix(r["unified"].(string), "@@ -0,0 +1 @@\n+fresh\n") {
			t.Fatalf("from %v, unified:\n%s", r["from"], r["unified"])
		}
	})
	t.Run("absent on both sides is NotFound", func(t *testing.T) {
		_, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", Path: "outputs/none", From: side(t, "snapshot:s1")})
		if codeOf(err) != workbench.CodeNotFound {
			t.Fatalf("err = %v, want NotFound", err)
		}
	})
	t.Run("an unknown commit is NotFound", func(t *testing.T) {
		_, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", Path: "outputs/r.txt", From: side(t, "commit:"+strings.Repeat("00", 32))})
		if codeOf(err) != workbench.CodeNotFound {
			t.Fatalf("err = %v, want NotFound", err)
		}
	})
	t.Run("binary bodies get sizes and digests only", func(t *testing.T) {
		write(t, svc, "outputs/b.bin", "\x00\x01\x02")
		write(t, svc, "outputs/b.bin", "\x00\x01\x03")
		r, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", Path: "outputs/b.bin", From: side(t, "snapshot:s1")})
		if err != nil {
			t.Fatal(err)
		}
		if r["text"] != false || r["reason"] != diff.ReasonBinary || r["unified"] != "" {
			t.Fatalf("result %v, want a binary summary", r)
		}
	})
}

// TestDiffFileReadsObjectStoreBodies: bodies in the object store are read through the
// verified path (InlineMaxBytes 0).
func TestDiffFileReadsObjectStoreBodies(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 0}).Service
	big := strings.Repeat("line\n", 100_000)
	g := write(t, svc, "outputs/big.txt", big).Generation
	// A snapshot holds the old generation (until version retention keeps it by itself).
	if _, err := svc.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w"}); err != nil {
		t.Fatal(err)
	}
	write(t, svc, "outputs/big.txt", big+"tail\n")
	r, err := svc.Review.Diff(t.Context(), workbench.DiffRequest{Agent: "a", Workbench: "w", Path: "outputs/big.txt",
		From: workbench.DiffSide{Kind: workbench.SideGeneration, Generation: g}, Context: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(r["unified"].(string), "@@ -100000 +100000,2 @@\n line\n+tail\n") || r["lines_inserted"] != 1 {
		t.Fatalf("unified:\n%s", r["unified"])
	}
}

// TestDiffStatesPaged diffs two commits page by page and checks every change appears
// once, in order.
func TestDiffStatesPaged(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{}).Service
	ctx := t.Context()
	for i := range 30 {
		write(t, svc, fmt.Sprintf("input/f%02d", i), "v1")
	}
	c1 := commitNow(t, svc, 1)
	var want []string
	for i := range 30 {
		p := fmt.Sprintf("input/f%02d", i)
		switch i % 3 {
		case 0:
			write(t, svc, p, "v2")
			want = append(want, p+" changed")
		case 1:
			if _, err := svc.Writes.Delete(ctx, "a", "w", p, 0, ""); err != nil {
				t.Fatal(err)
			}
			want = append(want, p+" removed")
		}
	}
	write(t, svc, "input/f16/x", "new") // a directory where a file was
	want = append(want, "input/f16/x added")
	c2 := commitNow(t, svc, 2)
	want = append(want, "metadata/run_manifest.json changed")
	var got []string
	cur := ""
	for pages := 0; ; pages++ {
		r, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", From: side(t, "commit:"+c1), To: side(t, "commit:"+c2), Limit: 4, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		rows := r["changes"].([]diff.Row)
		if len(rows) > 4 {
			t.Fatalf("page of %d rows, limit 4", len(rows))
		}
		for _, row := range rows {
			got = append(got, row.Path+" "+string(row.Change))
		}
		if r["next_cursor"] == nil {
			break
		}
		cur = r["next_cursor"].(string)
	}
	if strings.Join(got, "\n") != strings.Join(sortedByPath(want), "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sortedByPath(want), "\n"))
	}

	t.Run("a live side's cursor fails once the workbench changed", func(t *testing.T) {
		r, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", From: side(t, "commit:"+c1), Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		write(t, svc, "input/later", "x")
		_, err = svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", From: side(t, "commit:"+c1), Limit: 1, Cursor: r["next_cursor"].(string)})
		if codeOf(err) != workbench.CodeReadFenceChanged {
			t.Fatalf("err = %v, want ReadFenceChanged", err)
		}
	})
	t.Run("a cursor of other sides is refused", func(t *testing.T) {
		r, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", From: side(t, "commit:"+c1), To: side(t, "commit:"+c2), Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", From: side(t, "commit:"+c2), To: side(t, "commit:"+c1), Limit: 1, Cursor: r["next_cursor"].(string)})
		if codeOf(err) != workbench.CodeInvalidArguments {
			t.Fatalf("err = %v, want InvalidArguments", err)
		}
	})
	t.Run("a cursor of a snapshot name minted again is refused", func(t *testing.T) {
		snap := func() {
			if _, err := svc.Tools.Snapshot(ctx, "a", workbench.SnapshotInput{ID: "w", Name: ptr("again")}); err != nil {
				t.Fatal(err)
			}
		}
		snap()
		req := workbench.DiffRequest{Agent: "a", Workbench: "w", From: side(t, "commit:"+c1), To: side(t, "snapshot:again"), Limit: 1}
		r, err := svc.Review.Diff(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		write(t, svc, "input/later2", "x")
		snap()
		req.Cursor = r["next_cursor"].(string)
		if _, err := svc.Review.Diff(ctx, req); codeOf(err) != workbench.CodeInvalidArguments {
			t.Fatalf("err = %v, want InvalidArguments", err)
		}
	})
	t.Run("a generation side needs a path", func(t *testing.T) {
		_, err := svc.Review.Diff(ctx, workbench.DiffRequest{Agent: "a", Workbench: "w", From: side(t, "generation:3")})
		if codeOf(err) != workbench.CodeInvalidArguments {
			t.Fatalf("err = %v, want InvalidArguments", err)
		}
	})
}

// sortedByPath orders "path change" lines as View.Files orders their paths.
func sortedByPath(lines []string) []string {
	out := append([]string(nil), lines...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && pathOf(out[j]) < pathOf(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func pathOf(line string) string {
	p, _, _ := strings.Cut(line, " ")
	return strings.ReplaceAll(p, "/", "\x00")
}
