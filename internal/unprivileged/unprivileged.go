package unprivileged

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// childEnv marks the child process, which runs the test's body itself.
const childEnv = "CAIRN_UNPRIVILEGED_CHILD"

// nobody is the user and group the child runs as (the traditional nobody/nogroup ids).
const nobody = 65534

// Run reports whether the calling test should run its body in this process: true when
// the process is not root (or is the child), false when it is root, after it has run the
// test in a child as an unprivileged user and failed t if the child failed. So:
//
//	if !unprivileged.Run(t) {
//		return // the test ran in a child
//	}
func Run(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(childEnv) == "1" {
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("the test binary: %v", err)
	}
	// A directory the child's user can enter, holding a copy of the binary it can run
	// (go test builds into directories only root may enter).
	dir, err := os.MkdirTemp("", "cairn-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test.bin")
	if err := copyFile(exe, bin); err != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	name := "^" + regexp.QuoteMeta(t.Name()) + "$"
	cmd := exec.Command(bin, "-test.run", name, "-test.count", "1", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), childEnv+"=1", "TMPDIR="+os.TempDir(), "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", t.Name(), nobody, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s as uid %d did not pass (not run?):\n%s", t.Name(), nobody, out)
	}
	t.Logf("ran as uid %d:\n%s", nobody, out)
	return false
}

// ReadOnlyDir returns a fresh directory of the test with mode 0555, which refuses the
// writes of any user but root (so a test calls Run first). It is made writable again when
// the test ends, so that the test's own cleanup can remove it.
func ReadOnlyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	return dir
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
