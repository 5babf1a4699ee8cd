package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/mcp"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// newNode starts a real single-node Cairn (Raft replica, blob directory, REST and MCP
// handlers) on a loopback port for the test.
func newNode(t *testing.T) string {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	srv := httptest.NewServer(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready, MCP: mcp.Handler(n.Service, mcp.Options{})}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestSmallPutAgainstARealNodeWithTheFsyncBaseline(t *testing.T) {
	url := newNode(t)
	cfg := DefaultConfig()
	cfg.Server = url
	cfg.Agent = "bench"
	cfg.Workbench = "smoke"
	cfg.Scenario = ScenarioSmallPut
	cfg.Concurrency = 4
	cfg.Duration = 300 * time.Millisecond
	cfg.Baselines = []string{BaselineFsync}
	cfg.BaselineDir = t.TempDir()
	var progress bytes.Buffer
	rep, err := Run(t.Context(), cfg, RunOptions{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}

	c := rep.Cairn
	if c == nil || c.OK == 0 || c.Errors != 0 {
		t.Fatalf("cairn phase %+v: want successful puts and no errors", c)
	}
	if c.Latency.Count != c.Ops || c.Latency.P50Micros <= 0 || c.Latency.MaxMicros < c.Latency.P99Micros {
		t.Errorf("latency %+v of %d ops is inconsistent", c.Latency, c.Ops)
	}
	// Every acknowledged put is a file the server now lists.
	files := 0
	err = client.New(url, nil).Walk(t.Context(), cfg.Agent, cfg.Workbench, "input/bench/p0", func(e client.Entry) error {
		if !e.IsDir() {
			files++
			if e.SizeBytes != 1024 {
				t.Errorf("%s holds %d bytes, want 1024", e.Path, e.SizeBytes)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if int64(files) != c.OK {
		t.Errorf("server lists %d files, the report says %d puts succeeded", files, c.OK)
	}

	if len(rep.Baselines) != 1 {
		t.Fatalf("%d baseline phases, want 1", len(rep.Baselines))
	}
	b := rep.Baselines[0]
	if b.OK == 0 || b.Errors != 0 || b.Concurrency != 4 || b.Baseline != BaselineFsync {
		t.Fatalf("baseline phase %+v: want successful fsync writes at the same concurrency", b)
	}
	if cmp := b.Comparison; cmp == nil || cmp.ThroughputRatio <= 0 || cmp.P99Ratio <= 0 {
		t.Errorf("comparison %+v: want positive ratios", cmp)
	}
	if left, _ := os.ReadDir(cfg.BaselineDir); len(left) != 0 {
		t.Errorf("the baseline left %d entries in its directory", len(left))
	}
	if env := rep.Environment; env.Cores < 1 || env.GoVersion == "" || env.ServerURL != url {
		t.Errorf("environment %+v is incomplete", env)
	}

	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("the JSON report does not parse back: %v", err)
	}
	if back.Cairn.OK != c.OK || back.Cairn.Latency != c.Latency || back.Params.SizeBytes != 1024 || back.Cairn.HistogramV2 == "" {
		t.Errorf("JSON round trip lost data: %+v", back.Cairn)
	}
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| cairn small-put | closed |", "| baseline fsync | closed |", "Cairn / fsync: throughput", "### Per second: cairn small-put"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown report lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(progress.String(), "cairn small-put (closed, 4 clients)") {
		t.Errorf("progress output %q lacks the phase's tally", progress.String())
	}
}

func TestSweepAgainstARealNodeReportsEachRate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Server = newNode(t)
	cfg.Scenario = ScenarioStat
	cfg.Files = 8
	cfg.SweepRates = []float64{50, 100}
	cfg.Duration = 200 * time.Millisecond
	rep, err := Run(t.Context(), cfg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sweep) != 2 || rep.Cairn != nil {
		t.Fatalf("sweep report has %d sweep phases and cairn %v, want 2 and nil", len(rep.Sweep), rep.Cairn)
	}
	for i, want := range []int64{10, 20} {
		ph := rep.Sweep[i]
		if ph.Mode != ModeOpen || ph.OfferedRate != cfg.SweepRates[i] || ph.Ops != want || ph.Errors != 0 {
			t.Errorf("sweep phase %d: mode %s, offered %v, %d ops, %d errors; want open, %v, %d, 0 (classes %v)",
				i, ph.Mode, ph.OfferedRate, ph.Ops, ph.Errors, cfg.SweepRates[i], want, ph.ErrorClasses)
		}
	}
	var md strings.Builder
	if err := rep.WriteSummary(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| offered ops/s | achieved ops/s | p50 | p99 | p99.9 | max | errors |") {
		t.Errorf("sweep summary lacks the table:\n%s", md.String())
	}
}

func TestServerErrorsAreCountedByClass(t *testing.T) {
	// A server that creates workbenches but refuses every file request as overloaded.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(r.URL.Path, "/files/") {
			w.Write([]byte(`{"workbench_id":"w","created":true}`))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":"error","code":"ObjectUnavailable","message":"busy","retryable":true}`))
	}))
	t.Cleanup(srv.Close)
	cfg := DefaultConfig()
	cfg.Server = srv.URL
	cfg.Scenario = ScenarioSmallPut
	cfg.Concurrency = 2
	cfg.Duration = 100 * time.Millisecond
	rep, err := Run(t.Context(), cfg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Cairn
	if c.OK != 0 || c.Errors == 0 || c.ErrorClasses["HTTP 503 ObjectUnavailable"] != c.Errors {
		t.Errorf("ok %d, errors %d by class %v: want every put counted as HTTP 503 ObjectUnavailable", c.OK, c.Errors, c.ErrorClasses)
	}
	var md strings.Builder
	if err := rep.WriteSummary(&md); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("cairn small-put: errors: HTTP 503 ObjectUnavailable × %d.", c.Errors); !strings.Contains(md.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, md.String())
	}
}
