package workbench_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/dir"
	"github.com/cairnstore/cairn/internal/metricstest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// gatheringStore is a blob.Store whose Puts wait until `gather` of them are in flight at
// once (or their context ends), and which records the most that were.
type gatheringStore struct {
	blob.Store
	gather   int
	mu       sync.Mutex
	inFlight int
	most     int
	all      chan struct{} // closed when gather Puts are in flight
	closed   bool
}

func newGatheringStore(t *testing.T, gather int) *gatheringStore {
	bs, err := dir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	return &gatheringStore{Store: bs, gather: gather, all: make(chan struct{})}
}

func (s *gatheringStore) Put(ctx context.Context, key blob.Key, data blob.Hashed) (blob.PutResult, error) {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	if s.inFlight == s.gather && !s.closed {
		close(s.all)
		s.closed = true
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	select {
	case <-s.all:
	case <-ctx.Done():
		return blob.PutResult{}, ctx.Err()
	}
	return s.Store.Put(ctx, key, data)
}

func (s *gatheringStore) mostInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

// networkBody hides a reader's Len, as a body read from a socket has none.
type networkBody struct{ io.Reader }

// writeAtOnce writes bodies[i] to path i from as many goroutines, each declaring hints[i]
// as its length, and returns their errors.
func writeAtOnce(ctx context.Context, svc *workbench.Service, bodies [][]byte, hints []int64) []error {
	errs := make([]error, len(bodies))
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Go(func() {
			_, errs[i] = svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w",
				Path: fmt.Sprintf("outputs/%d.bin", i), Body: networkBody{bytes.NewReader(bodies[i])},
				SizeHint: hints[i], CreateWorkbench: true})
		})
	}
	wg.Wait()
	return errs
}

func bodiesOf(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte('a' + i)}, size)
	}
	return out
}

// TestSmallBodiesOfKnownLengthIngestSideBySide (issue 29): with one ingest slot, four
// 1 MiB bodies whose length is declared upload at once (each weighs its length, not a
// slot); before, each waited for the one slot, so the store's Puts never gathered and the
// writes failed at their deadline.
func TestSmallBodiesOfKnownLengthIngestSideBySide(t *testing.T) {
	bs := newGatheringStore(t, 4)
	svc := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 4096, MaxConcurrentIngests: 1}, bs).Service
	reg := prometheus.NewRegistry()
	if err := svc.Instrument(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	bodies := bodiesOf(4, 1<<20)
	for i, err := range writeAtOnce(ctx, svc, bodies, []int64{1 << 20, 1 << 20, 1 << 20, 1 << 20}) {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	for i, want := range bodies {
		if got := readAll(t, svc, fmt.Sprintf("outputs/%d.bin", i)); !bytes.Equal(got, want) {
			t.Fatalf("outputs/%d.bin reads back %d bytes, want its %d", i, len(got), len(want))
		}
	}
	if n := metricstest.Value(t, reg, "cairn_ingest_budget_wait_seconds"); n != 4 {
		t.Errorf("cairn_ingest_budget_wait_seconds counted %v admissions, want 4", n)
	}
	if v := metricstest.Value(t, reg, "cairn_ingest_budget_in_use_bytes"); v != 0 {
		t.Errorf("cairn_ingest_budget_in_use_bytes = %v once every write ended, want 0", v)
	}
	if v := metricstest.Value(t, reg, "cairn_ingest_budget_bytes"); v < 56<<20 || v > 57<<20 {
		t.Errorf("cairn_ingest_budget_bytes = %v with one slot, want about 56 MiB", v)
	}
}

// TestAnUploadThatGivesUpWaitingForTheBudgetIsCounted: a write of unknown length queued
// behind one that holds the node's only slot, whose request then ends, fails with its
// context's error, is counted as abandoned, and leaves the budget as it found it: the
// write that held the slot completes, and a later write gets the slot.
func TestAnUploadThatGivesUpWaitingForTheBudgetIsCounted(t *testing.T) {
	bs := newGatheringStore(t, 2) // the first Put waits for a second, which never comes
	svc := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 4096, MaxConcurrentIngests: 1}, bs).Service
	reg := prometheus.NewRegistry()
	if err := svc.Instrument(reg); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 1<<20)
	holder, stopHolder := context.WithCancel(t.Context())
	held := make(chan error, 1)
	go func() {
		_, err := svc.Writes.Write(holder, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/held.bin",
			Body: networkBody{bytes.NewReader(body)}, CreateWorkbench: true})
		held <- err
	}()
	// The holder is in its Put (holding the slot) once the budget is spent.
	deadline := time.After(10 * time.Second)
	for metricstest.Value(t, reg, "cairn_ingest_budget_in_use_bytes") == 0 {
		select {
		case err := <-held:
			t.Fatalf("the holding write ended early: %v", err)
		case <-deadline:
			t.Fatal("the holding write took no weight of the budget within 10s")
		case <-time.After(time.Millisecond):
		}
	}
	waiter, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := svc.Writes.Write(waiter, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/gave-up.bin",
		Body: networkBody{bytes.NewReader(body)}, CreateWorkbench: true})
	if err == nil {
		t.Fatal("a write queued behind the only slot until its deadline succeeded")
	}
	if n := metricstest.Value(t, reg, "cairn_ingest_budget_abandoned_total"); n != 1 {
		t.Fatalf("cairn_ingest_budget_abandoned_total = %v, want 1", n)
	}
	stopHolder()
	if err := <-held; err == nil {
		t.Fatal("the holding write, cancelled in its Put, succeeded")
	}
	if v := metricstest.Value(t, reg, "cairn_ingest_budget_in_use_bytes"); v != 0 {
		t.Fatalf("cairn_ingest_budget_in_use_bytes = %v once both writes ended, want 0", v)
	}
}

// TestBodiesOfUnknownOrUnderstatedLengthWeighASlot: with one ingest slot, bodies whose
// length is not declared, and bodies longer than they declared, upload one at a time
// (each weighs a whole slot once its bytes pass what it declared), and every byte of them
// is stored.
func TestBodiesOfUnknownOrUnderstatedLengthWeighASlot(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		hint int64
	}{
		{"unknown length", 1 << 20, 0},
		{"longer than declared", 3 << 20, 1 << 20},
		{"longer than one segment", 9 << 20, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs := newGatheringStore(t, 1)
			svc := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 4096, MaxConcurrentIngests: 1}, bs).Service
			bodies := bodiesOf(3, tc.size)
			for i, err := range writeAtOnce(t.Context(), svc, bodies, []int64{tc.hint, tc.hint, tc.hint}) {
				if err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			if most := bs.mostInFlight(); most != 1 {
				t.Fatalf("%d uploads were in flight at once with one slot, want 1", most)
			}
			for i, want := range bodies {
				if got := readAll(t, svc, fmt.Sprintf("outputs/%d.bin", i)); !bytes.Equal(got, want) {
					t.Fatalf("outputs/%d.bin reads back %d bytes, want its %d", i, len(got), len(want))
				}
			}
		})
	}
}
