package framework

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/retry"
)

// Bounds of a Process, also the bounds of other children's starts and stops. They are
// generous: they only turn a hang into a failure.
const (
	ServeStartTimeout = 60 * time.Second // until "cairn is serving" appears
	ReadyTimeout      = 60 * time.Second // until /readyz answers 200
	StopTimeout       = 30 * time.Second // from SIGTERM to exit
	KillTimeout       = 15 * time.Second // from SIGKILL to exit
)

// DataRaceMarker is what the race detector prints on a child's stderr; a Process whose
// output holds it fails its test.
const DataRaceMarker = "WARNING: DATA RACE"

// BuildCairn builds ./cmd/cairn into out with the go command that runs the tests (go test
// puts its GOROOT/bin first on PATH); flags go to go build ("-race").
func BuildCairn(out string, flags ...string) error {
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", out, "github.com/cairnstore/cairn/cmd/cairn")
	cmd := exec.Command("go", args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// ChildEnv returns the test's environment without any CAIRN_* variable (a developer's
// settings must not leak into the children), plus extra ("KEY=value").
func ChildEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// Log collects the output lines of one or more child processes, each line prefixed
// with the child it came from. It is safe for concurrent use; the zero Log is empty.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Add appends one line.
func (l *Log) Add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.WriteString(line)
	l.buf.WriteByte('\n')
}

// String returns everything logged so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Tail returns at most the last n bytes logged, cut at a line start.
func (l *Log) Tail(n int) string {
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

// LineWriter is an io.Writer for one output stream of a child: it splits what it gets
// into lines, adds each to Log with Prefix, and hands each to OnLine (which may be nil).
type LineWriter struct {
	Log    *Log
	Prefix string
	OnLine func(string)

	mu      sync.Mutex
	partial []byte
}

func (w *LineWriter) Write(p []byte) (int, error) {
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
		w.Log.Add(w.Prefix + line)
		if w.OnLine != nil {
			w.OnLine(line)
		}
	}
	return len(p), nil
}

// Child is a started process whose Wait runs in the background.
type Child struct {
	Cmd  *exec.Cmd
	done chan struct{} // closed when Wait returned
	err  error         // Wait's result, valid once done is closed
}

// StartChild starts cmd so that it dies with the test process where the system allows
// (Linux: a parent-death SIGKILL; a panicking or timed-out test must not leave servers
// running on the box), and waits for it in the background.
func StartChild(cmd *exec.Cmd) (*Child, error) {
	cmd.SysProcAttr = ChildSysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{Cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Done is closed once the child exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is Wait's result; valid once Done is closed.
func (c *Child) Err() error { return c.err }

// servingLine matches the log line `cairn serve` writes once it listens.
var servingLine = regexp.MustCompile(`msg="cairn is serving" url=(http://\S+) admin_url=(http://\S+)`)

// Process is one `cairn serve` on a data directory, run as a child process: an embedded
// node, or a cluster node when Args say --cluster. It can be stopped (SIGTERM), killed
// (SIGKILL), frozen (SIGSTOP) and restarted on the same directory; each start listens on
// new free ports unless Args fix them. Its methods must be called from the test
// goroutine.
type Process struct {
	// Bin is the cairn binary and Args are the extra arguments of `cairn serve`; both are
	// read at every start, so a test may change them while the process is stopped (a
	// rolling upgrade restarts on another binary).
	Bin  string
	Args []string
	// DataDir is the node's data directory, kept across restarts.
	DataDir string
	// URL is the base URL of the running incarnation's client listener
	// ("http://127.0.0.1:PORT"), AdminURL that of its admin listener (/v1/admin/...).
	URL, AdminURL string

	t      testing.TB
	log    Log    // stdout and stderr of every incarnation
	starts int    // incarnations so far
	proc   *Child // the running incarnation; nil when stopped or killed
}

// StartProcess runs `bin serve --data-dir dataDir --listen 127.0.0.1:0 args...`, waits
// until it logs its URL and /readyz answers 200, and registers a cleanup that stops it
// gracefully, checks it exited 0, fails the test on a data race in its output, and prints
// the output's tail when the test failed.
func StartProcess(t testing.TB, bin, dataDir string, args ...string) *Process {
	t.Helper()
	p := &Process{t: t, Bin: bin, DataDir: dataDir, Args: args}
	t.Cleanup(func() {
		if p.proc != nil {
			p.Stop()
		}
		if out := p.log.String(); strings.Contains(out, DataRaceMarker) {
			t.Errorf("the race detector reported a data race in cairn serve (%s):\n%s", p.DataDir, out)
		} else if t.Failed() {
			t.Logf("output of cairn serve on %s (%d starts):\n%s", p.DataDir, p.starts, p.log.Tail(32<<10))
		}
	})
	p.start()
	return p
}

// Running reports whether an incarnation runs (it was not stopped or killed).
func (p *Process) Running() bool { return p.proc != nil }

// Pid is the running incarnation's process id.
func (p *Process) Pid() int {
	p.t.Helper()
	if p.proc == nil {
		p.t.Fatalf("pid: cairn serve on %s is not running", p.DataDir)
	}
	return p.proc.Cmd.Process.Pid
}

// Output is everything every incarnation wrote to stdout and stderr so far.
func (p *Process) Output() string { return p.log.String() }

// OutputTail is at most the last n bytes of Output, cut at a line start.
func (p *Process) OutputTail(n int) string { return p.log.Tail(n) }

// start launches a new incarnation and waits until it is ready.
func (p *Process) start() {
	p.t.Helper()
	if p.proc != nil {
		p.t.Fatalf("cairn serve on %s is already running", p.DataDir)
	}
	p.starts++
	urls := make(chan [2]string, 1)
	args := append([]string{"serve", "--data-dir", p.DataDir, "--listen", "127.0.0.1:0"}, p.Args...)
	cmd := exec.Command(p.Bin, args...)
	cmd.Env = ChildEnv()
	cmd.Stdout = &LineWriter{Log: &p.log, Prefix: fmt.Sprintf("[serve#%d stdout] ", p.starts)}
	cmd.Stderr = &LineWriter{Log: &p.log, Prefix: fmt.Sprintf("[serve#%d] ", p.starts), OnLine: func(line string) {
		if m := servingLine.FindStringSubmatch(line); m != nil {
			select {
			case urls <- [2]string{m[1], m[2]}:
			default:
			}
		}
	}}
	c, err := StartChild(cmd)
	if err != nil {
		p.t.Fatalf("start cairn serve: %v", err)
	}
	p.proc = c
	select {
	case u := <-urls:
		p.URL, p.AdminURL = u[0], u[1]
	case <-c.done:
		p.proc = nil
		p.t.Fatalf("cairn serve on %s exited before serving (%v):\n%s", p.DataDir, c.err, p.log.Tail(16<<10))
	case <-time.After(ServeStartTimeout):
		p.t.Fatalf("cairn serve on %s did not log %q within %v:\n%s", p.DataDir, "cairn is serving", ServeStartTimeout, p.log.Tail(16<<10))
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	retry.Within(p.t, ReadyTimeout, "GET "+p.URL+"/readyz answers 200", func() error {
		select {
		case <-c.done:
			return fmt.Errorf("the server exited: %v", c.err)
		default:
		}
		resp, err := hc.Get(p.URL + "/readyz")
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

// Stop sends SIGTERM and expects a clean exit (status 0) within StopTimeout; it does nothing
// when no incarnation runs.
func (p *Process) Stop() {
	p.t.Helper()
	c := p.proc
	if c == nil {
		return
	}
	p.proc = nil
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(StopTimeout):
		_ = c.Cmd.Process.Kill()
		<-c.done
		p.t.Errorf("cairn serve on %s did not exit within %v of SIGTERM (killed it)", p.DataDir, StopTimeout)
		return
	}
	if c.err != nil {
		p.t.Errorf("cairn serve on %s exited with %v after SIGTERM, want status 0:\n%s", p.DataDir, c.err, p.log.Tail(64<<10))
	}
}

// Kill kills the running incarnation with SIGKILL (kill -9) and waits until it is gone;
// it fails the test if the process had died on its own before.
func (p *Process) Kill() {
	p.t.Helper()
	c := p.proc
	if c == nil {
		p.t.Fatalf("kill: cairn serve on %s is not running", p.DataDir)
	}
	p.proc = nil
	if err := c.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatalf("kill -9 cairn serve: %v", err)
	}
	select {
	case <-c.done:
	case <-time.After(KillTimeout):
		p.t.Fatalf("cairn serve did not die within %v of SIGKILL", KillTimeout)
	}
	var ee *exec.ExitError
	if !errors.As(c.err, &ee) {
		p.t.Fatalf("after SIGKILL, Wait returned %v, want a kill", c.err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL) {
		p.t.Fatalf("cairn serve was not killed by SIGKILL but exited with %v (it died on its own before the kill?):\n%s", c.err, p.log.Tail(64<<10))
	}
}

// Pause stops the running incarnation with SIGSTOP (a GC pause, a VM steal, a debugger):
// it keeps its sockets, and the kernel queues what arrives until Resume.
func (p *Process) Pause() { p.t.Helper(); p.signal("pause", syscall.SIGSTOP) }

// Resume continues an incarnation stopped by Pause (SIGCONT).
func (p *Process) Resume() { p.t.Helper(); p.signal("resume", syscall.SIGCONT) }

func (p *Process) signal(what string, sig syscall.Signal) {
	p.t.Helper()
	if p.proc == nil {
		p.t.Fatalf("%s: cairn serve on %s is not running", what, p.DataDir)
	}
	if err := p.proc.Cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s cairn serve: %v", what, err)
	}
}

// Restart starts a new incarnation on the same data directory (after Kill or Stop) and
// waits until it is ready.
func (p *Process) Restart() { p.t.Helper(); p.start() }
