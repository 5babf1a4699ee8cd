package workbench_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestMultiSegmentReadsWithReadAhead: bodies of many segments read back exactly, whole
// and in ranges that start and end inside segments, while the next segment is fetched
// ahead; a reader closed mid-body stops its read-ahead.
func TestMultiSegmentReadsWithReadAhead(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{MaxConcurrentPrefetches: 2}).Service
	ctx := context.Background()
	body := make([]byte, 40<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	if _, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "input/big.bin", Body: bytes.NewReader(body), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	f, err := svc.Reads.Open(ctx, "a", "w", "input/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range [][2]int64{{0, -1}, {1, 10 << 20}, {5<<20 + 7, 20 << 20}, {int64(len(body)) - 3, 3}, {int64(len(body)), 0}} {
		rd, err := f.Reader(ctx, rg[0], rg[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rd)
		rd.Close()
		end := int64(len(body))
		if rg[1] >= 0 {
			end = rg[0] + rg[1]
		}
		if err != nil || !bytes.Equal(got, body[rg[0]:end]) {
			t.Fatalf("range %v: %d bytes, err %v", rg, len(got), err)
		}
	}
	// Many readers at once, some closed early: every slot comes back.
	for i := 0; i < 6; i++ {
		rd, _ := f.Reader(ctx, 0, -1)
		io.CopyN(io.Discard, rd, int64(i)<<20)
		rd.Close()
	}
	rd, _ := f.Reader(ctx, 0, -1)
	got, err := io.ReadAll(rd)
	rd.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("after early closes: %d bytes, %v", len(got), err)
	}
}
