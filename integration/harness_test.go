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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
)

// The cairn binaries TestMain builds.
var (
	// cairnBin is a plain build: used where speed matters (throughput, crash loops).
	cairnBin string
	// cairnRaceBin is a race-instrumented build when the tests run with -race, else
	// cairnBin. Children running it fail their test on a "DATA RACE" report.
	cairnRaceBin string
)

// cliTimeout is the default bound of one CLI command. Generous: it only turns a hang into
// a failure.
const cliTimeout = 2 * time.Minute

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
	if err := framework.BuildCairn(cairnBin); err != nil {
		fmt.Fprintln(os.Stderr, "integration: cannot build the cairn binary:", err)
		return 1
	}
	cairnRaceBin = cairnBin
	if raceEnabled {
		cairnRaceBin = filepath.Join(dir, "cairn-race")
		if err := framework.BuildCairn(cairnRaceBin, "-race"); err != nil {
			fmt.Fprintln(os.Stderr, "integration: cannot build the race-instrumented cairn binary:", err)
			return 1
		}
	}
	return m.Run()
}

// cliOptions configure one CLI run.
type cliOptions struct {
	bin     string        // cairnRaceBin when empty
	stdin   io.Reader     // nil: no input
	env     []string      // added to framework.ChildEnv()
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
	cmd.Env = framework.ChildEnv(o.env...)
	cmd.Stdin = o.stdin
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = framework.ChildSysProcAttr()
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
	if strings.Contains(r.stderr, framework.DataRaceMarker) {
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
	r, err := send(&http.Client{Timeout: time.Minute}, req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// send sends req over hc and reads the whole answer.
func send(hc *http.Client, req *http.Request) (httpResult, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return httpResult{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpResult{}, fmt.Errorf("reading the %d answer: %w", resp.StatusCode, err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// envCount is the positive whole number the environment variable name holds, or def when
// it is unset or holds anything else: how a run asks a test for more writes, rounds or
// faults than its default.
func envCount(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// fileURL is the REST URL of path inside workbench wb of agent (path components are
// plain names in these tests; callers escape anything else themselves).
func fileURL(base, agent, wb, path string) string {
	return base + "/v1/agents/" + agent + "/workbenches/" + wb + "/files/" + path
}
