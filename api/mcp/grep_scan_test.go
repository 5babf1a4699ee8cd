package mcp

import (
	"bytes"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// TestAGrepPageThatFoundNothingYetSaysSo (issue 25, finding 16): a file larger than one
// call's scan bound, whose only match is at its end, answers pages without matches before
// the one that finds it; each such page says that the search is not finished
// (scan_complete false, scanned_bytes, next_cursor), and only the last says it is.
func TestAGrepPageThatFoundNothingYetSaysSo(t *testing.T) {
	svc := newService(t, 0)
	line := append(bytes.Repeat([]byte("a"), 1023), '\n')
	body := append(bytes.Repeat(line, (workbench.GrepMaxScanBytes+(1<<20))/len(line)), "the needle\n"...)
	if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "logs/big.log",
		Body: bytes.NewReader(body), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, svc, "a")
	args := map[string]any{"id": "w", "pattern": "NEEDLE", "recursive": true}
	found, empty := 0, 0
	for page := 1; ; page++ {
		r := ok(t, cs, "workbench_grep", args)
		matches := r.list(t, "matches")
		found += len(matches)
		done := r["next_cursor"] == nil
		if r["scan_complete"] != done {
			t.Fatalf("page %d: scan_complete %v with next_cursor %v", page, r["scan_complete"], r["next_cursor"])
		}
		if scanned := r.int(t, "scanned_bytes"); scanned <= 0 || scanned > workbench.GrepMaxScanBytes+(64<<10) {
			t.Fatalf("page %d: scanned_bytes %d", page, scanned)
		}
		if len(matches) == 0 && !done {
			empty++
			if r["truncated"] != true {
				t.Fatalf("page %d found nothing yet and is not truncated", page)
			}
		}
		if done {
			break
		}
		if page == 10 {
			t.Fatal("the search did not end in 10 pages")
		}
		args["cursor"] = r["next_cursor"]
	}
	if found != 1 || empty == 0 {
		t.Fatalf("%d matches after %d pages that found nothing yet, want 1 after at least one", found, empty)
	}
}
