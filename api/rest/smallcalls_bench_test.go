package rest_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// smallCallsNode is a node whose workbench "w" of agent "a" holds files 1 KiB text files
// under input/bench/list, as `cairn bench`'s list and stat scenarios write them, behind the
// REST handler (called in process: no socket, so the numbers are the server's own).
func smallCallsNode(b *testing.B, files int) http.Handler {
	b.Helper()
	n := workbenchtest.New(b, workbench.Config{})
	body := bytes.Repeat([]byte("0123456789abcde\n"), 64)
	for i := range files {
		if _, err := n.Service.Writes.Write(context.Background(), workbench.WriteRequest{Agent: "a", Workbench: "w",
			Path: fmt.Sprintf("input/bench/list/f-%06d.txt", i), Body: bytes.NewReader(body), SizeHint: int64(len(body)),
			ContentType: "text/plain; charset=utf-8", CreateWorkbench: true}); err != nil {
			b.Fatal(err)
		}
	}
	return rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready})
}

// BenchmarkSmallCalls measures the REST small-call paths of `cairn bench` (BENCHMARKS.md:
// the stat and list scenarios) through the handler, without a socket: HEAD of a 1 KiB
// file, and GET of a listing of 100 entries (one page).
func BenchmarkSmallCalls(b *testing.B) {
	h := smallCallsNode(b, 100)
	run := func(b *testing.B, method, url string, want int) {
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(method, url, nil))
			if w.Code != want {
				b.Fatalf("%s %s: %d %s", method, url, w.Code, w.Body.Bytes())
			}
		}
	}
	b.Run("stat", func(b *testing.B) {
		run(b, http.MethodHead, "/v1/agents/a/workbenches/w/files/input/bench/list/f-000042.txt", http.StatusOK)
	})
	b.Run("list-100", func(b *testing.B) {
		run(b, http.MethodGet, "/v1/agents/a/workbenches/w/list?path=input/bench/list&limit=1000", http.StatusOK)
	})
}
