//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bench"
)

func phase(name string, offered, achieved float64, p50, p99 int64) *bench.Phase {
	return &bench.Phase{Name: name, OfferedRate: offered, AchievedRate: achieved, Ops: 100, OK: 100, Concurrency: 8, DurationSeconds: 5,
		Latency: bench.LatencySummary{P50Micros: p50, P99Micros: p99, P999Micros: p99}}
}

func TestKneeIsTheLastRateTheServerKeptUpWith(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sweep []*bench.Phase
		want  float64
	}{
		{"keeps up everywhere", []*bench.Phase{phase("", 100, 100, 1000, 2000), phase("", 200, 199, 1000, 3000)}, 200},
		{"falls behind at 300", []*bench.Phase{phase("", 100, 100, 1000, 2000), phase("", 200, 199, 1000, 3000), phase("", 300, 250, 1000, 3000), phase("", 400, 400, 1000, 3000)}, 200},
		{"p50 blows up at 300", []*bench.Phase{phase("", 100, 100, 1000, 2000), phase("", 200, 199, 3000, 7000), phase("", 300, 300, 5000, 9000)}, 200},
		{"a p99 spike alone is noise", []*bench.Phase{phase("", 100, 100, 1000, 2000), phase("", 200, 200, 1000, 300000), phase("", 300, 300, 1000, 3000)}, 300},
		{"past it from the start", []*bench.Phase{phase("", 100, 10, 1000, 2000), phase("", 200, 10, 1000, 2000)}, 100},
		{"no sweep", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := knee(tc.sweep); got != tc.want {
				t.Errorf("knee = %v, want %v", got, tc.want)
			}
		})
	}
	unsent := phase("", 200, 200, 1000, 2000)
	unsent.ErrorClasses = map[string]int64{bench.ClassNotSent: 1}
	if got := knee([]*bench.Phase{phase("", 100, 100, 1000, 2000), unsent}); got != 100 {
		t.Errorf("knee with unsent operations at 200/s = %v, want 100", got)
	}
}

func TestSweepRatesSpanTheClosedLoopThroughput(t *testing.T) {
	got := sweepRates(9233)
	want := []float64{1400, 2800, 4200, 5500, 7400, 9200, 12000}
	if len(got) != len(want) {
		t.Fatalf("sweepRates = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sweepRates = %v, want %v", got, want)
			break
		}
	}
	if got := sweepRates(1); got[0] != 10 {
		t.Errorf("sweepRates(1) starts at %v, want the 10/s floor", got[0])
	}
}

func TestCPUCountersParseFromProc(t *testing.T) {
	total, idle, iowait, err := machineCPU()
	if err != nil || total == 0 || idle > total || iowait > total {
		t.Errorf("machineCPU = %d, %d, %d, %v", total, idle, iowait, err)
	}
	// Burn some CPU so this process's counter is above zero.
	deadline := time.Now().Add(30 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	if ticks, err := procCPU(os.Getpid()); err != nil || ticks == 0 {
		t.Errorf("procCPU(self) = %d, %v", ticks, err)
	}
	if _, err := procCPU(-1); err == nil {
		t.Error("procCPU of no process succeeded")
	}
}

func TestRenderNamesEveryScenarioBaselineRatioAndTheCluster(t *testing.T) {
	withBaselines := func(c *bench.Phase, base ...*bench.Phase) *bench.Report {
		r := &bench.Report{Schema: bench.ReportSchema, Cairn: c, Params: bench.Params{SizeBytes: 1024},
			Environment: bench.Environment{Cores: 2, GoVersion: "go1.26", GOOS: "linux", GOARCH: "amd64", GitCommit: "abc"}}
		for _, b := range base {
			b.Comparison = bench.Compare(c, b)
		}
		r.Baselines = base
		return r
	}
	fsync := phase("baseline fsync", 0, 1000, 3000, 9000)
	fsync.Baseline = bench.BaselineFsync
	etcd := phase("baseline etcd", 0, 4000, 2000, 4000)
	etcd.Baseline = bench.BaselineEtcd
	minio := phase("baseline minio", 0, 100, 3000, 9000)
	minio.Baseline = bench.BaselineMinIO
	mcp := phase("cairn mcp", 0, 500, 3000, 9000)
	mcp.Breakdown = map[string]*bench.LabelStats{"workbench_read": {Ops: 60, OK: 60}, "workbench_stat": {Ops: 40, OK: 39, Errors: 1}}
	e := &env{o: options{cairn: "bin/cairn", out: "bench/results", duration: 5 * time.Second, sweepDuration: 8 * time.Second}, started: time.Unix(0, 0), finished: time.Unix(300, 0)}
	e.jobs = []*job{
		{id: "small-put-c64", group: groupSingle, what: "small-put 1 KiB, 64 clients", report: withBaselines(phase("cairn small-put", 0, 2000, 1000, 5000), fsync, etcd)},
		{id: "stat", group: groupSingle, what: "stat (HEAD), 16 clients", report: withBaselines(phase("cairn stat", 0, 25000, 300, 900))},
		{id: "stat-lean", group: groupSingle, what: "stat (HEAD), 16 clients, lean HTTP/1.1 generator", report: withBaselines(phase("cairn stat", 0, 41000, 200, 700))},
		{id: "list", group: groupSingle, what: "list 100 entries, 8 clients", report: withBaselines(phase("cairn list", 0, 7000, 800, 5200))},
		{id: "list-lean", group: groupSingle, what: "list 100 entries, 8 clients, lean HTTP/1.1 generator", report: withBaselines(phase("cairn list", 0, 9000, 600, 4100))},
		{id: "mcp", group: groupSingle, what: "MCP tool mix", report: withBaselines(mcp)},
		{id: "mcp-lean", group: groupSingle, what: "MCP tool mix, lean HTTP/1.1 generator", report: withBaselines(phase("cairn mcp", 0, 3100, 2000, 6000))},
		{id: "object-put-1m", group: groupObject, what: "object-put 1 MiB, 4 clients", report: withBaselines(phase("cairn object-put", 0, 95, 3000, 9000), minio)},
	}
	objPut := e.job("object-put-1m")
	objPut.report.Params.SizeBytes = 1 << 20
	objPut.report.Params.Baselines = []string{bench.BaselineMinIO}
	s3 := phase("cairn s3 object-put", 0, 76, 3500, 9900)
	s3.OverCairn = bench.Compare(s3, objPut.report.Cairn)
	s3.OverBaselines = map[string]*bench.Comparison{bench.BaselineMinIO: bench.Compare(s3, minio)}
	objPut.report.S3 = s3
	minio16 := phase("baseline minio", 0, 100, 3000, 9000)
	minio16.Baseline = bench.BaselineMinIO
	put16 := &job{id: "object-put-1m-c16", group: groupObject, what: "object-put 1 MiB, 16 clients", report: withBaselines(phase("cairn object-put", 0, 80, 3000, 9000), minio16)}
	put16.report.Params.SizeBytes = 1 << 20
	e.jobs = append(e.jobs, put16)
	minio64 := phase("baseline minio", 0, 2.5, 200000, 400000)
	minio64.Baseline = bench.BaselineMinIO
	put64c4 := &job{id: "object-put-64m-c4", group: groupObject, what: "object-put 64 MiB, 4 clients", report: withBaselines(phase("cairn object-put", 0, 2.2, 220000, 450000), minio64)}
	put64c4.report.Params.SizeBytes = 64 << 20
	e.jobs = append(e.jobs, put64c4)
	cetcd := phase("baseline etcd", 0, 4000, 2000, 4000)
	cetcd.Baseline = bench.BaselineEtcd
	clusterPut := withBaselines(phase("cairn small-put", 0, 1000, 4000, 8000), cetcd)
	clusterPut.Environment.Nodes, clusterPut.Environment.Backend = 3, "s3"
	e.jobs = append(e.jobs, &job{id: "cluster-small-put-c64", group: groupCluster, what: "small-put 1 KiB, 64 clients", report: clusterPut})
	cfsync := phase("baseline fsync", 400, 400, 2000, 5000)
	cfsync.Baseline = bench.BaselineFsync
	e.sweep = &job{id: "small-put-sweep", report: &bench.Report{Sweep: []*bench.Phase{phase("", 200, 200, 1000, 2000), phase("", 400, 300, 1000, 90000)},
		BaselineSweep: []*bench.Phase{phase("", 200, 200, 2000, 3000), cfsync}}}
	e.kneeRate = 200
	e.knee = &job{id: "small-put-knee", report: &bench.Report{Cairn: phase("cairn small-put", 200, 199, 1000, 2000)}}
	e.profile = &profileResult{warmup: 2 * time.Second, window: 8 * time.Second, machineBusy: 0.97, serverCores: 1.2, generatorCores: 0.6, cores: 2,
		top: "Build ID: x\n      flat  flat%\n 1s 50% runtime.memmove",
		topCum: "Time: now\n         0     0%     0%      1.54s 39.29%  github.com/hashicorp/raft.(*raftState).goFunc.func1\n" +
			"         0     0% 28.83%      0.65s 16.58%  os.(*File).Sync"}
	putProfile := &job{id: "object-put-64m-profile", what: "object-put 64 MiB, 2 clients", node: nodeS3, roots: putRoots,
		report:  &bench.Report{Cairn: phase("cairn object-put", 0, 3, 600000, 700000), Params: bench.Params{SizeBytes: 64 << 20}},
		profile: &profileResult{warmup: 4 * time.Second, window: 8 * time.Second, machineBusy: 0.9, serverCores: 0.7, cores: 2, command: "cairn bench --server $CAIRN_S3 --scenario object-put", profilePath: "bench/results/object-put-64m-profile.cpu.pprof", top: " 2.73s 52.10% crypto/internal/fips140/sha256.blockSHANI", topCum: putTopCum}}
	e.objectProfiles = []*job{putProfile}
	e.rss = &rssResult{bodyBytes: 2 << 30, put: 16 * time.Second, get: 4 * time.Second, before: 30 << 20, sampledPeak: 310 << 20, samples: 200, hwm: 320 << 20, hwmReset: true}
	e.commands = []string{"cairn bench --server $CAIRN --scenario small-put"}
	e.o.measured = t.TempDir()
	if err := os.WriteFile(filepath.Join(e.o.measured, "forward.md"), []byte("## Writes through a follower\n\nmeasured by a script\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := e.render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"make bench-report",
		"| small-put 1 KiB, 64 clients | 2000 | 1.00 ms | 5.00 ms | fsync | 1000 | 3.00 ms | 9.00 ms | **2.00×** | 0.56× |",
		"| ″ | ″ | ″ | ″ | etcd | 4000 | 2.00 ms | 4.00 ms | **0.50×** | 1.25× |",
		"| stat (HEAD), 16 clients | 25000 | 300 µs | 900 µs | — |",
		"| object-put 1 MiB, 4 clients | 95.0 (95 MiB/s) |",
		"| 1 KiB put, 64 clients: ≥ 0.5× the fsync baseline's throughput | 2.00× | meets |",
		"| object-put 1 MiB, 4 clients: ≥ 0.9× raw minio-go | 0.95× | meets |",
		"| object-put 1 MiB, 16 clients: ≥ 0.9× raw minio-go | 0.80× | **misses** |\n| object-put 64 MiB, 4 clients: ≥ 0.9× raw minio-go | 0.88× | **misses** |",
		"### The same through the S3 gateway",
		"| scenario | S3 ops/s | S3 p50 | S3 p99 | REST ops/s | S3/REST ops/s | S3/REST p99 | S3/minio ops/s | report |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n" +
			"| object-put 1 MiB, 4 clients | 76.0 (76 MiB/s) | 3.50 ms | 9.90 ms | 95.0 (95 MiB/s) | **0.80×** | 1.10× | 0.76× | [md](bench/results/object-put-1m.md) |",
		"| object-put 1 MiB, 4 clients through the S3 gateway: ≥ 0.9× Cairn REST | 0.80× | **misses** |",
		"| stat (HEAD), one node, generator on the same 2-core machine: ≥ 20k/s | 25000/s | meets |",
		"| small put 1 KiB, 64 clients: ≥ 10,000/s and ≥ 2× the 3-member etcd | 2000/s, 0.50× etcd | **misses** |",
		"| small put, open loop: knee ≥ 6,000/s | 200/s | **misses** |",
		"| stat (HEAD), 16 clients: ≥ 40,000/s (the lean HTTP/1.1 generator; with Cairn's Go client as the generator) | 41000/s (25000/s) | meets |",
		"| list of 100 entries, 8 clients: p99 ≤ 5 ms (the lean HTTP/1.1 generator; with Cairn's Go client as the generator) | 4.10 ms (5.20 ms) | meets |",
		"| list 100 entries, 8 clients, lean HTTP/1.1 generator | 9000 | 600 µs | 4.10 ms | — |",
		"| MCP tool mix, 8 sessions: ≥ 3,000 calls/s (the lean HTTP/1.1 generator; with the MCP go-sdk's client as the generator) | 3100/s (500/s) | meets |",
		"| 200 **← knee** |",
		"**Knee: 200 ops/s**",
		"**Verdict: CPU.**",
		"In the profile's cumulative view, Raft's goroutines (log append, fsync, apply) 39.29%, fsync calls 16.58% of the server's CPU samples.",
		"The fsync baseline kept up at rates above Cairn's knee",
		"| `workbench_read` | 60% | 60 | 0 |",
		"## Three-node cluster",
		"## Writes through a follower\n\nmeasured by a script\n\n## Micro-benchmarks",
		"`--nodes 3 --backend s3`",
		"| small-put 1 KiB, 64 clients | 1000 | 4.00 ms | 8.00 ms | etcd | 4000 | 2.00 ms | 4.00 ms | **0.25×** | 2.00× | [md](bench/results/cluster-small-put-c64.md)",
		"cairn bench --server $CAIRN --scenario small-put\n",
		" 1s 50% runtime.memmove",
		"During the 8 s profile window, from 2 s into the run, the machine's 2 cores were **97% busy**",
		"### Where the CPU goes: object-put 64 MiB, 2 clients\n\n```sh\ncairn bench --server $CAIRN_S3 --scenario object-put\n```",
		"Against `$CAIRN_S3`, without baselines: 3.0 ops/s (192 MiB/s), p50 600.00 ms, p99 700.00 ms. During the 8 s profile window, from 4 s into the run,",
		"`go tool pprof -top bin/cairn bench/results/object-put-64m-profile.cpu.pprof` (the server, 8 s in the middle of the run), by flat time:\n\n```\n 2.73s 52.10% crypto/internal/fips140/sha256.blockSHANI\n```",
		"Cumulative shares of the server's CPU samples: request handling (net/http.(*conn).serve, everything in a request's goroutine) 57.44%",
		"## Large body: 2 GiB PUT and GET, server memory",
		"| server RSS during a 2 GiB PUT+GET (MinIO-backed node): < 300 MiB | peak 320 MiB (VmHWM; PUT 128 MiB/s, GET 512 MiB/s) | **misses** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("BENCHMARKS.md lacks %q", want)
		}
	}
	if strings.Contains(md, "Build ID") || strings.Contains(md, "Time: now") {
		t.Error("BENCHMARKS.md keeps pprof's per-run header lines")
	}
}

func TestLimitVerdictReadsTheAccounting(t *testing.T) {
	e := &env{kneeRate: 100, sweep: &job{report: &bench.Report{}}}
	for _, tc := range []struct {
		p    profileResult
		want string
	}{
		{profileResult{machineBusy: 0.95, cores: 2}, "Verdict: CPU"},
		{profileResult{machineBusy: 0.4, machineIOWait: 0.5, cores: 2}, "Verdict: fsync"},
		{profileResult{machineBusy: 0.4, machineIOWait: 0.05, cores: 2}, "Verdict: Raft"},
	} {
		e.profile = &tc.p
		if got := e.limitVerdict(); !strings.Contains(got, tc.want) {
			t.Errorf("busy %.2f iowait %.2f: verdict %q, want %q", tc.p.machineBusy, tc.p.machineIOWait, got, tc.want)
		}
	}
}

func TestTheMissesAreExplainedWithTheProfilesShares(t *testing.T) {
	e := &env{objectProfiles: []*job{{id: "object-get-64m-profile", profile: &profileResult{
		topCum: "      flat  flat%   sum%        cum   cum%\n         0     0% 90.16%      3.37s 43.09%  github.com/zeebo/blake3.(*Hasher).Write\n" +
			"         0     0% 96.16%      0.15s  1.86%  crypto/internal/fips140/sha256.block\n"}}}}
	out := rendered(func(w func(string, ...any)) { e.renderMisses(w, true, true) })
	containsAll(t, "the misses paragraph", out,
		"**Cold reads.**", "BLAKE3 (zeebo/blake3, every caller) 43.09% and SHA-256 (sha256.block, every caller) 1.86% of the server's CPU samples", "**Through a follower.**")
	if out := rendered(func(w func(string, ...any)) { e.renderMisses(w, false, false) }); out != "" {
		t.Fatalf("no miss, yet: %s", out)
	}
}

// rendered returns what render writes through the printf-like function the render
// methods take.
func rendered(render func(w func(string, ...any))) string {
	var b strings.Builder
	render(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
	return b.String()
}

// containsAll fails the test once for each of wants that text (what in the messages)
// does not contain, and shows text.
func containsAll(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}
