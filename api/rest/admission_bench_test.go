package rest_test

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/api/workbench"
)

// BenchmarkParallelLargeProposalListings is issue 25 finding 11's load (30 parallel GET
// /proposals?limit=1000 from one key held 1.05 GB, 80 held 2.3 GB): 80 parallel listings of
// 200 proposals that each carry 60 KiB of metadata, at the default memory budget. It
// reports the admission's high-water mark (admitted-peak-MB, at most the budget), the
// process's peak RSS (peak-rss-MB, Linux VmHWM; the clients drop the answers as they
// read them) and the requests answered busy (429, busy/op).
//
//	go test -run XXX -bench ParallelLargeProposalListings -benchtime 3x ./api/rest/
func BenchmarkParallelLargeProposalListings(b *testing.B) {
	svc, wb := proposalsServer(b, workbench.DefaultQueryBudgetBytes, 200)
	var busy atomic.Int64
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for range 80 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Get(wb + "/proposals?limit=1000")
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				switch resp.StatusCode {
				case 200: // the answer is read and dropped: the RSS is the node's, not the clients'
					_, err = io.Copy(io.Discard, resp.Body)
				case 429:
					busy.Add(1)
				default:
					b.Errorf("status %d", resp.StatusCode)
				}
				if err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	peak := svc.AdmissionHighWater()
	if peak > workbench.DefaultQueryBudgetBytes {
		b.Errorf("admission high-water mark %d bytes above the budget %d", peak, workbench.DefaultQueryBudgetBytes)
	}
	b.ReportMetric(float64(peak)/(1<<20), "admitted-peak-MB")
	b.ReportMetric(float64(busy.Load())/float64(b.N), "busy/op")
	if rss := peakRSS(); rss > 0 {
		b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MB")
	}
}

// peakRSS is the process's peak resident set in bytes (Linux /proc/self/status VmHWM), 0
// where it is not known.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kb, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return n << 10
		}
	}
	return 0
}
