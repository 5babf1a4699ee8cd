package rest_test

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// pagesServer is a node with a memory budget of budget bytes and a short queue timeout,
// holding workbench w of agent a with n files in outputs/ (names of nameBytes bytes),
// one of them written twice, and a snapshot taken before the second write.
func pagesServer(t *testing.T, budget int64, n, nameBytes int) (*workbench.Service, string) {
	t.Helper()
	node := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: budget, QueryQueueTimeout: 50 * time.Millisecond})
	srv := serveNode(t, node)
	wb := srv.URL + "/v1/agents/a/workbenches/w"
	for i := range n {
		name := fmt.Sprintf("%04d-", i) + strings.Repeat("n", max(0, nameBytes-5))
		expect(t, do(t, "PUT", wb+"/files/outputs/"+name, strings.NewReader("x")), 201, "")
	}
	expect(t, do(t, "PUT", wb+"/files/input/log.txt", strings.NewReader("one")), 201, "")
	expect(t, do(t, "POST", wb+"/snapshots", strings.NewReader(`{"name":"before"}`), "Content-Type", "application/json"), 201, "")
	expect(t, do(t, "PUT", wb+"/files/input/log.txt", strings.NewReader("two")), 200, "")
	return node.Service, wb
}

// TestListingsHistoriesAndStateDiffsTakeTheNodesMemoryBudget (issue 25 finding 11: only
// the queries, diffs and proposal listings were under the budget): a file listing, a
// path's history and a page of a state diff each hold their estimate of the node's memory
// budget while they answer, and while the budget stays taken each waits the queue timeout
// and is answered 429 ResourceExhausted, retryable, with Retry-After.
func TestListingsHistoriesAndStateDiffsTakeTheNodesMemoryBudget(t *testing.T) {
	const budget = 64 << 20
	svc, wb := pagesServer(t, budget, 50, 20)
	for _, tc := range []struct{ name, url string }{
		{"a listing", wb + "/list?path=outputs&limit=1000"},
		{"a history", wb + "/history?path=input/log.txt"},
		{"a state diff", wb + "/diff?from=snapshot:before&limit=1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, do(t, "GET", tc.url, nil), 200, "")
			release, err := svc.AdmitMemory(t.Context(), budget, "the test's hold")
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			r := do(t, "GET", tc.url, nil)
			expect(t, r, 429, "ResourceExhausted")
			if r.json["retryable"] != true || r.header.Get("Retry-After") == "" {
				t.Errorf("with the budget taken: retryable %v, Retry-After %q", r.json["retryable"], r.header.Get("Retry-After"))
			}
		})
	}
}

// TestLargeListingIsCutToAPageShare: a listing of long names whose page would hold more
// than an eighth of the memory budget answers fewer entries than its limit, truncated with
// a next_cursor, and the cursor pages through every entry once.
func TestLargeListingIsCutToAPageShare(t *testing.T) {
	const budget, files = 8 << 20, 60
	_, wb := pagesServer(t, budget, files, 4000) // about 67 KiB of estimate per entry: 15 a page
	seen := map[string]bool{}
	pages := 0
	next := wb + "/list?path=outputs&limit=1000"
	for {
		r := do(t, "GET", next, nil)
		expect(t, r, 200, "")
		entries, _ := r.json["entries"].([]any)
		if len(entries) == 0 {
			t.Fatalf("page %d is empty: %s", pages, r.body)
		}
		for _, e := range entries {
			name := e.(map[string]any)["name"].(string)
			if seen[name] {
				t.Fatalf("%s listed twice", name)
			}
			seen[name] = true
		}
		pages++
		cur, _ := r.json["next_cursor"].(string)
		if cur == "" {
			break
		}
		if r.json["truncated"] != true {
			t.Errorf("page %d with a next_cursor has truncated %v", pages, r.json["truncated"])
		}
		next = wb + "/list?path=outputs&limit=1000&cursor=" + url.QueryEscape(cur)
	}
	if len(seen) != files || pages < 2 {
		t.Errorf("%d entries in %d pages, want %d in several (a page holds at most %d bytes of a %d-byte budget)", len(seen), pages, files, budget/8, budget)
	}
}

// TestAPagesEstimateBoundsWhatItAllocates: what one REST page allocates in all, from the
// request to the written answer, is less than the estimate it holds of the budget (so the
// estimate bounds its memory, whatever of it is live at once): a listing of 1000 entries,
// a state diff of 1000 rows and a history of 300 versions. The least of a few runs is
// taken: other goroutines of the node may allocate meanwhile. Under the race detector,
// whose runtime allocates more per object, the bound is twice the estimate.
func TestAPagesEstimateBoundsWhatItAllocates(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		files     int // files written, each at its own path
		versions  int // versions of input/log.txt written after the snapshot
	}{
		{"a listing of 1000 entries", "/list?path=outputs&limit=1000", 1000, 0},
		{"a state diff of 1000 rows", "/diff?from=snapshot:before&limit=1000", 1000, 0},
		{"a history of 300 versions", "/history?path=input/log.txt&limit=1000", 0, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: 256 << 20})
			svc := node.Service
			write := func(path, body string) {
				t.Helper()
				if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path, Body: strings.NewReader(body), CreateWorkbench: true}); err != nil {
					t.Fatal(err)
				}
			}
			write("input/log.txt", "first")
			name := "before"
			if _, err := svc.Tools.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: &name}); err != nil {
				t.Fatal(err)
			}
			for i := range tc.files {
				write(fmt.Sprintf("outputs/file-%04d.txt", i), "x")
			}
			for i := range tc.versions {
				write("input/log.txt", fmt.Sprint(i))
			}
			h := rest.NewHandler(svc, rest.Options{Ready: node.Shard.Ready})
			allocated := int64(1 << 62)
			for range 5 {
				req := httptest.NewRequest("GET", "/v1/agents/a/workbenches/w"+tc.url, nil)
				rec := httptest.NewRecorder()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				h.ServeHTTP(rec, req)
				runtime.ReadMemStats(&after)
				if rec.Code != 200 {
					t.Fatalf("%d %s", rec.Code, rec.Body)
				}
				allocated = min(allocated, int64(after.TotalAlloc-before.TotalAlloc))
			}
			estimate := svc.AdmissionHighWater() // the pages are the only requests under the budget
			bound := estimate
			if raceDetector {
				bound *= 2
			}
			t.Logf("allocated %d bytes; its estimate is %d bytes", allocated, estimate)
			if allocated > bound {
				t.Errorf("allocated %d bytes, more than its estimate %d (bound %d)", allocated, estimate, bound)
			}
		})
	}
}
