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
	"github.com/cairnstore/cairn/blob/blobtest"
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
	return &gatheringStore{Store: blobtest.Dir(t), gather: gather, all: make(chan struct{})}
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

// TestSmallBodiesIngestSideBySide (issue 29): with one ingest slot, four 1 MiB bodies of
// declared length upload at once (each weighs its length, not a slot); before, each
// waited for the one slot, so the store's Puts never gathered and the writes failed at
// their deadline.
func TestSmallBodiesIngestSideBySide(t *testing.T) {
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

// TestBodiesOfUnknownLengthOrLongerThanASegmentOrThanDeclaredWeighASlot: with one ingest
// slot, bodies of unknown length, bodies longer than one segment, and bodies longer than
// they declared upload one at a time (each weighs a whole slot once its bytes need it),
// and every byte of them is stored.
func TestBodiesOfUnknownLengthOrLongerThanASegmentOrThanDeclaredWeighASlot(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		hint int64
	}{
		{"unknown length", 1 << 20, 0},
		{"longer than declared", 3 << 20, 1 << 20},
		{"longer than one segment, declared", 9 << 20, 9 << 20},
		{"longer than one segment, unknown length", 9 << 20, 0},
		{"longer than one segment and than declared", 9 << 20, 1 << 20},
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

// holdTheSlot starts a write of a 9 MiB body of declared length (a slot's weight) whose
// upload never completes (bs gathers two Puts; no other write reaches it), waits until it
// holds the budget, and returns a cancel that ends it and its result.
func holdTheSlot(t *testing.T, svc *workbench.Service, reg prometheus.Gatherer) (stop func(), result <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	held := make(chan error, 1)
	body := bytes.Repeat([]byte("h"), 9<<20)
	go func() {
		_, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/held.bin",
			Body: networkBody{bytes.NewReader(body)}, SizeHint: int64(len(body)), CreateWorkbench: true})
		held <- err
	}()
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
	return cancel, held
}

// budgetNode is a node of the given ingest slots over a store whose first Put waits for a
// second, with its metrics registered.
func budgetNode(t *testing.T, slots int, queueTimeout time.Duration) (*workbench.Service, *prometheus.Registry) {
	t.Helper()
	bs := newGatheringStore(t, 2)
	svc := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 4096, MaxConcurrentIngests: slots, IngestQueueTimeout: queueTimeout}, bs).Service
	reg := prometheus.NewRegistry()
	if err := svc.Instrument(reg); err != nil {
		t.Fatal(err)
	}
	return svc, reg
}

// TestAnUploadWaitsForTheBudgetAtMostTheQueueTimeout: a write queued behind one that holds
// the node's only slot is answered a retryable ResourceExhausted naming the limit once it
// has waited IngestQueueTimeout; one whose request ends first fails with its context's
// error. Each is counted by why it ended, and neither leaks budget: once the holder ends,
// nothing is in use.
func TestAnUploadWaitsForTheBudgetAtMostTheQueueTimeout(t *testing.T) {
	svc, reg := budgetNode(t, 1, 200*time.Millisecond)
	stop, held := holdTheSlot(t, svc, reg)
	body := bytes.Repeat([]byte("w"), 9<<20)
	write := func(ctx context.Context, path string) error {
		_, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: networkBody{bytes.NewReader(body)}, SizeHint: int64(len(body)), CreateWorkbench: true})
		return err
	}
	e := workbench.AsError(write(t.Context(), "outputs/timed-out.bin"))
	if e == nil || e.Code != workbench.CodeResourceExhausted || !e.Retryable || e.Details["limit"] != workbench.LimitIngestBudget {
		t.Fatalf("a write queued past IngestQueueTimeout: %v, want a retryable ResourceExhausted with limit %s", e, workbench.LimitIngestBudget)
	}
	if n := metricstest.Value(t, reg, "cairn_ingest_budget_waits_ended_total", "reason=queue_timeout"); n != 1 {
		t.Fatalf("waits ended by the queue timeout: %v, want 1", n)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := write(ctx, "outputs/gave-up.bin"); err == nil {
		t.Fatal("a write queued behind the only slot past its deadline succeeded")
	}
	if n := metricstest.Value(t, reg, "cairn_ingest_budget_waits_ended_total", "reason=request_ended"); n != 1 {
		t.Fatalf("waits ended by their request: %v, want 1", n)
	}
	stop()
	if err := <-held; err == nil {
		t.Fatal("the holding write, cancelled in its Put, succeeded")
	}
	if v := metricstest.Value(t, reg, "cairn_ingest_budget_in_use_bytes"); v != 0 {
		t.Fatalf("cairn_ingest_budget_in_use_bytes = %v once every write ended, want 0", v)
	}
}

// TestSmallUploadsKeepAShareBesideLargeOnes (issue 29, a tester's finding): with two
// slots, one held by a body that weighs a slot and does not finish (as a slow upload of
// unknown length keeps its slot while it keeps the minimum rate), a second such body waits
// (large bodies hold at most one slot less than the budget) and is answered at the queue
// timeout, while a 1 MiB body of declared length is let in at once and written.
func TestSmallUploadsKeepAShareBesideLargeOnes(t *testing.T) {
	svc, reg := budgetNode(t, 2, 300*time.Millisecond)
	_, held := holdTheSlot(t, svc, reg)
	write := func(path string, size int) error {
		body := bytes.Repeat([]byte("b"), size)
		_, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: networkBody{bytes.NewReader(body)}, SizeHint: int64(size), CreateWorkbench: true})
		return err
	}
	if e := workbench.AsError(write("outputs/large.bin", 9<<20)); e == nil || e.Details["limit"] != workbench.LimitIngestBudget {
		t.Fatalf("a second body that weighs a slot, beside one holding a slot of two: %v, want it to wait and time out", e)
	}
	if err := write("outputs/small.bin", 1<<20); err != nil { // its Put lets the holder's go on
		t.Fatalf("a 1 MiB body beside a large one holding a slot of two: %v", err)
	}
	if err := <-held; err != nil {
		t.Fatalf("the holding write: %v", err)
	}
}

// TestAStalledBodyKeepsItsWeight (issue 29, a tester's finding): a body whose client
// stops sending after 6 of its declared 9 MiB keeps its weight (a slot), since the
// buffers holding those bytes stay: with one slot, a second such body is not let in
// beside it (it waits until the queue timeout), and once the first body's client sends
// the rest, it is written and the second one then is too. Before, a stalled body gave its
// weight back after 20 ms, and four hundred stalled 8 MiB uploads held 3.3 GB.
func TestAStalledBodyKeepsItsWeight(t *testing.T) {
	const size = 9 << 20
	svc := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 4096, MaxConcurrentIngests: 1, IngestQueueTimeout: 300 * time.Millisecond},
		newGatheringStore(t, 1)).Service
	first, second := bytes.Repeat([]byte("s"), size), bytes.Repeat([]byte("t"), size)
	write := func(path string, body io.Reader) error {
		_, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: body, SizeHint: size, CreateWorkbench: true})
		return err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- write("outputs/stalled.bin", pr) }()
	if _, err := pw.Write(first[:6<<20]); err != nil { // returns once the ingest has read it
		t.Fatal(err)
	}
	if e := workbench.AsError(write("outputs/second.bin", networkBody{bytes.NewReader(second)})); e == nil || e.Details["limit"] != workbench.LimitIngestBudget {
		t.Fatalf("a 9 MiB write beside a stalled 9 MiB one with one slot: %v, want it to wait and time out", e)
	}
	if _, err := pw.Write(first[6<<20:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("the stalled body, once sent whole: %v", err)
	}
	if err := write("outputs/second.bin", networkBody{bytes.NewReader(second)}); err != nil {
		t.Fatalf("the second body once the first was written: %v", err)
	}
	for path, want := range map[string][]byte{"outputs/stalled.bin": first, "outputs/second.bin": second} {
		if got := readAll(t, svc, path); !bytes.Equal(got, want) {
			t.Fatalf("%s reads back %d bytes, want its %d", path, len(got), len(want))
		}
	}
}

// truncated yields body, then fails as net/http fails a body cut off before its
// Content-Length: io.ErrUnexpectedEOF.
type truncated struct{ r io.Reader }

func (b *truncated) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// TestATruncatedBodyIsNeverStored: a body cut off before its declared length — within
// its first piece, which the gate reads whole, and later — fails the write as a body
// that could not be read, and leaves the path as it was.
func TestATruncatedBodyIsNeverStored(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096}).Service
	for _, c := range []struct {
		sent int
		hint int64
	}{{10 << 10, 100 << 10}, {1 << 20, 2 << 20}, {10 << 10, 0}} {
		path := fmt.Sprintf("outputs/cut-%d-%d.bin", c.sent, c.hint)
		_, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: &truncated{bytes.NewReader(bytes.Repeat([]byte("c"), c.sent))}, SizeHint: c.hint, CreateWorkbench: true})
		if e := workbench.AsError(err); e == nil || e.Code != workbench.CodeInvalidArguments {
			t.Errorf("%d bytes of a body declared as %d, then cut off: %v, want InvalidArguments", c.sent, c.hint, err)
		}
		if _, err := svc.Reads.Stat(t.Context(), "a", "w", path); workbench.AsError(err) == nil || workbench.AsError(err).Code != workbench.CodeNotFound {
			t.Errorf("%d bytes of a body declared as %d, then cut off, were stored: %v", c.sent, c.hint, err)
		}
	}
}
