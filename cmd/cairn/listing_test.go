package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/api/client"
)

// churningServer serves a node's REST API with listings cut into pages of two entries
// and, after each of the first churns live listings' first pages, writes a file of the
// workbench's logs section: the next page of that listing then meets the read fence the
// write moved (ReadFenceChanged), as it does when others write while a listing is paged.
type churningServer struct {
	url string

	mu     sync.Mutex
	churns int
	writes int
}

func newChurningServer(t *testing.T) *churningServer {
	t.Helper()
	_, node := testNode(t)
	writer := client.New(node.URL, nil)
	s := &churningServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isList := r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/list")
		q := r.URL.Query()
		if isList {
			q.Set("limit", "2")
			r.URL.RawQuery = q.Encode()
		}
		node.Config.Handler.ServeHTTP(w, r)
		if !isList || q.Has("cursor") || q.Has("at_snapshot") {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.churns == 0 {
			return
		}
		s.churns--
		s.writes++
		p := fmt.Sprintf("logs/churn-%d", s.writes)
		if _, err := writer.PutFile(r.Context(), "a", "w", p, strings.NewReader("x"), client.PutOptions{Size: -1}); err != nil {
			t.Errorf("churn %s: %v", p, err)
		}
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	for _, p := range []string{"input/a", "input/b", "input/c", "input/d/e", "input/d/f", "input/d/g", "input/h"} {
		if _, err := writer.PutFile(t.Context(), "a", "w", p, strings.NewReader(p), client.PutOptions{Size: -1}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// churn makes the next n live listings meet a write between their first and second page.
func (s *churningServer) churn(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.churns = n
}

func TestLsPrintsAWholeListingOrNothingWhileTheWorkbenchChanges(t *testing.T) {
	s := newChurningServer(t)
	w := []string{"--server", s.url, "--agent", "a", "--workbench", "w"}
	for _, args := range [][]string{{"ls", "input"}, {"ls", "input/d"}, {"ls", "-r", "input"}} {
		name := strings.Join(args, " ")
		whole := cli(t, append(w, args...)...)
		if n := strings.Count(whole, "\n"); n < 3 {
			t.Fatalf("%s: %d lines, want a listing of more than one page:\n%s", name, n, whole)
		}

		// Changes the bound absorbs: the output is the whole listing, each entry once.
		s.churn(client.ListingAttempts - 1)
		if got := cli(t, append(w, args...)...); got != whole {
			t.Fatalf("%s while the workbench changes %d times printed\n%s\nwant\n%s", name, client.ListingAttempts-1, got, whole)
		}

		// A workbench that keeps changing is listed at a snapshot taken for ls (its
		// listings are not churned): the whole listing, and a line on stderr.
		s.churn(client.ListingAttempts)
		out, stderr, err := execCairn(t, append(w, args...)...)
		if err != nil || out != whole || !strings.Contains(stderr, "reads it at snapshot") {
			t.Fatalf("%s while the workbench keeps changing: stdout %q, stderr %q, error %v", name, out, stderr, err)
		}

		// Without the fallback: nothing on stdout, an error that says why and what to do.
		s.churn(client.ListingAttempts)
		out, _, err = execCairn(t, append(w, append(args, "--no-snapshot-fallback")...)...)
		if err == nil || out != "" {
			t.Fatalf("%s while the workbench keeps changing: stdout %q, error %v", name, out, err)
		}
		code, msg := describeError(err)
		for _, want := range []string{"kept changing", "safe", "--at-snapshot"} {
			if code != "ReadFenceChanged" || !strings.Contains(msg, want) {
				t.Fatalf("%s: error %s: %s, want %q in it", name, code, msg, want)
			}
		}
	}
}

func TestExportWritesTheWholeTreeOrNothingWhileTheWorkbenchChanges(t *testing.T) {
	s := newChurningServer(t)
	w := []string{"--server", s.url, "--agent", "a", "--workbench", "w", "--section", "input"}
	want := []string{"a", "b", "c", "d/e", "d/f", "d/g", "h"}

	dst := filepath.Join(t.TempDir(), "out")
	s.churn(client.ListingAttempts - 1)
	cli(t, append(w, "export", dst)...)
	if got := filesUnder(t, dst); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("exported %v, want %v", got, want)
	}

	dst = filepath.Join(t.TempDir(), "out")
	s.churn(client.ListingAttempts)
	out, stderr, err := execCairn(t, append(w, "export", dst)...)
	if err != nil || !strings.Contains(stderr, "reads it at snapshot") || strings.Join(filesUnder(t, dst), ",") != strings.Join(want, ",") {
		t.Fatalf("export while the workbench keeps changing: %v (stdout %q, stderr %q), exported %v", err, out, stderr, filesUnder(t, dst))
	}

	dst = filepath.Join(t.TempDir(), "out")
	s.churn(client.ListingAttempts)
	out, _, err = execCairn(t, append(w, "export", "--no-snapshot-fallback", dst)...)
	if err == nil || out != "" {
		t.Fatalf("export while the workbench keeps changing: stdout %q, error %v", out, err)
	}
	if code, msg := describeError(err); code != "ReadFenceChanged" || !strings.Contains(msg, "kept changing") || !strings.Contains(msg, "running the export again is safe") {
		t.Fatalf("error %s: %s", code, msg)
	}
	if got := filesUnder(t, dst); len(got) != 0 {
		t.Fatalf("a failed export wrote %v", got)
	}
}

// filesUnder lists the regular files below dir, relative and slash-separated, in order.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		got = append(got, filepath.ToSlash(rel))
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return got
}
