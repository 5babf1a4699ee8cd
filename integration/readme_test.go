//go:build linux

package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// The README's examples run as written (issue 25): every ```sh block of README.md, in
// order, in one bash session, in a fresh directory holding ./cairn, beside the node the
// Quickstart starts (`cairn serve`, no flags: 127.0.0.1:7070 and ./cairn-data). A block
// the test cannot run says why in the comment above it:
//
//	<!-- example: skip: <reason> -->
//
// The session runs with `set -e`, so the first command that fails ends it, and with curl
// behind a wrapper that adds --fail-with-body: an HTTP error is a failure, as it would be
// for a reader who expected the answer the README shows.

const (
	readmePath = "../README.md"
	// readmeTimeout bounds the whole session (importing the Go source tree is most of it).
	readmeTimeout = 6 * time.Minute
	// quickstartURL is where the Quickstart's node listens by default.
	quickstartURL = "http://127.0.0.1:7070"
)

// The ports the README's examples use: the Quickstart's node and its admin listener, the
// key-checking node of the OpenWOP section, the S3 gateway's node, and the TLS node of "Running a node reachable
// from other hosts".
var readmePorts = []string{"7070", "7071", "7080", "7081", "7090", "7091", "7092", "7443", "7444"}

// readmeBlock is one shell example of the README.
type readmeBlock struct {
	line int    // the line of its opening fence
	text string // its commands, indentation removed
	skip string // why the test does not run it ("" to run it)
}

var (
	fenceOpen  = regexp.MustCompile("^( *)```sh\\s*$")
	skipMarker = regexp.MustCompile(`^\s*<!-- example: skip: (.+) -->\s*$`)
)

// readmeExamples returns the ```sh blocks of the README at path.
func readmeExamples(t *testing.T, path string) []readmeBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks []readmeBlock
		cur    *readmeBlock
		indent string
		prev   string
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(line, indent) + "\n"
		default:
			if m := fenceOpen.FindStringSubmatch(line); m != nil {
				cur, indent = &readmeBlock{line: n}, m[1]
				if s := skipMarker.FindStringSubmatch(prev); s != nil {
					cur.skip = s[1]
				}
			}
			prev = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: a ```sh block is not closed", path, cur.line)
	}
	return blocks
}

func TestReadmeExamplesRunAsWritten(t *testing.T) {
	blocks := readmeExamples(t, readmePath)
	var script strings.Builder
	script.WriteString("set -e\n")
	run := 0
	for _, b := range blocks {
		if b.skip != "" {
			t.Logf("README.md:%d: not run: %s", b.line, b.skip)
			continue
		}
		run++
		fmt.Fprintf(&script, "echo '### README.md:%d' >&2\n%s", b.line, b.text)
	}
	if run < 10 {
		t.Fatalf("only %d of the README's %d shell examples run; the test would check too little", run, len(blocks))
	}
	for _, tool := range []string{"bash", "curl", "jq", "openssl", "hostname", "sha256sum", "diff"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's examples need %s, which is not installed (.ci/run installs what a fresh machine lacks)", tool)
		}
	}
	for _, port := range readmePorts {
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatalf("the README's examples use port %s, which is taken: %v", port, err)
		}
		l.Close()
	}

	work := t.TempDir()
	if err := os.Symlink(cairnBin, filepath.Join(work, "cairn")); err != nil {
		t.Fatal(err)
	}
	bin := curlWrapper(t)
	if err := os.WriteFile(filepath.Join(work, "examples.sh"), []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	startQuickstartNode(t, work)

	ctx, cancel := context.WithTimeout(context.Background(), readmeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "examples.sh")
	cmd.Dir = work
	cmd.Env = framework.ChildEnv("PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"))
	// Its own process group: the nodes the examples start in the background are stopped
	// with the session when the test ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A file, not a pipe: the nodes started in the background keep their copy of the
	// session's output open, and Wait would wait for them to close a pipe.
	out, err := os.Create(filepath.Join(work, "examples.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProcessGroup(t, cmd.Process.Pid) })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the README's examples failed in the block after the last marker (%v):\n%s", err, fileTail(t, out.Name(), 24<<10))
	}
	t.Logf("%d of %d examples ran; their output ends:\n%s", run, len(blocks), fileTail(t, out.Name(), 2<<10))
}

// fileTail returns at most the last n bytes of the file at path.
func fileTail(t *testing.T, path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// curlWrapper returns a directory holding a curl that runs the real one with
// --fail-with-body (an HTTP error exits 22) and without a progress meter.
func curlWrapper(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := fmt.Sprintf("#!/bin/sh\nexec %q --fail-with-body --silent --show-error \"$@\"\n", real)
	if err := os.WriteFile(filepath.Join(dir, "curl"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startQuickstartNode runs the Quickstart's `cairn serve` with no flags in work and waits
// until it is ready; a cleanup stops it.
func startQuickstartNode(t *testing.T, work string) {
	t.Helper()
	var log framework.Log
	cmd := exec.Command("./cairn", "serve")
	cmd.Dir = work
	cmd.Env = framework.ChildEnv()
	cmd.Stdout = &framework.LineWriter{Log: &log, Prefix: "[serve stdout] "}
	cmd.Stderr = &framework.LineWriter{Log: &log, Prefix: "[serve] "}
	c, err := framework.StartChild(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.Done():
		case <-time.After(framework.StopTimeout):
			_ = cmd.Process.Kill()
			<-c.Done()
			t.Errorf("the Quickstart node did not stop within %v of SIGTERM", framework.StopTimeout)
		}
		if t.Failed() {
			t.Logf("output of the Quickstart node:\n%s", log.Tail(16<<10))
		}
	})
	hc := &http.Client{Timeout: 5 * time.Second}
	retry.Within(t, framework.ReadyTimeout, "the Quickstart node answers /readyz", func() error {
		select {
		case <-c.Done():
			return fmt.Errorf("%w: it exited: %v\n%s", retry.ErrStop, c.Err(), log.Tail(4<<10))
		default:
		}
		resp, err := hc.Get(quickstartURL + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

// stopProcessGroup ends what is left of the examples' session (nodes started with &):
// SIGTERM, then SIGKILL if the group is still there after framework.StopTimeout.
func stopProcessGroup(t *testing.T, pgid int) {
	gone := func() error {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return errors.New("processes of the examples' session are still running")
	}
	if gone() == nil {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if _, err := retry.Until(framework.StopTimeout, gone); err != nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		retry.Within(t, framework.KillTimeout, "the examples' session ends", gone)
	}
}
