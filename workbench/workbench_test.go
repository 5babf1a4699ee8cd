package workbench_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

func newService(t *testing.T, inline int64) (*workbench.Service, *shard.Shard) {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: inline})
	return n.Service, n.Shard
}

func readAll(t *testing.T, svc *workbench.Service, path string) []byte {
	t.Helper()
	f, err := svc.Reads.Open(t.Context(), "a", "w", path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.ReadAll(t.Context(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if got := sha256.Sum256(b); meta.Digest(got) != f.Info.Digest {
		t.Fatalf("stored digest does not match the body")
	}
	return b
}

// Concurrent appenders to one file race on its generation; every append lands exactly
// once, whole, and the stored digest stays the digest of the body — for inline segments
// and for segments in the object store.
func TestConcurrentAppendsLoseNothing(t *testing.T) {
	for _, inline := range []int64{4096, 0} {
		t.Run(fmt.Sprintf("inline max %d", inline), func(t *testing.T) {
			svc, _ := newService(t, inline)
			var wg sync.WaitGroup
			for w := 0; w < 6; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < 15; i++ {
						line := fmt.Sprintf("w%d-%02d\n", w, i)
						if _, err := svc.Writes.Append(context.Background(), workbench.AppendRequest{Agent: "a", Workbench: "w",
							Path: "logs/run.log", Body: strings.NewReader(line), CreateWorkbench: true}); err != nil {
							t.Errorf("append %q: %v", line, err)
							return
						}
					}
				}(w)
			}
			wg.Wait()
			body := string(readAll(t, svc, "logs/run.log"))
			lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
			if len(lines) != 90 {
				t.Fatalf("%d lines, want 90", len(lines))
			}
			seen := map[string]bool{}
			next := map[int]int{}
			for _, l := range lines {
				var w, i int
				if _, err := fmt.Sscanf(l, "w%d-%d", &w, &i); err != nil || seen[l] {
					t.Fatalf("bad or repeated line %q", l)
				}
				if i != next[w] {
					t.Fatalf("writer %d's appends out of order at %q", w, l)
				}
				next[w]++
				seen[l] = true
			}
		})
	}
}

func TestAppendToLargeObjectStoreFileKeepsDigest(t *testing.T) {
	svc, _ := newService(t, 4096)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB: several chunks
	if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/big",
		Body: bytes.NewReader(big), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "outputs/big", Body: strings.NewReader("tail")})
	if err != nil {
		t.Fatal(err)
	}
	if res.AppendedBytes != 4 || res.Size != int64(len(big))+4 || res.AppendDigest != meta.Digest(sha256.Sum256([]byte("tail"))) {
		t.Fatalf("%+v", res)
	}
	if got := readAll(t, svc, "outputs/big"); !bytes.Equal(got, append(big, "tail"...)) {
		t.Fatal("body differs after append")
	}
}

func TestAppendWithIfGenerationDoesNotRetry(t *testing.T) {
	svc, _ := newService(t, 4096)
	first, err := svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/l", Body: strings.NewReader("1"), CreateWorkbench: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/l", Body: strings.NewReader("2")}); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/l", Body: strings.NewReader("3"), IfGeneration: first.Generation})
	if we := workbench.AsError(err); we == nil || we.Code != workbench.CodeConflict {
		t.Fatalf("stale If-Match append: %v", err)
	}
	if got := string(readAll(t, svc, "logs/l")); got != "12" {
		t.Fatalf("body %q", got)
	}
}

func TestReadRangesAcrossInlineAndStoredSegments(t *testing.T) {
	svc, _ := newService(t, 8)
	// First append is inline (≤ 8 bytes), the second goes to the object store.
	svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/mixed", Body: strings.NewReader("abcd"), CreateWorkbench: true})
	svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/mixed", Body: strings.NewReader("efghijklmnop")})
	f, err := svc.Reads.Open(t.Context(), "a", "w", "logs/mixed")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off, n int64
		want   string
	}{{0, -1, "abcdefghijklmnop"}, {2, 4, "cdef"}, {4, 3, "efg"}, {15, 5, "p"}, {16, -1, ""}} {
		r, err := f.Reader(t.Context(), c.off, c.n)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		if string(b) != c.want {
			t.Fatalf("[%d,+%d): %q, want %q", c.off, c.n, b, c.want)
		}
	}
}

func TestEmptyAppendToAnExistingFileChangesNothing(t *testing.T) {
	svc, _ := newService(t, 4096)
	first, err := svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/l", Body: strings.NewReader("x"), CreateWorkbench: true})
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/l", Body: strings.NewReader("")})
	if err != nil || again.Generation != first.Generation || again.Size != 1 || again.AppendedBytes != 0 || again.Created {
		t.Fatalf("empty append: %+v %v (first %+v)", again, err, first)
	}
	empty, err := svc.Writes.Append(t.Context(), workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/new", Body: strings.NewReader("")})
	if err != nil || !empty.Created || empty.Size != 0 {
		t.Fatalf("empty append creating a file: %+v %v", empty, err)
	}
}
