package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// Shape of the crash loop.
const (
	crashIterations      = 20
	crashIterationsShort = 3
	crashWriters         = 8
	crashAgent           = "dur"
	crashWorkbench       = "crash"
	// minAckedBeforeKill: the kill comes only once this many writes of the iteration were
	// acknowledged, then after a random 50–400 ms more.
	minAckedBeforeKill = 12
	tinyMaxBytes       = 512      // inline bodies (InlineMaxBytes defaults to 4096)
	mediumBytes        = 64 << 10 // one blob segment
	bigBytes           = 9 << 20  // above 8 MiB: content-defined chunks in the blob store
	requestTimeout     = 2 * time.Minute
)

// fileState is a file as a reader must see it: its bytes (by size and SHA-256) and its
// generation (the ETag).
type fileState struct {
	size int64
	sum  [sha256.Size]byte
	gen  uint64
}

func (s *fileState) String() string {
	if s == nil {
		return "absent"
	}
	return fmt.Sprintf("%d bytes sha256:%x generation %d", s.size, s.sum, s.gen)
}

type opKind int

const (
	opPut    opKind = iota // PUT: an upsert of the whole body
	opAppend               // POST ?append
)

// writeOp is one write with its Idempotency-Key.
type writeOp struct {
	kind opKind
	key  string
	body []byte
	// size and sum are the path's content once this op applied.
	size int64
	sum  [sha256.Size]byte
	// gen is the generation the server answered (acknowledged ops only).
	gen uint64
}

// trackedPath is the model of one path. A single writer owns it, so at most one of its
// ops can be in flight: at a crash the path must show either the acknowledged state or
// exactly the result of that op.
type trackedPath struct {
	path  string // inside the workbench
	iter  int    // iteration that wrote it
	big   bool   // may hold a 9 MiB body: HEAD-checked in later iterations but the last
	acked *fileState
	// content is the acknowledged body of an append log during its iteration.
	content []byte
	// lastAcked is the last acknowledged op, replayed after the restart; pending is the op
	// in flight at the kill. Both are dropped when the iteration ends.
	lastAcked, pending *writeOp
}

// crashRun is the state shared by the writers of one iteration.
type crashRun struct {
	base     string // server URL
	hc       *http.Client
	killed   atomic.Bool  // set just before the SIGKILL
	acked    atomic.Int64 // writes acknowledged in this iteration
	bigAcked atomic.Int64
	inflight atomic.Int64 // requests sent and not yet fully answered
}

// writeAnswer is the JSON of a write's success response.
type writeAnswer struct {
	Generation    uint64 `json:"generation"`
	SizeBytes     int64  `json:"size_bytes"`
	DigestURI     string `json:"digest_uri"`
	Digest        string `json:"digest"`
	AppendedBytes int64  `json:"appended_bytes"`
	Replayed      bool   `json:"-"` // Idempotent-Replayed: true
}

// TestKill9LosesNoAcknowledgedWrite crashes the server with SIGKILL while eight writers
// are mid-request (PUTs of inline, 64 KiB and 9 MiB bodies, and appends, every one with an
// Idempotency-Key), restarts it on the same data directory, and checks that
//   - one write at least was provably in flight at each kill (a ninth writer's append
//     whose body is half sent), and Raft snapshots were taken along the way;
//   - every acknowledged write reads back with the same bytes, generation (ETag) and
//     digest, including the writes of all earlier iterations (the data directory is kept
//     across 20 crashes);
//   - a path whose write was in flight shows either its acknowledged state (or nothing) or
//     exactly that write's result: never partial or foreign bytes;
//   - retrying an in-flight write with its Idempotency-Key returns the first answer if it
//     had applied (no second append) and applies it otherwise; replaying an acknowledged
//     write returns its original answer and changes nothing.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	iterations := crashIterations
	if testing.Short() {
		iterations = crashIterationsShort // -short: same checks, fewer crashes
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("crash loop: %d iterations, %d writers, seed %d", iterations, crashWriters, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	runID := strconv.FormatUint(seed%1e9, 36)

	// Frequent Raft snapshots, so that restarts recover from a snapshot plus a log tail
	// and some kills land while a snapshot is being written.
	dataDir := t.TempDir()
	srv := framework.StartProcess(t, cairnBin, dataDir, "--raft-snapshot-threshold", "64", "--raft-snapshot-interval", "200ms")
	if r := doHTTP(t, "PUT", srv.URL+"/v1/agents/"+crashAgent+"/workbenches/"+crashWorkbench, nil); r.status != 201 {
		t.Fatalf("create workbench: %d %s", r.status, r.body)
	}
	var (
		all                        []*trackedPath
		totalAcked, totalBigAcked  int64
		totalPending, totalApplied int
	)
	for it := 1; it <= iterations; it++ {
		start := time.Now()
		r := crashIteration(t, srv, rng, seed, runID, it)
		all = append(all, r.current...)

		srv.Restart()
		last := it == iterations
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
		applied := verifyAfterCrash(t, hc, srv.URL, all, it, last)
		retryPending(t, hc, srv.URL, r.pending, applied)
		replayAcknowledged(t, hc, srv.URL, r.current)
		verifySettled(t, hc, srv.URL, r.current)
		hc.CloseIdleConnections()
		if t.Failed() {
			t.Fatalf("iteration %d failed (seed %d)", it, seed)
		}

		for _, p := range r.current {
			p.content, p.lastAcked, p.pending = nil, nil, nil
		}
		totalAcked += r.acked
		totalBigAcked += r.bigAcked
		totalPending += len(r.pending)
		totalApplied += len(applied)
		t.Logf("iteration %2d: %4d writes acknowledged (%d of 9 MiB), killed %3d ms after the %dth ack with %d requests outstanding; "+
			"%d outcomes unknown → %d had applied; %d paths verified; %.1f s",
			it, r.acked, r.bigAcked, r.delay.Milliseconds(), minAckedBeforeKill, r.inflightAtKill,
			len(r.pending), len(applied), len(all), time.Since(start).Seconds())
	}
	// The snapshot settings took effect (layout documented in package api/server).
	snaps, err := os.ReadDir(filepath.Join(dataDir, "shards", "0", "snapshots"))
	if err != nil || len(snaps) == 0 {
		t.Errorf("no Raft snapshot was taken during the crash loop (%v): restarts never recovered from one", err)
	}
	t.Logf("crash loop done: %d crashes, %d acknowledged writes (%d of 9 MiB), %d writes in flight at a kill of which %d had applied; all verified",
		iterations, totalAcked, totalBigAcked, totalPending, totalApplied)
}

// chachaSeed derives a ChaCha8 seed for one writer of one iteration.
func chachaSeed(seed uint64, it, writer int) [32]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%d/%d/%d", seed, it, writer))
}

// iterationResult is what one crash iteration wrote.
type iterationResult struct {
	current        []*trackedPath // every path written in the iteration
	pending        []*trackedPath // paths whose write was in flight at the kill
	acked          int64
	bigAcked       int64
	delay          time.Duration // from the minAckedBeforeKill-th ack to the kill
	inflightAtKill int64
}

// crashIteration runs the writers against srv and kills it with SIGKILL mid-stream.
func crashIteration(t *testing.T, srv *framework.Process, rng *rand.Rand, seed uint64, runID string, it int) iterationResult {
	t.Helper()
	run := &crashRun{base: srv.URL, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * crashWriters, DisableCompression: true}}}
	defer run.hc.CloseIdleConnections()
	writers := make([]*crashWriter, crashWriters)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	defer func() {
		// Normally the writers stopped at the kill already; after a failure this stops them.
		run.killed.Store(true)
		cancel()
		wg.Wait()
	}()
	for i := range writers {
		w := &crashWriter{id: i, iter: it, runID: runID, run: run, bigAt: -1,
			rng: rand.New(rand.NewPCG(seed, uint64(it*100+i))), bytes: rand.NewChaCha8(chachaSeed(seed, it, i))}
		switch i {
		case 0:
			w.bigAt = 0 // starts with a 9 MiB body
		case 1:
			w.bigAt = w.rng.IntN(10)
		}
		writers[i] = w
		wg.Go(func() { w.loop(ctx) })
	}
	// The trickler keeps one write provably in flight at the kill: half its body is sent,
	// the rest is held back until after the crash.
	trickler := &crashWriter{id: crashWriters, iter: it, runID: runID, run: run, bigAt: -1,
		rng: rand.New(rand.NewPCG(seed, uint64(it*100+crashWriters))), bytes: rand.NewChaCha8(chachaSeed(seed, it, crashWriters))}
	writers = append(writers, trickler)
	halfSent, release := make(chan struct{}), make(chan struct{})
	released := false
	releaseTrickle := func() {
		if !released {
			released = true
			close(release)
		}
	}
	defer releaseTrickle()
	wg.Go(func() { trickler.trickle(ctx, halfSent, release) })

	retry.Within(t, time.Minute, fmt.Sprintf("iteration %d: %d writes acknowledged", it, minAckedBeforeKill), func() error {
		if n := run.acked.Load(); n < minAckedBeforeKill {
			return fmt.Errorf("%d acknowledged so far", n)
		}
		select {
		case <-halfSent:
			return nil
		default:
			return errors.New("the trickled append has not sent its first half yet")
		}
	})
	r := iterationResult{delay: 50*time.Millisecond + time.Duration(rng.Int64N(int64(350*time.Millisecond)))}
	time.Sleep(r.delay) // the crash point: a random moment in the write stream, not a wait for a condition
	r.inflightAtKill = run.inflight.Load()
	run.killed.Store(true)
	srv.Kill()
	releaseTrickle()
	// The writers see their connections fail and stop; nothing is cancelled from this side
	// first, so every outstanding request meets the crash.
	wg.Wait()

	for _, w := range writers {
		for _, e := range w.errs {
			t.Errorf("iteration %d: writer %d: %v", it, w.id, e)
		}
		for _, p := range w.paths {
			r.current = append(r.current, p)
			if p.pending != nil {
				r.pending = append(r.pending, p)
			}
		}
	}
	if len(trickler.paths) != 1 || trickler.paths[0].pending == nil {
		t.Errorf("iteration %d: the trickled append was not in flight at the kill", it)
	}
	r.acked, r.bigAcked = run.acked.Load(), run.bigAcked.Load()
	return r
}

// crashWriter issues writes to its own paths until the kill.
type crashWriter struct {
	id, iter int
	runID    string
	run      *crashRun
	rng      *rand.Rand
	bytes    *rand.ChaCha8
	bigAt    int // op number of the 9 MiB PUT, or -1
	ops      int
	log      *trackedPath // append target
	mutable  *trackedPath // overwrite target
	fresh    int
	paths    []*trackedPath
	errs     []error // failures before the kill
}

func (w *crashWriter) newPath(path string) *trackedPath {
	p := &trackedPath{path: path, iter: w.iter}
	w.paths = append(w.paths, p)
	return p
}

func (w *crashWriter) loop(ctx context.Context) {
	for !w.run.killed.Load() {
		p, op := w.next()
		w.run.inflight.Add(1)
		ans, err := sendWrite(ctx, w.run.hc, w.run.base, p, op, nil)
		w.run.inflight.Add(-1)
		if err != nil {
			// The outcome is unknown: it may have applied before the crash.
			p.pending = op
			if !w.run.killed.Load() {
				w.errs = append(w.errs, fmt.Errorf("%s (%s): %w", p.path, op.key, err))
			}
			return
		}
		w.acknowledge(p, op, ans)
	}
}

// acknowledge records a write whose 2xx answer was fully received.
func (w *crashWriter) acknowledge(p *trackedPath, op *writeOp, ans *writeAnswer) {
	if problem := checkAnswer(p, op, ans); problem != "" {
		w.errs = append(w.errs, fmt.Errorf("%s (%s): acknowledged with a wrong answer: %s", p.path, op.key, problem))
	}
	op.gen = ans.Generation
	p.acked = &fileState{size: op.size, sum: op.sum, gen: ans.Generation}
	if op.kind == opAppend {
		p.content = append(p.content, op.body...)
	}
	p.lastAcked = op
	w.run.acked.Add(1)
	if len(op.body) == bigBytes {
		w.run.bigAcked.Add(1)
	}
}

// trickleBytes is the size of the append the trickler never finishes sending.
const trickleBytes = 256 << 10

// trickle writes a tiny file, then appends trickleBytes to it of which only the first half
// is sent (halfSent is closed once the transport took it); the rest waits for release,
// which comes after the kill. The append must never show, not even in part.
func (w *crashWriter) trickle(ctx context.Context, halfSent chan<- struct{}, release <-chan struct{}) {
	p := w.newPath(fmt.Sprintf("logs/it%02d/trickle.log", w.iter))
	first := putOp(fmt.Sprintf("crash-%s-it%02d-trickle-put", w.runID, w.iter), w.body(1+w.rng.IntN(tinyMaxBytes)))
	ans, err := sendWrite(ctx, w.run.hc, w.run.base, p, first, nil)
	if err != nil {
		p.pending = first
		w.errs = append(w.errs, fmt.Errorf("%s: the trickler's first write failed: %w", p.path, err))
		return
	}
	w.acknowledge(p, first, ans)
	p.content = slices.Clone(first.body)
	body := w.body(trickleBytes)
	op := &writeOp{kind: opAppend, key: fmt.Sprintf("crash-%s-it%02d-trickle-append", w.runID, w.iter), body: body,
		size: int64(len(p.content) + len(body)), sum: sha256.Sum256(append(slices.Clip(p.content), body...))}
	pr, pw := io.Pipe()
	go func() {
		if _, err := pw.Write(body[:len(body)/2]); err != nil {
			pw.CloseWithError(err)
			return
		}
		close(halfSent)
		<-release
		pw.CloseWithError(errors.New("held back until after the crash"))
	}()
	w.run.inflight.Add(1)
	ans, err = sendWrite(ctx, w.run.hc, w.run.base, p, op, pr)
	w.run.inflight.Add(-1)
	if err == nil {
		w.errs = append(w.errs, fmt.Errorf("%s: an append of which only %d of %d bytes were sent was acknowledged: %+v", p.path, len(body)/2, len(body), ans))
	}
	p.pending = op
}

// next picks the next write: the 9 MiB PUT when due, else appends to the writer's log,
// overwrites of its mutable file, and creations of fresh files, with tiny (inline),
// 64 KiB (random or compressible) and empty bodies.
func (w *crashWriter) next() (*trackedPath, *writeOp) {
	n := w.ops
	w.ops++
	key := fmt.Sprintf("crash-%s-it%02d-w%d-op%04d", w.runID, w.iter, w.id, n)
	if n == w.bigAt {
		p := w.newPath(fmt.Sprintf("outputs/it%02d/w%d/big.bin", w.iter, w.id))
		p.big = true
		return p, putOp(key, w.body(bigBytes))
	}
	r := w.rng.IntN(100)
	switch {
	case r < 40:
		if w.log == nil {
			w.log = w.newPath(fmt.Sprintf("logs/it%02d/w%d/run.log", w.iter, w.id))
		}
		size := 1 + w.rng.IntN(tinyMaxBytes)
		if w.rng.IntN(10) == 0 {
			size = mediumBytes
		}
		body := w.body(size)
		whole := sha256.Sum256(append(slices.Clip(w.log.content), body...))
		return w.log, &writeOp{kind: opAppend, key: key, body: body, size: int64(len(w.log.content) + len(body)), sum: whole}
	case r < 65:
		if w.mutable == nil {
			w.mutable = w.newPath(fmt.Sprintf("outputs/it%02d/w%d/mutable.bin", w.iter, w.id))
		}
		return w.mutable, putOp(key, w.body(w.bodySize()))
	default:
		w.fresh++
		p := w.newPath(fmt.Sprintf("outputs/it%02d/w%d/f%04d.bin", w.iter, w.id, w.fresh))
		return p, putOp(key, w.body(w.bodySize()))
	}
}

func (w *crashWriter) bodySize() int {
	switch r := w.rng.IntN(100); {
	case r < 5:
		return 0
	case r < 70:
		return 1 + w.rng.IntN(tinyMaxBytes)
	default:
		return mediumBytes
	}
}

// body returns size bytes: random, or (half of the larger ones) compressible text.
func (w *crashWriter) body(size int) []byte {
	b := make([]byte, size)
	if size >= mediumBytes && w.rng.IntN(2) == 0 {
		line := fmt.Appendf(nil, "writer %d iteration %d op %d: compressible line %x\n", w.id, w.iter, w.ops, w.rng.Uint64())
		for i := 0; i < size; i += len(line) {
			copy(b[i:], line)
		}
		return b
	}
	_, _ = w.bytes.Read(b)
	return b
}

func putOp(key string, body []byte) *writeOp {
	return &writeOp{kind: opPut, key: key, body: body, size: int64(len(body)), sum: sha256.Sum256(body)}
}

// sendWrite sends op (its body from stream when not nil, declared as len(op.body) bytes)
// and returns the answer once its whole body was received with a 2xx status; anything
// else is an error (the write's outcome is then unknown).
func sendWrite(ctx context.Context, hc *http.Client, base string, p *trackedPath, op *writeOp, stream io.Reader) (*writeAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	method, u := http.MethodPut, fileURL(base, crashAgent, crashWorkbench, p.path)
	if op.kind == opAppend {
		method, u = http.MethodPost, u+"?append"
	}
	var body io.Reader = bytes.NewReader(op.body)
	if stream != nil {
		body = stream
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(op.body))
	req.Header.Set("Idempotency-Key", op.key)
	req.Header.Set("Content-Type", "application/octet-stream")
	r, err := send(hc, req)
	if err != nil {
		return nil, err
	}
	if r.status != http.StatusOK && r.status != http.StatusCreated {
		return nil, fmt.Errorf("status %d: %s", r.status, r.body)
	}
	var ans writeAnswer
	if err := json.Unmarshal(r.body, &ans); err != nil {
		return nil, fmt.Errorf("status %d with an undecodable body %q: %w", r.status, r.body, err)
	}
	if et := r.header.Get("ETag"); et != strconv.Quote(strconv.FormatUint(ans.Generation, 10)) {
		return nil, fmt.Errorf("ETag %q does not match generation %d", et, ans.Generation)
	}
	ans.Replayed = r.header.Get("Idempotent-Replayed") == "true"
	return &ans, nil
}

// checkAnswer compares an acknowledged answer with the model ("" when it agrees).
func checkAnswer(p *trackedPath, op *writeOp, a *writeAnswer) string {
	var problems []string
	if a.SizeBytes != op.size {
		problems = append(problems, fmt.Sprintf("size_bytes %d, want %d", a.SizeBytes, op.size))
	}
	if p.acked != nil && a.Generation <= p.acked.gen {
		problems = append(problems, fmt.Sprintf("generation %d is not above the previous %d", a.Generation, p.acked.gen))
	}
	if a.Generation == 0 {
		problems = append(problems, "generation 0")
	}
	switch op.kind {
	case opPut:
		if a.DigestURI != digestURI(op.sum) {
			problems = append(problems, fmt.Sprintf("digest_uri %s, want %s", a.DigestURI, digestURI(op.sum)))
		}
	case opAppend:
		if a.AppendedBytes != int64(len(op.body)) {
			problems = append(problems, fmt.Sprintf("appended_bytes %d, want %d", a.AppendedBytes, len(op.body)))
		}
		if want := digestURI(sha256.Sum256(op.body)); a.Digest != want {
			problems = append(problems, fmt.Sprintf("digest %s, want %s (of the appended bytes only)", a.Digest, want))
		}
		if a.DigestURI != "" && a.DigestURI != digestURI(op.sum) {
			problems = append(problems, fmt.Sprintf("digest_uri %s, want %s (of the whole file)", a.DigestURI, digestURI(op.sum)))
		}
	}
	return strings.Join(problems, "; ")
}

func digestURI(sum [sha256.Size]byte) string { return "sha256:" + hex.EncodeToString(sum[:]) }

// observed is what a read of a path returned.
type observed struct {
	state *fileState // nil: 404
	full  bool       // the body was read (GET), not only the headers (HEAD)
}

// readPath reads p's current state with GET (full) or HEAD, checking that the headers
// agree with the bytes.
func readPath(ctx context.Context, hc *http.Client, base string, p *trackedPath, full bool) (observed, error) {
	method := http.MethodHead
	if full {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, fileURL(base, crashAgent, crashWorkbench, p.path), nil)
	if err != nil {
		return observed{}, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := hc.Do(req)
	if err != nil {
		return observed{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return observed{full: full}, nil
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return observed{}, fmt.Errorf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	gen, err := strconv.ParseUint(strings.Trim(resp.Header.Get("ETag"), `"`), 10, 64)
	if err != nil {
		return observed{}, fmt.Errorf("%s: ETag %q is not a generation", method, resp.Header.Get("ETag"))
	}
	if g := resp.Header.Get("Cairn-Generation"); g != strconv.FormatUint(gen, 10) {
		return observed{}, fmt.Errorf("%s: Cairn-Generation %q disagrees with ETag %d", method, g, gen)
	}
	length, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil {
		return observed{}, fmt.Errorf("%s: Content-Length %q", method, resp.Header.Get("Content-Length"))
	}
	digest := resp.Header.Get("Cairn-Digest")
	st := &fileState{size: length, gen: gen}
	if !full {
		raw, err := hex.DecodeString(strings.TrimPrefix(digest, "sha256:"))
		if err != nil || len(raw) != sha256.Size || !strings.HasPrefix(digest, "sha256:") {
			return observed{}, fmt.Errorf("HEAD: Cairn-Digest %q", digest)
		}
		copy(st.sum[:], raw)
		return observed{state: st}, nil
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		return observed{}, fmt.Errorf("GET: body broke off after %d of %d bytes: %w", n, length, err)
	}
	copy(st.sum[:], h.Sum(nil))
	if n != length {
		return observed{}, fmt.Errorf("GET: %d body bytes, Content-Length %d", n, length)
	}
	if digest != digestURI(st.sum) {
		return observed{}, fmt.Errorf("GET: the body (%d bytes) hashes to %s but Cairn-Digest says %s", n, digestURI(st.sum), digest)
	}
	return observed{state: st, full: true}, nil
}

// forEachPath runs fn over paths with a few in parallel and reports each non-empty result
// as a test error.
func forEachPath(t *testing.T, paths []*trackedPath, fn func(*trackedPath) string) {
	t.Helper()
	problems := make([]string, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				problems[i] = fn(paths[i])
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	shown := 0
	for i, pr := range problems {
		if pr == "" {
			continue
		}
		if shown++; shown <= 40 {
			t.Errorf("%s (written in iteration %d): %s", paths[i].path, paths[i].iter, pr)
		}
	}
	if shown > 40 {
		t.Errorf("… and %d more paths with problems", shown-40)
	}
}

// verifyAfterCrash checks every path ever written against the model after restart number
// it, and returns the paths whose in-flight write turned out to have applied (their
// observed state becomes the acknowledged one).
func verifyAfterCrash(t *testing.T, hc *http.Client, base string, all []*trackedPath, it int, last bool) map[*trackedPath]bool {
	t.Helper()
	var mu sync.Mutex
	applied := map[*trackedPath]bool{}
	forEachPath(t, all, func(p *trackedPath) string {
		full := !p.big || p.iter == it || last
		obs, err := readPath(t.Context(), hc, base, p, full)
		if err != nil {
			return err.Error()
		}
		got := obs.state
		switch {
		case got == nil && p.acked == nil:
			return "" // its first write was in flight and did not apply
		case got == nil:
			return "ACKNOWLEDGED WRITE LOST: the path is gone; acknowledged state was " + p.acked.String()
		case p.acked != nil && *got == *p.acked:
			return "" // acknowledged state; a pending write did not apply
		case p.pending != nil && got.size == p.pending.size && got.sum == p.pending.sum && (p.acked == nil || got.gen > p.acked.gen):
			mu.Lock()
			applied[p] = true
			mu.Unlock()
			p.pending.gen = got.gen
			return ""
		}
		want := "the acknowledged state " + p.acked.String()
		if p.pending != nil {
			want += fmt.Sprintf(" or the in-flight write's result (%d bytes sha256:%x, a newer generation)", p.pending.size, p.pending.sum)
		}
		how := "GET"
		if !obs.full {
			how = "HEAD"
		}
		return fmt.Sprintf("after crash %d, %s shows %s; want %s", it, how, got, want)
	})
	return applied
}

// retryPending sends each in-flight write again with its Idempotency-Key. One that had
// applied must be answered from the dedupe record (same generation, Idempotent-Replayed)
// without applying twice; one that had not must apply now.
func retryPending(t *testing.T, hc *http.Client, base string, pending []*trackedPath, applied map[*trackedPath]bool) {
	t.Helper()
	forEachPath(t, pending, func(p *trackedPath) string {
		op := p.pending
		ans, err := sendWrite(t.Context(), hc, base, p, op, nil)
		if err != nil {
			return fmt.Sprintf("retry of the in-flight write %s: %v", op.key, err)
		}
		var problems []string
		if applied[p] {
			if ans.Generation != op.gen || !ans.Replayed {
				problems = append(problems, fmt.Sprintf("the in-flight write %s had applied (generation %d) but its retry answered generation %d, Idempotent-Replayed %v: want the first answer replayed",
					op.key, op.gen, ans.Generation, ans.Replayed))
			}
		} else if ans.Replayed {
			problems = append(problems, fmt.Sprintf("the in-flight write %s had not applied (the path showed %s) but its retry claims a replay (generation %d)",
				op.key, p.acked, ans.Generation))
		}
		if pr := checkAnswer(p, op, ans); pr != "" {
			problems = append(problems, "retry answer: "+pr)
		}
		op.gen = ans.Generation
		p.acked = &fileState{size: op.size, sum: op.sum, gen: ans.Generation}
		p.lastAcked = op
		return strings.Join(problems, "; ")
	})
}

// replayAcknowledged sends the last acknowledged write of each path again with its key:
// the answer must be the original one, replayed.
func replayAcknowledged(t *testing.T, hc *http.Client, base string, paths []*trackedPath) {
	t.Helper()
	forEachPath(t, paths, func(p *trackedPath) string {
		op := p.lastAcked
		if op == nil {
			return ""
		}
		ans, err := sendWrite(t.Context(), hc, base, p, op, nil)
		if err != nil {
			return fmt.Sprintf("replay of acknowledged write %s: %v", op.key, err)
		}
		if !ans.Replayed || ans.Generation != op.gen || ans.SizeBytes != op.size {
			return fmt.Sprintf("replay of acknowledged write %s after the crash answered generation %d, %d bytes, Idempotent-Replayed %v; want the original generation %d, %d bytes, replayed",
				op.key, ans.Generation, ans.SizeBytes, ans.Replayed, op.gen, op.size)
		}
		return ""
	})
}

// verifySettled checks that paths show exactly their acknowledged state.
func verifySettled(t *testing.T, hc *http.Client, base string, paths []*trackedPath) {
	t.Helper()
	forEachPath(t, paths, func(p *trackedPath) string {
		obs, err := readPath(t.Context(), hc, base, p, true)
		if err != nil {
			return err.Error()
		}
		if p.acked == nil && obs.state == nil {
			return ""
		}
		if p.acked == nil || obs.state == nil || *obs.state != *p.acked {
			return fmt.Sprintf("after retries and replays the path shows %s; want %s", obs.state, p.acked)
		}
		return ""
	})
}
