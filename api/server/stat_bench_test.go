package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/ops"
)

// BenchmarkStat measures a HEAD of a small file (`cairn bench --scenario stat`) through
// the node's whole client-port handler chain (authentication, routing, the surfaces in
// front of REST, REST), in process: "chain" with a recorder (no socket: the chain's own
// cost), "socket" with api/client's Stat over a loopback connection (both ends' cost).
// Besides the wall time it reports the process's CPU time per call (cpu-µs/op), which
// other work on the machine disturbs less.
func BenchmarkStat(b *testing.B) {
	cfg := ops.DefaultConfig()
	cfg.DataDir = b.TempDir()
	cfg.Listen = "127.0.0.1:0"
	n := openReady(b, cfg, ops.Credentials{})
	srv := httptest.NewServer(n.Handler())
	defer srv.Close()
	c := client.New(srv.URL, nil)
	if _, err := c.CreateWorkbench(b.Context(), "a", "w"); err != nil {
		b.Fatal(err)
	}
	if _, err := c.PutFile(b.Context(), "a", "w", "input/bench/f.txt", strings.NewReader(strings.Repeat("0123456789abcde\n", 64)),
		client.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Run("chain", func(b *testing.B) {
		h := n.Handler()
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodHead, "/v1/agents/a/workbenches/w/files/input/bench/f.txt", nil))
			if w.Code != http.StatusOK {
				b.Fatalf("HEAD: %d %s", w.Code, w.Body.Bytes())
			}
		}
	})
	b.Run("socket", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := c.Stat(b.Context(), "a", "w", "input/bench/f.txt"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU returns the func that reports the process's CPU time (user and system) since
// reportCPU was called, per b.N, as cpu-µs/op.
func reportCPU(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
