package integration

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
)

// stallingS3 is an object store that holds no object (a HEAD answers 404, so a backup's
// destination check finds it empty) and never answers a write: a store that hangs once
// the backup writes its first part. stalled is closed at the first write.
type stallingS3 struct {
	url     string
	stalled chan struct{}
}

func newStallingS3(t *testing.T) *stallingS3 {
	t.Helper()
	s := &stallingS3{stalled: make(chan struct{})}
	stop := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead || r.Method == http.MethodGet {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		once.Do(func() { close(s.stalled) })
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // first: the stalled handlers return, then Close
	s.url = srv.URL
	return s
}

// Issue 25, finding 10: `cairn admin backup` killed with SIGKILL mid-backup leaves its
// hold on the node; `backup holds` lists it and `backup release --id` releases it.
func TestAHoldABackupKilledMidStreamLeavesIsListedAndReleased(t *testing.T) {
	srv := framework.StartProcess(t, cairnBin, t.TempDir())
	if r := doHTTP(t, "PUT", fileURL(srv.URL, "demo", "wb", "outputs/big.bin"), strings.NewReader(strings.Repeat("a body above the inline bound. ", 400))); r.status != 201 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}

	// The backup's destination hangs on its first write, so the CLI is mid-backup (its
	// hold placed, its stream open) when the first part reaches the destination; then it
	// is killed.
	dest := newStallingS3(t)
	cmd := exec.Command(cairnRaceBin, "admin", "backup", "--admin-server", srv.AdminURL, "--id", "killed-1",
		"--to", "s3://backups/cairn", "--s3-endpoint", dest.url)
	cmd.Env = framework.ChildEnv()
	proc, err := framework.StartChild(cmd)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-dest.stalled:
	case <-proc.Done():
		t.Fatalf("cairn admin backup ended (%v) before it reached its destination", proc.Err())
	case <-time.After(cliTimeout):
		t.Fatal("cairn admin backup never reached its destination")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.Done():
	case <-time.After(framework.KillTimeout):
		t.Fatal("cairn admin backup did not die after SIGKILL")
	}

	holds := mustCLI(t, cliOptions{}, "admin", "backup", "holds", "--admin-server", srv.AdminURL)
	if !strings.Contains(holds.stdout, "killed-1") {
		t.Fatalf("the killed backup's hold is not listed:\n%s", holds)
	}
	rel := mustCLI(t, cliOptions{}, "admin", "backup", "release", "--admin-server", srv.AdminURL, "--id", "killed-1")
	if !strings.Contains(rel.stdout, "hold released on 1 of 1 shards") {
		t.Fatalf("release:\n%s", rel)
	}
	holds = mustCLI(t, cliOptions{}, "admin", "backup", "holds", "--admin-server", srv.AdminURL)
	if strings.Contains(holds.stdout, "killed-1") {
		t.Fatalf("the released hold is still listed:\n%s", holds)
	}
}
