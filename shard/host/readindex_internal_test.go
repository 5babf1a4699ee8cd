package host

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Follower reads share their read-index calls: reads that arrive while a call to the
// leader is in flight are answered by one next call that started after all of them, and
// never by the call in flight when they arrived.
func TestFollowerReadsShareOneReadIndexCallPerBatch(t *testing.T) {
	var calls atomic.Int64
	var version atomic.Uint64
	first := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/readindex/3") {
			http.NotFound(w, r)
			return
		}
		n := calls.Add(1)
		v := version.Add(1) // each call answers a newer index than any before it
		if n == 1 {
			once.Do(func() { close(first) })
			<-release
		}
		_ = json.NewEncoder(w).Encode(map[string]uint64{"version": v})
	}))
	defer srv.Close()
	b := newReadIndexBatcher((&peerClient{client: srv.Client()}).readIndex)
	addr := strings.TrimPrefix(srv.URL, "http://")

	early := make(chan uint64, 1)
	go func() {
		v, err := b.get(t.Context(), addr, 3)
		if err != nil {
			t.Errorf("first read: %v", err)
		}
		early <- v
	}()
	<-first // the first call is in flight at the leader
	const readers = 50
	var wg sync.WaitGroup
	got := make([]uint64, readers)
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := b.get(t.Context(), addr, 3)
			if err != nil {
				t.Errorf("read %d: %v", i, err)
			}
			got[i] = v
		}()
	}
	// The 50 reads queue behind the call in flight; none may take its answer.
	for {
		b.mu.Lock()
		n := len(b.batches[readIndexKey{shard: 3, addr: addr}].waiting)
		b.mu.Unlock()
		if n == readers {
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatal("reads did not queue")
		default:
			runtime.Gosched()
		}
	}
	close(release)
	wg.Wait()
	if v := <-early; v != 1 {
		t.Fatalf("first read got index %d, want 1", v)
	}
	for i, v := range got {
		if v != 2 {
			t.Fatalf("read %d got index %d from a call it did not wait for, want 2", i, v)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d read-index calls for 51 reads in two batches, want 2", n)
	}
}
