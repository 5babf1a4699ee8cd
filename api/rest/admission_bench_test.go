package rest_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
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
	benchParallelListings(b, svc, wb+"/proposals?limit=1000")
}

// BenchmarkParallelLargeFileListings is the same load on file listings (issue 25: a
// listing's answer grows with its directory and its names): 80 parallel GET
// …/list?limit=1000 of a directory of 1000 files with 2000-byte names, at the default
// memory budget. Each listing holds its estimate (about 35 MiB) of the budget while it
// answers, so about 14 run at once and the others wait for their share, whatever the
// number of clients. It reports admitted-peak-MB, busy/op and peak-rss-MB as
// BenchmarkParallelLargeProposalListings does (on 2 cores: peak RSS about 640 MB; 2.5 GB
// before listings were under the budget).
//
//	go test -run XXX -bench ParallelLargeFileListings -benchtime 3x ./api/rest/
func BenchmarkParallelLargeFileListings(b *testing.B) {
	node := workbenchtest.New(b, workbench.Config{InlineMaxBytes: 4096, QueryBudgetBytes: workbench.DefaultQueryBudgetBytes, QueryQueueTimeout: 30 * time.Second})
	svc := node.Service
	srv := serveNode(b, node)
	for i := range 1000 {
		name := fmt.Sprintf("outputs/%04d-%s.txt", i, strings.Repeat("n", 1991))
		if _, err := svc.Writes.Write(b.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: name, Body: strings.NewReader("x"), CreateWorkbench: true}); err != nil {
			b.Fatal(err)
		}
	}
	benchParallelListings(b, svc, srv.URL+"/v1/agents/a/workbenches/w/list?path=outputs&limit=1000")
}

// benchParallelListings runs b.N rounds of 80 parallel GETs of url against svc's
// surface at the default memory budget, drops the answers as it reads them, checks that
// the admission stayed within the budget and reports admitted-peak-MB, busy/op (429
// answers) and peak-rss-MB.
func benchParallelListings(b *testing.B, svc *workbench.Service, url string) {
	var busy atomic.Int64
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for range 80 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Get(url)
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
