package workbench_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// distantStore is a local blob store whose Puts take rtt longer, as an object store on
// another host does: its time is the round trip, not this machine's CPU.
type distantStore struct {
	blob.Store
	rtt time.Duration
}

func (s distantStore) Put(ctx context.Context, key blob.Key, data blob.Hashed) (blob.PutResult, error) {
	select {
	case <-time.After(s.rtt):
	case <-ctx.Done():
		return blob.PutResult{}, ctx.Err()
	}
	return s.Store.Put(ctx, key, data)
}

// BenchmarkConcurrentIngest measures 16 writers putting new 1 MiB bodies of declared
// length at once through the write path into a store 20 ms away (distantStore), with the
// default ingest budget: how many bodies upload side by side decides the rate, since the
// round trip, not the CPU, is the cost. ops/s is of bodies. Compare across commits in one
// run (issue 29: the four ingest slots capped this at about 4 bodies per round trip).
func BenchmarkConcurrentIngest(b *testing.B) {
	const writers, size = 16, 1 << 20
	svc := workbenchtest.NewOn(b, workbench.Config{}, distantStore{Store: blobtest.Dir(b), rtt: 20 * time.Millisecond}).Service
	var next atomic.Int64
	var wg sync.WaitGroup
	b.SetBytes(size)
	b.ResetTimer()
	start := time.Now()
	for range writers {
		wg.Go(func() {
			body := incompressible(size)
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				stamp(body, uint64(i))
				if _, err := svc.Writes.Write(b.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w",
					Path: fmt.Sprintf("outputs/%d.bin", i), Body: networkBody{bytes.NewReader(body)}, SizeHint: size,
					CreateWorkbench: true}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "bodies/s")
}
