package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// The cairn binaries TestMain builds.
var (
	// cairnBin is a plain build: used where speed matters (throughput, crash loops).
	cairnBin string
	// cairnRaceBin is a race-instrumented build when the tests run with -race, else
	// cairnBin. Children running it fail their test on a "DATA RACE" report.
	cairnRaceBin string
)

// Bounds of the harness. They are generous: they only turn a hang into a failure.
const (
	serveStartTimeout = 60 * time.Second // until "cairn is serving" appears
	readyTimeout      = 60 * time.Second // until /readyz answers 200
	stopTimeout       = 30 * time.Second // from SIGTERM to exit
	killTimeout       = 15 * time.Second // from SIGKILL to exit
	cliTimeout        = 2 * time.Minute  // default bound of one CLI command
)

// dataRaceMarker is what the race detector prints on a child's stderr.
const dataRaceMarker = "WARNING: DATA RACE"

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cairn-integration-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	cairnBin = filepath.Join(dir, "cairn")
	if err := buildCairn(cairnBin); err != nil {
		fmt.Fprintln(os.Stderr, "integration: cannot build the cairn binary:", err)
		return 1
	}
	cairnRaceBin = cairnBin
	if raceEnabled {
		cairnRaceBin = filepath.Join(dir, "cairn-race")
		if err := buildCairn(cairnRaceBin, "-race"); err != nil {
			fmt.Fprintln(os.Stderr, "integration: cannot build the race-instrumented cairn binary:", err)
			return 1
		}
	}
	return m.Run()
}

// buildCairn builds ./cmd/cairn into out with the go command that runs the tests (go test
// puts its GOROOT/bin first on PATH).
func buildCairn(out string, flags ...string) error {
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", out, "github.com/cairnstore/cairn/cmd/cairn")
	cmd := exec.Command("go", args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// childEnv returns the test's environment without any CAIRN_* variable (a developer's
// settings must not leak into the children), plus extra ("KEY=value").
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// outputLog collects the output lines of one or more child processes, each line
// prefixed with the child it came from. It is safe for concurrent use.
type outputLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *outputLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.WriteString(line)
	l.buf.WriteByte('\n')
}

// String returns everything logged so far.
func (l *outputLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// tail returns at most the last n bytes logged, cut at a line start.
func (l *outputLog) tail(n int) string {
	s := l.String()
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "…\n" + s
}

// lineWriter is an io.Writer for one output stream of a child: it splits what it gets
// into lines, logs each with prefix, and hands each to onLine (which may be nil).
type lineWriter struct {
	mu      sync.Mutex
	log     *outputLog
	prefix  string
	onLine  func(string)
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		w.log.add(w.prefix + line)
		if w.onLine != nil {
			w.onLine(line)
		}
	}
	return len(p), nil
}

// servingLine matches the log line `cairn serve` writes once it listens.
var servingLine = regexp.MustCompile(`msg="cairn is serving" url=(http://\S+) admin_url=(http://\S+)`)

// server is one `cairn serve` on a data directory, run as a child process. It can be
// killed (SIGKILL) and restarted on the same directory; each start gets a new free port.
type server struct {
	t       testing.TB
	bin     string
	dataDir string
	args    []string   // extra arguments of `cairn serve`
	log     outputLog  // stdout and stderr of every incarnation
	starts  int        // incarnations so far
	proc    *childProc // the running incarnation; nil when stopped or killed
	// URL is the base URL of the running incarnation ("http://127.0.0.1:PORT").
	URL string
	// AdminURL is the base URL of its admin listener (/v1/admin/...).
	AdminURL string
}

// childProc is a started process whose Wait runs in the background.
type childProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when Wait returned
	err  error         // Wait's result, valid once done is closed
}

func startChild(cmd *exec.Cmd) (*childProc, error) {
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &childProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// serverOption adjusts a server before its first start.
type serverOption func(*server)

// instrumented runs the race-instrumented binary (when the tests run with -race).
func instrumented() serverOption { return func(s *server) { s.bin = cairnRaceBin } }

// serveArgs adds arguments to every `cairn serve` of the server.
func serveArgs(args ...string) serverOption {
	return func(s *server) { s.args = append(s.args, args...) }
}

// startServer runs `cairn serve --data-dir dataDir --listen 127.0.0.1:0` (plain binary
// unless an option says otherwise), waits until it logs its URL and /readyz answers 200,
// and registers a cleanup that stops it gracefully and checks it exited 0.
func startServer(t testing.TB, dataDir string, opts ...serverOption) *server {
	t.Helper()
	s := &server{t: t, bin: cairnBin, dataDir: dataDir}
	for _, o := range opts {
		o(s)
	}
	t.Cleanup(func() {
		if s.proc != nil {
			s.stop()
		}
		if out := s.log.String(); strings.Contains(out, dataRaceMarker) {
			t.Errorf("the race detector reported a data race in cairn serve (%s):\n%s", s.dataDir, out)
		} else if t.Failed() {
			t.Logf("output of cairn serve on %s (%d starts):\n%s", s.dataDir, s.starts, s.log.tail(32<<10))
		}
	})
	s.start()
	return s
}

// start launches a new incarnation and waits until it is ready.
func (s *server) start() {
	s.t.Helper()
	if s.proc != nil {
		s.t.Fatalf("server on %s is already running", s.dataDir)
	}
	s.starts++
	urls := make(chan [2]string, 1)
	args := append([]string{"serve", "--data-dir", s.dataDir, "--listen", "127.0.0.1:0"}, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Env = childEnv()
	cmd.Stdout = &lineWriter{log: &s.log, prefix: fmt.Sprintf("[serve#%d stdout] ", s.starts)}
	cmd.Stderr = &lineWriter{log: &s.log, prefix: fmt.Sprintf("[serve#%d] ", s.starts), onLine: func(line string) {
		if m := servingLine.FindStringSubmatch(line); m != nil {
			select {
			case urls <- [2]string{m[1], m[2]}:
			default:
			}
		}
	}}
	c, err := startChild(cmd)
	if err != nil {
		s.t.Fatalf("start cairn serve: %v", err)
	}
	s.proc = c
	select {
	case u := <-urls:
		s.URL, s.AdminURL = u[0], u[1]
	case <-c.done:
		s.proc = nil
		s.t.Fatalf("cairn serve on %s exited before serving (%v):\n%s", s.dataDir, c.err, s.log.tail(16<<10))
	case <-time.After(serveStartTimeout):
		s.t.Fatalf("cairn serve on %s did not log %q within %v:\n%s", s.dataDir, "cairn is serving", serveStartTimeout, s.log.tail(16<<10))
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	retry.Within(s.t, readyTimeout, "GET "+s.URL+"/readyz answers 200", func() error {
		select {
		case <-c.done:
			return fmt.Errorf("the server exited: %v", c.err)
		default:
		}
		resp, err := hc.Get(s.URL + "/readyz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		return nil
	})
}

// stop sends SIGTERM and expects a clean exit (status 0) within stopTimeout.
func (s *server) stop() {
	s.t.Helper()
	c := s.proc
	if c == nil {
		return
	}
	s.proc = nil
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(stopTimeout):
		_ = c.cmd.Process.Kill()
		<-c.done
		s.t.Errorf("cairn serve on %s did not exit within %v of SIGTERM (killed it)", s.dataDir, stopTimeout)
		return
	}
	if c.err != nil {
		s.t.Errorf("cairn serve on %s exited with %v after SIGTERM, want status 0:\n%s", s.dataDir, c.err, s.log.tail(64<<10))
	}
}

// kill9 kills the running incarnation with SIGKILL and waits until it is gone.
func (s *server) kill9() {
	s.t.Helper()
	c := s.proc
	if c == nil {
		s.t.Fatalf("kill9: server on %s is not running", s.dataDir)
	}
	s.proc = nil
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatalf("kill -9 cairn serve: %v", err)
	}
	select {
	case <-c.done:
	case <-time.After(killTimeout):
		s.t.Fatalf("cairn serve did not die within %v of SIGKILL", killTimeout)
	}
	var ee *exec.ExitError
	if !errors.As(c.err, &ee) {
		s.t.Fatalf("after SIGKILL, Wait returned %v, want a kill", c.err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL) {
		s.t.Fatalf("cairn serve was not killed by SIGKILL but exited with %v (it died on its own before the kill?):\n%s", c.err, s.log.tail(64<<10))
	}
}

// pause stops the running incarnation with SIGSTOP (a GC pause, a VM steal, a debugger):
// it keeps its sockets, and the kernel queues what arrives until resume.
func (s *server) pause() {
	s.t.Helper()
	if s.proc == nil {
		s.t.Fatalf("pause: server on %s is not running", s.dataDir)
	}
	if err := s.proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("kill -STOP cairn serve: %v", err)
	}
}

// resume continues an incarnation stopped by pause (SIGCONT).
func (s *server) resume() {
	s.t.Helper()
	if s.proc == nil {
		s.t.Fatalf("resume: server on %s is not running", s.dataDir)
	}
	if err := s.proc.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("kill -CONT cairn serve: %v", err)
	}
}

// restart starts a new incarnation on the same data directory (after kill9 or stop).
func (s *server) restart() { s.t.Helper(); s.start() }

// cliOptions configure one CLI run.
type cliOptions struct {
	bin     string        // cairnRaceBin when empty
	stdin   io.Reader     // nil: no input
	env     []string      // added to childEnv()
	timeout time.Duration // cliTimeout when zero
}

// cliResult is what one CLI run produced.
type cliResult struct {
	args           []string
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

func (r cliResult) String() string {
	return fmt.Sprintf("cairn %s → exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// runCLI runs cairn with args and returns its output and exit status. It fails the test
// only when the process cannot run or outlives the timeout, or when it reports a data race.
func runCLI(t testing.TB, o cliOptions, args ...string) cliResult {
	t.Helper()
	bin := o.bin
	if bin == "" {
		bin = cairnRaceBin
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = cliTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv(o.env...)
	cmd.Stdin = o.stdin
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = childSysProcAttr()
	start := time.Now()
	err := cmd.Run()
	r := cliResult{args: args, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("cairn %s did not finish within %v:\n%s", strings.Join(args, " "), timeout, r)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run cairn %s: %v", strings.Join(args, " "), err)
	}
	if strings.Contains(r.stderr, dataRaceMarker) {
		t.Errorf("the race detector reported a data race in the cairn CLI:\n%s", r)
	}
	return r
}

// mustCLI is runCLI that also requires exit status 0.
func mustCLI(t testing.TB, o cliOptions, args ...string) cliResult {
	t.Helper()
	r := runCLI(t, o, args...)
	if r.code != 0 {
		t.Fatalf("want exit status 0:\n%s", r)
	}
	return r
}

// httpResult is a fully read HTTP response.
type httpResult struct {
	status int
	header http.Header
	body   []byte
}

// doHTTP sends one request and reads the whole answer; transport errors fail the test.
func doHTTP(t testing.TB, method, url string, body io.Reader, headers ...string) httpResult {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	req.Header.Set("Accept-Encoding", "identity")
	hc := &http.Client{Timeout: time.Minute}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: b}
}

// fileURL is the REST URL of path inside workbench wb of agent (path components are
// plain names in these tests; callers escape anything else themselves).
func fileURL(base, agent, wb, path string) string {
	return base + "/v1/agents/" + agent + "/workbenches/" + wb + "/files/" + path
}
