package framework

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// Populate sends the requests req(0) … req(n-1) over hc from writers goroutines at once
// and returns once every one was answered; each must be answered 201 Created. A writer
// stops at its first failure (a transport error or another status), and each failure
// then fails t. It fills a node before a test measures or breaks something (a large
// restore, a query over a large root); unlike a Load it neither retries nor records.
func Populate(t testing.TB, hc *http.Client, writers, n int, req func(i int) *http.Request) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				r := req(int(i))
				resp, err := hc.Do(r)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					errs <- fmt.Errorf("%s %s: status %d", r.Method, r.URL, resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
