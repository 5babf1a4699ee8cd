//go:build long

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/pause"
)

// The soak (issue 10 acceptance: "a make test-long soak: 30 minutes of mixed load with slow
// and abandoned clients, RSS and fd count sampled, both flat"). make test-long runs it for
// CAIRN_SOAK_DURATION (30m there); by hand it runs for soakDefaultDuration.
const (
	soakDefaultDuration = 2 * time.Minute
	soakSampleEvery     = 10 * time.Second

	// The server's deadlines, shortened so that every kind of cut-off happens many times
	// within the run. The minimum body rate is far below what a loopback upload reaches
	// and far above the few bytes a second of the slow clients.
	soakMinBodyRate       = 4096
	soakBodyRateWindow    = 3 * time.Second
	soakReadHeaderTimeout = 3 * time.Second
	soakWriteTimeout      = 5 * time.Second
	soakIdleTimeout       = 10 * time.Second

	// soakCutoffBound is how long a slow or abandoned client waits for the server to cut
	// it off before it counts a failure. It only turns "never cut off" into a failure: the
	// server's own deadlines are a few seconds.
	soakCutoffBound = time.Minute
	// soakRequestTimeout bounds every well-behaved request (a hang guard, not a timing).
	soakRequestTimeout = 2 * time.Minute

	// The clients of each kind running at once.
	soakRESTWriters   = 4
	soakMCPClients    = 2
	soakSlowUploaders = 2
	soakAbandoners    = 2
	soakSlowReaders   = 1
	soakNeverReaders  = 1

	soakLargeBytes   = 1 << 20 // the ~1 MiB bodies of the REST writers
	soakFixtureBytes = 2 << 20 // the file the slow and never-reading clients download
	// soakNeverRequests answers of the fixture are more than the socket buffers of a
	// loopback connection hold (4 MiB of send buffer at most on Linux by default).
	soakNeverRequests = 4
	soakMaxLogBytes   = 64 << 10
	soakAgent         = "soak"
	soakMCPAgent      = "soak-mcp"
)

// Flatness bounds, checked between the second and the last third of the samples (the first
// third is warm-up: caches, dedupe tables and Raft logs filling to their steady size).
// Neither is a timing: both compare numbers the kernel reports.
//   - fds: the clients hold at most a few dozen connections at any moment, so a healthy
//     server's fd count moves by tens between samples; a last-third median 200 above the
//     second-third median means hundreds of connections or files opened and never closed
//     over a few minutes, which only a leak explains.
//   - RSS, its anonymous part (soakSample): a Go heap may legitimately grow to twice its
//     live size before a collection (GOGC=100), so medians may wobble by up to that
//     factor; growth beyond 2x between two thirds of a steady load is retained memory,
//     not the allocator. The file-backed part (the mapped Raft log) is logged, not bounded.
const (
	soakFDSlack     = 200
	soakRSSMaxRatio = 2.0
)

// TestSoakMixedLoadKeepsServerResourcesFlat runs one `cairn serve` (blobs in MinIO) under
// mixed load for the soak duration: REST writers (small and ~1 MiB PUTs, appends, GETs,
// Range GETs, lists), MCP clients over streamable HTTP (put, read, grep, search, aggregate,
// snapshot, snapshot_list), slow uploads the server must cut off, abandoned connections
// (half a request, half a body, never used), and clients that read slowly or never. Every
// 10 s it logs the server's RSS and open fds (SOAK lines) with the requests ok/failed by
// kind; at the end it logs the ratio of the last third's medians to the second third's
// and fails on a clear leak. Every successful GET or MCP read must return the bytes last
// acknowledged for its path (each path has one writer, which keeps its model), every
// slow or abandoned client must be cut off, and the server must still be ready at the end
// and exit 0 on SIGTERM.
func TestSoakMixedLoadKeepsServerResourcesFlat(t *testing.T) {
	duration := soakDuration(t)
	// The clients finish their last request after the duration (bounded by
	// soakCutoffBound and soakRequestTimeout), then the checks and the stop run.
	const margin = 3 * time.Minute
	if dl, ok := t.Deadline(); ok && time.Until(dl) < duration+margin {
		t.Fatalf("a %v soak needs a go test -timeout at least %v longer than the soak (%v left)", duration, margin, time.Until(dl).Round(time.Second))
	}
	// Blobs in MinIO: the object-store client's connections, deadlines and the
	// collector's deletes are part of the soaked process too.
	o := framework.StartObjectStore(t)
	o.ExportCredentials(t)
	srv := framework.StartProcess(t, cairnBin, filepath.Join(t.TempDir(), "data"), append(o.BlobArgs("/cairn/soak"),
		"--body-min-bytes-per-second", strconv.Itoa(soakMinBodyRate),
		"--body-rate-window", soakBodyRateWindow.String(),
		"--read-header-timeout", soakReadHeaderTimeout.String(),
		"--write-timeout", soakWriteTimeout.String(),
		"--idle-timeout", soakIdleTimeout.String(),
		// Overwritten bodies become garbage: collect it within the run so the object
		// store and the blob index reach a steady size,
		"--gc-grace", "2m", "--gc-interval", "30s",
		// and no history beyond the live version is kept (the default keeps 100 per path,
		// which under steady overwrites grows for a long while by design).
		"--history-versions", "1", "--history-age", "0s",
		// Every write carries an Idempotency-Key; the table of remembered keys reaches
		// its cap in the first minutes instead of growing through the whole run.
		"--dedupe-max-per-root", "5000",
		// Tombstones, finished operations and change-feed entries are kept for the
		// retention window of command time (24 h by default), so under steady writes the
		// metadata grows for a day by design; a short window lets it reach its steady size
		// within the run, and growth past that is a leak.
		"--retention-window", "2m",
	)...)
	base := srv.URL
	addr := strings.TrimPrefix(base, "http://")
	pid := srv.Pid()

	// The file the slow and never-reading clients download; nobody writes it again.
	fixture := soakBytes(rand.New(rand.NewPCG(1, 2)), soakFixtureBytes)
	fixtureURL := fileURL(base, soakAgent, "fixtures", "outputs/reader.bin")
	if r := doHTTP(t, http.MethodPut, fixtureURL, bytes.NewReader(fixture)); r.status != http.StatusCreated {
		t.Fatalf("PUT the fixture: %d %s", r.status, r.body)
	}

	st := newSoakStats()
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var wg sync.WaitGroup
	writers := make([]*restWriter, soakRESTWriters)
	for i := range writers {
		writers[i] = newRESTWriter(base, i, st)
		wg.Go(func() { writers[i].run(ctx) })
	}
	for i := range soakMCPClients {
		wg.Go(func() { newMCPSoakClient(base, i, st).run(ctx) })
	}
	for i := range soakSlowUploaders {
		wg.Go(func() { runSlowUploader(ctx, addr, i, st) })
	}
	for i := range soakAbandoners {
		wg.Go(func() { runAbandoner(ctx, addr, i, st) })
	}
	for range soakSlowReaders {
		wg.Go(func() { runSlowReader(ctx, addr, fixtureURL, fixture, st) })
	}
	for range soakNeverReaders {
		wg.Go(func() { runNeverReader(ctx, addr, fixtureURL, st) })
	}

	samples := sampleUntilDone(ctx, t, pid, st)
	wg.Wait()
	if end, err := takeSample(pid, time.Duration(0)); err == nil {
		t.Logf("SOAK end (load stopped) rss_mib=%.1f anon_mib=%.1f fds=%d %s", end.rssMiB(), end.anonMiB(), end.fds, st.summary())
	}
	st.logNotes(t)
	checkFlat(t, samples)

	// Correctness after the load: each writer's files still hold their last acknowledged
	// bytes; the node is ready and stops cleanly.
	for _, w := range writers {
		w.verifyAll(t)
	}
	failures := st.failures()
	for _, kind := range slices.Sorted(maps.Keys(failures)) {
		t.Errorf("%s: %d failed; first failures:\n  %s", kind, st.failed(kind), strings.Join(failures[kind], "\n  "))
	}
	if r := doHTTP(t, http.MethodGet, base+"/readyz", nil); r.status != http.StatusOK {
		t.Errorf("GET /readyz after the soak: %d %s", r.status, r.body)
	}
	srv.Stop() // fails the test unless the server exits 0 within framework.StopTimeout
	if out := srv.Output(); strings.Contains(out, "panic:") {
		t.Errorf("cairn serve logged a panic during the soak:\n%s", srv.OutputTail(32<<10))
	}
}

// soakDuration reads CAIRN_SOAK_DURATION (a Go duration), soakDefaultDuration when unset.
func soakDuration(t *testing.T) time.Duration {
	s := os.Getenv("CAIRN_SOAK_DURATION")
	if s == "" {
		return soakDefaultDuration
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < soakSampleEvery {
		t.Fatalf("CAIRN_SOAK_DURATION=%q: want a Go duration of at least %v, e.g. 30m", s, soakSampleEvery)
	}
	return d
}

// soakBytes returns n pseudo-random bytes.
func soakBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// ---- statistics and samples ----

// soakStats counts requests by kind ("rest.put_small", "slow.rest_put", …) and keeps the
// first failures of each kind; notes count outcomes that are fine either way (a slow
// upload answered 400 or just closed). Safe for concurrent use.
type soakStats struct {
	mu    sync.Mutex
	ok    map[string]int64
	fail  map[string]int64
	errs  map[string][]string
	notes map[string]int64
}

func newSoakStats() *soakStats {
	return &soakStats{ok: map[string]int64{}, fail: map[string]int64{}, errs: map[string][]string{}, notes: map[string]int64{}}
}

func (s *soakStats) succeeded(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ok[kind]++
	s.fail[kind] += 0 // every kind seen appears in both maps (summary lists s.ok's keys)
}

func (s *soakStats) failedf(kind, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[kind]++
	s.ok[kind] += 0 // a kind that only failed still shows in summary
	if len(s.errs[kind]) < 8 {
		s.errs[kind] = append(s.errs[kind], fmt.Sprintf(format, args...))
	}
}

func (s *soakStats) note(kind, outcome string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes[kind+" "+outcome]++
}

func (s *soakStats) failed(kind string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail[kind]
}

// failures returns the first failures of every kind that failed.
func (s *soakStats) failures() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for k, v := range s.errs {
		out[k] = slices.Clone(v)
	}
	return out
}

// summary is "kind=ok/failed …" in kind order.
func (s *soakStats) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(s.ok)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d/%d", k, s.ok[k], s.fail[k])
	}
	return b.String()
}

func (s *soakStats) logNotes(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.notes)) {
		fmt.Fprintf(&b, "\n  %s: %d", k, s.notes[k])
	}
	t.Logf("SOAK outcomes of the slow, abandoned and non-reading clients:%s", b.String())
}

// soakSample is one reading of the server process. rssKB is VmRSS; anonKB its anonymous
// part (RssAnon: the Go heap, stacks, buffers), the part a leak grows. The rest is
// file-backed (RssFile): mostly the memory-mapped Raft log (bbolt raft.db), which grows
// until the log holds its trailing entries and is page cache the kernel can reclaim.
type soakSample struct {
	elapsed time.Duration
	rssKB   int64
	anonKB  int64
	fds     int
}

func (s soakSample) rssMiB() float64  { return float64(s.rssKB) / 1024 }
func (s soakSample) anonMiB() float64 { return float64(s.anonKB) / 1024 }

func takeSample(pid int, elapsed time.Duration) (soakSample, error) {
	rss, err := statusKB(pid, "VmRSS")
	if err != nil {
		return soakSample{}, err
	}
	anon, err := statusKB(pid, "RssAnon")
	if err != nil {
		return soakSample{}, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return soakSample{}, err
	}
	return soakSample{elapsed: elapsed, rssKB: rss, anonKB: anon, fds: len(fds)}, nil
}

// sampleUntilDone samples the server at the start and every soakSampleEvery until ctx is
// done, logging each sample as a SOAK line. Where /proc cannot be read (not Linux) it
// logs why and only waits.
func sampleUntilDone(ctx context.Context, t *testing.T, pid int, st *soakStats) []soakSample {
	start := time.Now()
	var samples []soakSample
	take := func() {
		s, err := takeSample(pid, time.Since(start))
		if err != nil {
			t.Logf("SOAK t=%4.0fs cannot sample the server: %v", time.Since(start).Seconds(), err)
			return
		}
		samples = append(samples, s)
		t.Logf("SOAK t=%4.0fs rss_mib=%.1f anon_mib=%.1f fds=%d %s", s.elapsed.Seconds(), s.rssMiB(), s.anonMiB(), s.fds, st.summary())
	}
	take()
	tick := time.NewTicker(soakSampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return samples
		case <-tick.C:
			take()
		}
	}
}

// checkFlat logs the ratio of the last third's medians to the second third's and fails
// on a clear leak (the bounds and why: soakFDSlack, soakRSSMaxRatio).
func checkFlat(t *testing.T, samples []soakSample) {
	n := len(samples)
	if n < 6 {
		t.Logf("SOAK flatness: only %d samples, too few to compare thirds (run for a minute or more)", n)
		return
	}
	mid, last := samples[n/3:2*n/3], samples[2*n/3:]
	rss := func(s soakSample) float64 { return float64(s.rssKB) }
	anon := func(s soakSample) float64 { return float64(s.anonKB) }
	fds := func(s soakSample) float64 { return float64(s.fds) }
	midAnon, lastAnon := sampleMedian(mid, anon), sampleMedian(last, anon)
	midFDs, lastFDs := sampleMedian(mid, fds), sampleMedian(last, fds)
	t.Logf("SOAK flatness over %d samples: anonymous rss median %.1f MiB (second third) → %.1f MiB (last third), ratio %.2f; "+
		"rss median %.1f → %.1f MiB; fds median %.0f → %.0f, ratio %.2f; first sample rss %.1f MiB fds %d, last rss %.1f MiB fds %d",
		n, midAnon/1024, lastAnon/1024, lastAnon/midAnon, sampleMedian(mid, rss)/1024, sampleMedian(last, rss)/1024,
		midFDs, lastFDs, lastFDs/midFDs, samples[0].rssMiB(), samples[0].fds, samples[n-1].rssMiB(), samples[n-1].fds)
	if lastFDs > midFDs+soakFDSlack {
		t.Errorf("open fds grew from a median of %.0f to %.0f between the second and the last third of the soak (more than +%d): a descriptor leak", midFDs, lastFDs, soakFDSlack)
	}
	if lastAnon > soakRSSMaxRatio*midAnon {
		t.Errorf("anonymous RSS grew from a median of %.1f MiB to %.1f MiB between the second and the last third of the soak (more than %.1fx): a memory leak", midAnon/1024, lastAnon/1024, soakRSSMaxRatio)
	}
}

func sampleMedian(s []soakSample, f func(soakSample) float64) float64 {
	v := make([]float64, len(s))
	for i, x := range s {
		v[i] = f(x)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// ---- well-behaved REST writers ----

// restWriter owns workbench rest-<i> of the soak agent: it is the only client writing its
// paths, so model (path → the bytes of its last acknowledged write) is what every GET of
// them must return. A path whose last write had an unknown outcome (no answer) is absent
// from the model until the next acknowledged write.
type restWriter struct {
	c     soakHTTP
	base  string
	wb    string
	rng   *rand.Rand
	large []byte // base content of the large bodies; each write changes a few bytes
	model map[string][]byte
	seq   int
}

const (
	pathSmall = "outputs/small.txt"
	pathLarge = "outputs/large.bin"
	pathLog   = "logs/run.log"
)

func newRESTWriter(base string, i int, st *soakStats) *restWriter {
	rng := rand.New(rand.NewPCG(uint64(i), 42))
	return &restWriter{c: newSoakHTTP(st), base: base, wb: fmt.Sprintf("rest-%d", i), rng: rng,
		large: soakBytes(rng, soakLargeBytes), model: map[string][]byte{}}
}

func (w *restWriter) url(path string) string { return fileURL(w.base, soakAgent, w.wb, path) }

func (w *restWriter) run(ctx context.Context) {
	defer w.c.close()
	for i := 0; ctx.Err() == nil; i++ {
		w.putSmall()
		w.appendLog()
		w.get(pathSmall)
		w.get(pathLog)
		if i%8 == 0 {
			w.putLarge()
		}
		if i%2 == 0 {
			w.get(pathLarge)
		}
		w.rangeGet(pathLarge)
		w.rangeGet(pathLog)
		if i%4 == 0 {
			w.list()
		}
		pause.For(ctx, 20*time.Millisecond)
	}
}

func (w *restWriter) nextKey() string {
	w.seq++
	return fmt.Sprintf("%s-%d-%d", w.wb, w.seq, w.rng.Uint64())
}

// put replaces path with body and updates the model by the outcome.
func (w *restWriter) put(kind, path string, body []byte) {
	if w.c.write(kind, http.MethodPut, w.url(path), body, w.nextKey()) {
		w.model[path] = body
	} else {
		delete(w.model, path)
	}
}

func (w *restWriter) putSmall() {
	n := 16 + w.rng.IntN(3000)
	body := fmt.Appendf(nil, "%s seq %d\n", w.wb, w.seq)
	body = append(body, bytes.Repeat([]byte{'a' + byte(w.seq%26)}, n)...)
	w.put("rest.put_small", pathSmall, body)
}

// putLarge writes the large base with a few bytes changed at a random place, so the
// content-defined chunks of most of the body are reused and the object store stays small.
func (w *restWriter) putLarge() {
	body := slices.Clone(w.large)
	off := w.rng.IntN(len(body) - 64)
	copy(body[off:], fmt.Appendf(nil, "seq %d %x", w.seq, w.rng.Uint64()))
	w.put("rest.put_large", pathLarge, body)
}

// appendLog appends a line to the log, or replaces the log when it grew past
// soakMaxLogBytes or its content is unknown (an append's result can only be modelled on
// known bytes).
func (w *restWriter) appendLog() {
	old, known := w.model[pathLog]
	line := fmt.Appendf(nil, "%s line %d %s\n", w.wb, w.seq, strings.Repeat("x", w.rng.IntN(200)))
	if !known || len(old) > soakMaxLogBytes {
		w.put("rest.put_small", pathLog, line)
		return
	}
	if w.c.write("rest.append", http.MethodPost, w.url(pathLog)+"?append", line, w.nextKey()) {
		w.model[pathLog] = append(slices.Clip(old), line...)
	} else {
		delete(w.model, pathLog)
	}
}

// get reads path whole and checks it against the model (status, bytes, Cairn-Digest).
func (w *restWriter) get(path string) {
	want, known := w.model[path]
	w.c.read("rest.get", w.url(path), nil, func(r httpResult) error {
		if !known {
			return nil // the last write's outcome is unknown: any answer is possible
		}
		if r.status != http.StatusOK {
			return fmt.Errorf("GET %s: %d %.200s, want 200", path, r.status, r.body)
		}
		if !bytes.Equal(r.body, want) {
			return fmt.Errorf("GET %s: %d bytes (%s), want the %d bytes last acknowledged (%s)", path, len(r.body), sha256URI(r.body), len(want), sha256URI(want))
		}
		if d := r.header.Get("Cairn-Digest"); d != sha256URI(want) {
			return fmt.Errorf("GET %s: Cairn-Digest %s, want %s", path, d, sha256URI(want))
		}
		return nil
	})
}

// rangeGet reads a random range of path and checks it against the model.
func (w *restWriter) rangeGet(path string) {
	want, known := w.model[path]
	if !known || len(want) == 0 {
		return
	}
	off := w.rng.IntN(len(want))
	n := 1 + w.rng.IntN(min(64<<10, len(want)-off))
	rg := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	w.c.read("rest.range", w.url(path), []string{"Range", rg}, func(r httpResult) error {
		if r.status != http.StatusPartialContent || !bytes.Equal(r.body, want[off:off+n]) {
			return fmt.Errorf("GET %s Range %s: %d, %d bytes; want 206 with bytes %d..%d of the %d last acknowledged", path, rg, r.status, len(r.body), off, off+n-1, len(want))
		}
		return nil
	})
}

// list lists outputs and checks that every modelled file there is listed with its size.
func (w *restWriter) list() {
	u := w.base + "/v1/agents/" + soakAgent + "/workbenches/" + w.wb + "/list?path=outputs"
	want := map[string]int{}
	for p, b := range w.model {
		if name, ok := strings.CutPrefix(p, "outputs/"); ok {
			want[name] = len(b)
		}
	}
	w.c.read("rest.list", u, nil, func(r httpResult) error {
		if r.status != http.StatusOK {
			return fmt.Errorf("list outputs: %d %.200s", r.status, r.body)
		}
		res, err := decodeJSON(r.body)
		if err != nil {
			return fmt.Errorf("list outputs: %v: %.200s", err, r.body)
		}
		entries, _ := res["entries"].([]any)
		got := map[string]string{}
		for _, e := range entries {
			m, _ := e.(map[string]any)
			got[fmt.Sprint(m["name"])] = fmt.Sprint(m["size_bytes"])
		}
		for name, size := range want {
			if got[name] != strconv.Itoa(size) {
				return fmt.Errorf("list outputs: %s listed with size %q, want %d (entries %v)", name, got[name], size, got)
			}
		}
		return nil
	})
}

// verifyAll checks every modelled path once more after the load (on the test goroutine).
func (w *restWriter) verifyAll(t *testing.T) {
	t.Helper()
	for path, want := range w.model {
		r := doHTTP(t, http.MethodGet, w.url(path), nil)
		if r.status != http.StatusOK || !bytes.Equal(r.body, want) {
			t.Errorf("after the soak, GET %s/%s: %d, %d bytes (%s); want the %d bytes last acknowledged (%s)",
				w.wb, path, r.status, len(r.body), sha256URI(r.body), len(want), sha256URI(want))
		}
	}
}

// soakHTTP sends the well-behaved REST requests: retryable answers (the contract's
// envelope with retryable:true) and transport errors are retried a few times; writes carry
// one Idempotency-Key over all their attempts, so a retry after a lost answer applies once.
type soakHTTP struct {
	hc *http.Client
	st *soakStats
}

const soakAttempts = 5

func newSoakHTTP(st *soakStats) soakHTTP {
	return soakHTTP{hc: &http.Client{Timeout: soakRequestTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}, st: st}
}

func (c soakHTTP) close() { c.hc.CloseIdleConnections() }

func (c soakHTTP) do(method, url string, body []byte, headers []string) (httpResult, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body) // NewRequest sets GetBody: the transport may replay it
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return httpResult{}, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.hc.Do(req)
	if err != nil {
		return httpResult{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpResult{}, fmt.Errorf("reading the body: %w", err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// envelopeRetryable reports whether r is the contract's error envelope with retryable:true.
func envelopeRetryable(r httpResult) bool {
	if r.status < 400 {
		return false
	}
	var env struct {
		Retryable bool `json:"retryable"`
	}
	return json.Unmarshal(r.body, &env) == nil && env.Retryable
}

// attempt runs send until it gets a final answer: one that is not a retryable error. It
// returns the last answer and the last transport error (nil when an answer came).
func (c soakHTTP) attempt(kind string, send func() (httpResult, error)) (httpResult, error) {
	var r httpResult
	var err error
	for a := 1; a <= soakAttempts; a++ {
		r, err = send()
		if err == nil && !envelopeRetryable(r) {
			return r, nil
		}
		if a < soakAttempts {
			c.st.note(kind, "retried")
			pause.For(context.Background(), time.Duration(a)*100*time.Millisecond)
		}
	}
	return r, err
}

// write sends a PUT or POST ?append and reports whether it was acknowledged (2xx).
func (c soakHTTP) write(kind, method, url string, body []byte, key string) bool {
	r, err := c.attempt(kind, func() (httpResult, error) {
		return c.do(method, url, body, []string{"Idempotency-Key", key, "Content-Type", "application/octet-stream"})
	})
	switch {
	case err != nil:
		c.st.failedf(kind, "%s %s: no answer after %d attempts: %v", method, url, soakAttempts, err)
		return false
	case r.status/100 != 2:
		c.st.failedf(kind, "%s %s: %d %.300s", method, url, r.status, r.body)
		return false
	}
	c.st.succeeded(kind)
	return true
}

// read sends a GET and counts it by check's verdict on the answer.
func (c soakHTTP) read(kind, url string, headers []string, check func(httpResult) error) {
	r, err := c.attempt(kind, func() (httpResult, error) { return c.do(http.MethodGet, url, nil, headers) })
	if err == nil {
		err = check(r)
	}
	if err != nil {
		c.st.failedf(kind, "%v", err)
		return
	}
	c.st.succeeded(kind)
}

// ---- MCP clients ----

// mcpSoakClient owns workbench mcp-<i> of the MCP agent and its file outputs/notes.txt,
// whose model is note (nil while unknown). It reconnects every 50 rounds, so session setup
// and teardown are soaked too.
type mcpSoakClient struct {
	endpoint string
	wb       string
	st       *soakStats
	rng      *rand.Rand
	cs       *sdk.ClientSession
	note     []byte
	exists   bool // the note was created (as far as the client knows)
	needle   string
}

func newMCPSoakClient(base string, i int, st *soakStats) *mcpSoakClient {
	return &mcpSoakClient{endpoint: base + "/v1/agents/" + soakMCPAgent + "/mcp", wb: fmt.Sprintf("mcp-%d", i), st: st,
		rng: rand.New(rand.NewPCG(uint64(i), 7))}
}

func (c *mcpSoakClient) run(ctx context.Context) {
	defer c.disconnect()
	for i := 0; ctx.Err() == nil; i++ {
		if c.cs == nil || i%50 == 0 {
			c.disconnect()
			if !c.connect() {
				pause.For(ctx, time.Second)
				continue
			}
		}
		c.put(i)
		c.read()
		c.grep()
		c.search()
		c.aggregate()
		if i%10 == 0 {
			c.snapshot()
		}
		pause.For(ctx, 50*time.Millisecond)
	}
}

func (c *mcpSoakClient) connect() bool {
	ctx, cancel := context.WithTimeout(context.Background(), soakRequestTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "cairn-soak", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: c.endpoint}, nil)
	if err != nil {
		c.st.failedf("mcp.connect", "connect %s: %v", c.endpoint, err)
		return false
	}
	c.st.succeeded("mcp.connect")
	c.cs = cs
	return true
}

func (c *mcpSoakClient) disconnect() {
	if c.cs != nil {
		_ = c.cs.Close()
		c.cs = nil
	}
}

// call calls tool; a retryable error result is retried a few times. It returns the
// structured result, or the error envelope as an error.
func (c *mcpSoakClient) call(kind, tool string, args map[string]any) (toolResult, error) {
	var last error
	for a := 1; a <= soakAttempts; a++ {
		r, retry, err := c.callOnce(tool, args)
		if err == nil {
			return r, nil
		}
		last = err
		if !retry {
			break
		}
		if a < soakAttempts {
			c.st.note(kind, "retried")
			pause.For(context.Background(), time.Duration(a)*100*time.Millisecond)
		}
	}
	return nil, last
}

func (c *mcpSoakClient) callOnce(tool string, args map[string]any) (r toolResult, retry bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), soakRequestTimeout)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, false, fmt.Errorf("%s: protocol error: %v", tool, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, false, err
	}
	r, err = decodeJSON(raw)
	if err != nil {
		return nil, false, fmt.Errorf("%s: structuredContent is not an object (%v): %.300s", tool, err, raw)
	}
	if res.IsError {
		return r, r["retryable"] == true, &mcpToolError{tool: tool, code: r.str("code"), res: r}
	}
	return r, false, nil
}

// mcpToolError is an error envelope of a tool call.
type mcpToolError struct {
	tool, code string
	res        toolResult
}

func (e *mcpToolError) Error() string { return fmt.Sprintf("%s: error %s: %v", e.tool, e.code, e.res) }

func toolCode(err error) string {
	var e *mcpToolError
	if errors.As(err, &e) {
		return e.code
	}
	return ""
}

// put replaces the note (create-only the first time), text lines ending with a needle
// unique to this version. AlreadyExists and NotFound correct what the client believed
// about the note's existence after a call whose outcome it never learned.
func (c *mcpSoakClient) put(round int) {
	c.needle = fmt.Sprintf("needle-%s-%d-%d", c.wb, round, c.rng.Uint64())
	var b strings.Builder
	for l := range 3 + c.rng.IntN(30) {
		fmt.Fprintf(&b, "line %d of round %d\n", l, round)
	}
	b.WriteString(c.needle + "\n")
	body := []byte(b.String())
	for range 2 {
		_, err := c.call("mcp.put", "workbench_put_file", map[string]any{"id": c.wb, "section": "outputs", "path": "notes.txt",
			"text": string(body), "replace": c.exists})
		switch code := toolCode(err); {
		case err == nil:
			c.st.succeeded("mcp.put")
			c.note, c.exists = body, true
			return
		case code == "AlreadyExists" && !c.exists:
			c.exists = true
		case code == "NotFound" && c.exists:
			c.exists = false
		default:
			c.st.failedf("mcp.put", "%v", err)
			c.note = nil
			return
		}
	}
	c.st.failedf("mcp.put", "put_file kept contradicting replace=%v", c.exists)
	c.note = nil
}

// read reads the last ≤300 bytes of the note (format=bytes) and checks them.
func (c *mcpSoakClient) read() {
	want := c.note
	if want == nil {
		return
	}
	off := max(0, len(want)-300)
	r, err := c.call("mcp.read", "workbench_read", map[string]any{"id": c.wb, "section": "outputs", "path": "notes.txt",
		"format": "bytes", "offset": off})
	if err == nil {
		got, derr := base64.StdEncoding.DecodeString(r.str("bytes"))
		switch {
		case derr != nil:
			err = fmt.Errorf("workbench_read bytes: %v", derr)
		case !bytes.Equal(got, want[off:]) || fmt.Sprint(r["total_size_bytes"]) != strconv.Itoa(len(want)):
			err = fmt.Errorf("workbench_read notes.txt offset %d: %q (total %v), want %q (total %d), the bytes last acknowledged", off, got, r["total_size_bytes"], want[off:], len(want))
		case r.str("digest_uri") != sha256URI(want):
			err = fmt.Errorf("workbench_read notes.txt: digest_uri %s, want %s", r.str("digest_uri"), sha256URI(want))
		}
	}
	c.count("mcp.read", err)
}

// grep finds the current needle in the note.
func (c *mcpSoakClient) grep() {
	if c.note == nil {
		return
	}
	r, err := c.call("mcp.grep", "workbench_grep", map[string]any{"id": c.wb, "pattern": c.needle, "recursive": true})
	if err == nil {
		matches, _ := r["matches"].([]any)
		if len(matches) != 1 || fmt.Sprint(matches[0].(map[string]any)["relative_path"]) != "notes.txt" {
			err = fmt.Errorf("workbench_grep %s: %v, want one match in notes.txt", c.needle, r["matches"])
		}
	}
	c.count("mcp.grep", err)
}

// search finds the note by name.
func (c *mcpSoakClient) search() {
	if c.note == nil {
		return
	}
	r, err := c.call("mcp.search", "workbench_search", map[string]any{"id": c.wb,
		"predicates": []any{map[string]any{"field": "artifact.name", "op": "eq", "value": "notes.txt"}}})
	if err == nil && fmt.Sprint(r["match_count"]) != "1" {
		err = fmt.Errorf("workbench_search artifact.name=notes.txt: match_count %v, want 1", r["match_count"])
	}
	c.count("mcp.search", err)
}

// aggregate counts and sums the sizes of the workbench's files, root-wide once in a while.
func (c *mcpSoakClient) aggregate() {
	args := map[string]any{"id": c.wb, "measures": []any{
		map[string]any{"name": "n", "op": "count"},
		map[string]any{"name": "bytes", "op": "sum", "field": "artifact.size_bytes"},
	}}
	if c.rng.IntN(10) == 0 {
		delete(args, "id")
	}
	_, err := c.call("mcp.aggregate", "workbench_aggregate", args)
	c.count("mcp.aggregate", err)
}

// snapshot mints a snapshot, finds it in snapshot_list, and retires it (so the workbench
// stays under its snapshot cap and the history it holds is released).
func (c *mcpSoakClient) snapshot() {
	if !c.exists {
		return
	}
	r, err := c.call("mcp.snapshot", "workbench_snapshot", map[string]any{"id": c.wb, "ttl_days": 1, "reason": "soak"})
	c.count("mcp.snapshot", err)
	if err != nil {
		return
	}
	id := fmt.Sprint(r["snapshot_id"])
	l, err := c.call("mcp.snapshot_list", "workbench_snapshot_list", map[string]any{"id": c.wb})
	if err == nil {
		found := false
		snaps, _ := l["snapshots"].([]any)
		for _, s := range snaps {
			if m, _ := s.(map[string]any); fmt.Sprint(m["snapshot_id"]) == id {
				found = true
			}
		}
		if !found {
			err = fmt.Errorf("workbench_snapshot_list: snapshot %s just minted is not listed (%d snapshots)", id, len(snaps))
		}
	}
	c.count("mcp.snapshot_list", err)
	n, _ := strconv.ParseInt(id, 10, 64)
	_, err = c.call("mcp.snapshot_retire", "workbench_snapshot_retire", map[string]any{"id": c.wb, "snapshot_id": n, "reason": "soak"})
	c.count("mcp.snapshot_retire", err)
}

func (c *mcpSoakClient) count(kind string, err error) {
	if err != nil {
		c.st.failedf(kind, "%v", err)
		return
	}
	c.st.succeeded(kind)
}

// ---- slow, abandoned and non-reading clients (raw HTTP/1.1 on TCP) ----

// cutoff is how the server ended a slow or abandoned client's request.
type cutoff struct {
	status int    // the answer's status; 0 when the server closed without one
	body   string // the answer's body (a prefix)
	err    error  // why no answer was read: EOF or a reset (closed), or the bound passing
}

// awaitCutoff reads what the server sends on conn until it answers or closes, or until
// soakCutoffBound passes (err is then a timeout).
func awaitCutoff(conn net.Conn) cutoff {
	_ = conn.SetReadDeadline(time.Now().Add(soakCutoffBound))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return cutoff{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return cutoff{status: resp.StatusCode, body: string(b)}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// judgeCutoff counts one cut-off: an answer of 4xx naming the rule, or the connection
// closed, is what the server must do; no end within the bound, or a success, is a failure.
func judgeCutoff(st *soakStats, kind string, c cutoff, wantRule string) {
	switch {
	case c.err != nil && isTimeout(c.err):
		st.failedf(kind, "the server did not cut the client off within %v", soakCutoffBound)
	case c.err != nil:
		st.note(kind, "closed without an answer")
		st.succeeded(kind)
	case c.status/100 == 4 && (wantRule == "" || strings.Contains(c.body, wantRule)):
		st.note(kind, fmt.Sprintf("answered %d", c.status))
		st.succeeded(kind)
	default:
		st.failedf(kind, "answered %d %.300s, want a 4xx naming %q or a closed connection", c.status, c.body, wantRule)
	}
}

func dialSoak(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 10*time.Second) }

// sendSoak dials addr and sends head; a failure of either is counted against kind and
// answers nil. The caller closes the connection.
func sendSoak(st *soakStats, kind, addr, head string) net.Conn {
	conn, err := dialSoak(addr)
	if err != nil {
		st.failedf(kind, "dial: %v", err)
		return nil
	}
	if _, err := io.WriteString(conn, head); err != nil {
		st.failedf(kind, "send the headers: %v", err)
		conn.Close()
		return nil
	}
	return conn
}

// runSlowUploader alternates a REST PUT and a chunked MCP POST whose bodies arrive at 4
// bytes a second: the minimum body rate must cut each off within the rate window (400
// InvalidArguments, rule min_rate), releasing its ingest or large-request slot.
func runSlowUploader(ctx context.Context, addr string, i int, st *soakStats) {
	for n := 0; ctx.Err() == nil; n++ {
		if n%2 == 0 {
			head := fmt.Sprintf("PUT /v1/agents/%s/workbenches/slow/files/outputs/slow-%d-%d.bin HTTP/1.1\r\nHost: %s\r\n"+
				"Content-Type: application/octet-stream\r\nContent-Length: 65536\r\n\r\n", soakAgent, i, n, addr)
			slowUpload(ctx, st, "slow.rest_put", addr, head, func() []byte { return []byte("x") })
		} else {
			head := fmt.Sprintf("POST /v1/agents/%s/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n", soakMCPAgent, addr)
			start := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_stat","arguments":{"id":"`
			head += fmt.Sprintf("%x\r\n%s\r\n", len(start), start)
			slowUpload(ctx, st, "slow.mcp_post", addr, head, func() []byte { return []byte("1\r\na\r\n") })
		}
	}
}

// slowUpload sends head, then one piece of the body every 250 ms until the server cuts
// the client off (or the soak ends: the upload is then not counted).
func slowUpload(ctx context.Context, st *soakStats, kind, addr, head string, piece func() []byte) {
	conn := sendSoak(st, kind, addr, head)
	if conn == nil {
		return
	}
	defer conn.Close()
	done := make(chan cutoff, 1)
	go func() { done <- awaitCutoff(conn) }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case c := <-done:
			judgeCutoff(st, kind, c, "min_rate")
			return
		case <-tick.C:
			_, _ = conn.Write(piece()) // fails once the server closed: the answer tells
		case <-ctx.Done():
			return
		}
	}
}

// runAbandoner cycles through the ways a client walks away: half the headers then
// silence, half a body then silence, half a body then a close, and connections opened
// and never used. The server must close the silent ones (read-header timeout, minimum
// body rate) and forget the closed ones.
func runAbandoner(ctx context.Context, addr string, i int, st *soakStats) {
	for n := 0; ctx.Err() == nil; n++ {
		switch n % 4 {
		case 0:
			abandonAfter(st, "abandon.half_headers", addr, fmt.Sprintf("GET /v1/agents/%s/workbenches/fixtures/list HTTP/1.1\r\nHost: %s\r\nX-Soak: ", soakAgent, addr), nil, true, "")
		case 1:
			head, half := halfBody(addr, i, n)
			abandonAfter(st, "abandon.half_body", addr, head, half, true, "min_rate")
		case 2:
			head, half := halfBody(addr, i, n)
			abandonAfter(st, "abandon.vanish", addr, head, half, false, "")
		case 3:
			unusedConnections(st, addr, 16)
		}
		pause.For(ctx, 100*time.Millisecond)
	}
}

func halfBody(addr string, i, n int) (head string, half []byte) {
	head = fmt.Sprintf("PUT /v1/agents/%s/workbenches/abandoned/files/outputs/half-%d-%d.bin HTTP/1.1\r\nHost: %s\r\n"+
		"Content-Type: application/octet-stream\r\nContent-Length: 262144\r\n\r\n", soakAgent, i, n, addr)
	return head, bytes.Repeat([]byte{'h'}, 131072)
}

// abandonAfter sends head and body, then either waits for the server to cut the silent
// connection off (stay) or closes it at once.
func abandonAfter(st *soakStats, kind, addr, head string, body []byte, stay bool, wantRule string) {
	conn := sendSoak(st, kind, addr, head)
	if conn == nil {
		return
	}
	defer conn.Close()
	if _, err := conn.Write(body); err != nil {
		st.failedf(kind, "send: %v", err)
		return
	}
	if !stay {
		st.succeeded(kind)
		return
	}
	judgeCutoff(st, kind, awaitCutoff(conn), wantRule)
}

// unusedConnections opens n connections, sends nothing, and waits until the server closed
// each (the read-header timeout covers a connection's first request too).
func unusedConnections(st *soakStats, addr string, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			conn, err := dialSoak(addr)
			if err != nil {
				st.failedf("abandon.unused", "dial: %v", err)
				return
			}
			defer conn.Close()
			judgeCutoff(st, "abandon.unused", awaitCutoff(conn), "")
		})
	}
	wg.Wait()
}

// getRequest is a GET of url (absolute) over a raw connection, closed after the answer.
func getRequest(addr, url string) string {
	return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n", strings.TrimPrefix(url, "http://"+addr), addr)
}

// throttledReader reads at most 8 KiB every 50 ms (about 160 KiB/s).
type throttledReader struct{ r io.Reader }

func (t throttledReader) Read(p []byte) (int, error) {
	pause.For(context.Background(), 50*time.Millisecond)
	return t.r.Read(p[:min(len(p), 8<<10)])
}

// runSlowReader downloads the fixture at about 160 KiB/s: slow, but always moving, so
// the write timeout must not cut it off, and the bytes must be the fixture's.
func runSlowReader(ctx context.Context, addr, url string, want []byte, st *soakStats) {
	const kind = "reader.slow"
	for ctx.Err() == nil {
		conn, err := dialSoak(addr)
		if err != nil {
			st.failedf(kind, "dial: %v", err)
			return
		}
		_ = conn.SetDeadline(time.Now().Add(soakRequestTimeout))
		if _, err := io.WriteString(conn, getRequest(addr, url)); err != nil {
			st.failedf(kind, "send: %v", err)
			conn.Close()
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReaderSize(throttledReader{conn}, 8<<10), nil)
		if err != nil {
			st.failedf(kind, "read the answer: %v", err)
			conn.Close()
			continue
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		switch {
		case err != nil:
			st.failedf(kind, "a slow but moving download was cut off after %d of %d bytes: %v", len(got), len(want), err)
		case resp.StatusCode != http.StatusOK || !bytes.Equal(got, want):
			st.failedf(kind, "GET the fixture slowly: %d, %d bytes (%s), want 200 and the fixture (%s)", resp.StatusCode, len(got), sha256URI(got), sha256URI(want))
		default:
			st.succeeded(kind)
		}
	}
}

// runNeverReader pipelines soakNeverRequests GETs of the fixture on one connection and
// reads nothing for three write timeouts: more than the socket buffers hold, so the
// server's write blocks and its write timeout must cut the connection off. Then it reads
// what is left, to the end: the answers the buffers held, then EOF or a reset. What must
// not happen is a connection the server holds for ever, which the fd and RSS samples
// would show and the final read would not end.
func runNeverReader(ctx context.Context, addr, url string, st *soakStats) {
	const kind = "reader.never"
	for ctx.Err() == nil {
		conn, err := dialSoak(addr)
		if err != nil {
			st.failedf(kind, "dial: %v", err)
			return
		}
		req := strings.Replace(getRequest(addr, url), "Connection: close\r\n", "", 1)
		if _, err := io.WriteString(conn, strings.Repeat(req, soakNeverRequests-1)+getRequest(addr, url)); err != nil {
			st.failedf(kind, "send: %v", err)
			conn.Close()
			continue
		}
		pause.For(ctx, 3*soakWriteTimeout)
		_ = conn.SetReadDeadline(time.Now().Add(soakCutoffBound))
		n, err := io.Copy(io.Discard, conn)
		conn.Close()
		switch {
		case err != nil && isTimeout(err):
			st.failedf(kind, "the connection neither ended nor was cut off within %v of reading (%d bytes read)", soakCutoffBound, n)
			continue
		case n >= soakNeverRequests*soakFixtureBytes:
			st.note(kind, "all answers buffered")
		default:
			st.note(kind, "cut off")
		}
		st.succeeded(kind)
	}
}
