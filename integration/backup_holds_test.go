package integration

import (
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
)

// stallingListener accepts connections and never answers them: an object store that
// hangs. accepted is closed at the first connection.
type stallingListener struct {
	ln       net.Listener
	accepted chan struct{}
	mu       sync.Mutex
	conns    []net.Conn
}

func newStallingListener(t *testing.T) *stallingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stallingListener{ln: ln, accepted: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var once sync.Once
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			once.Do(func() { close(s.accepted) })
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			c.Close()
		}
	})
	return s
}

// Issue 25, finding 10: `cairn admin backup` killed with SIGKILL mid-backup leaves its
// hold on the node; `backup holds` lists it and `backup release --id` releases it.
func TestAHoldABackupKilledMidStreamLeavesIsListedAndReleased(t *testing.T) {
	srv := framework.StartProcess(t, cairnBin, t.TempDir())
	if r := doHTTP(t, "PUT", fileURL(srv.URL, "demo", "wb", "outputs/big.bin"), strings.NewReader(strings.Repeat("a body above the inline bound. ", 400))); r.status != 201 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}

	// The backup's destination hangs, so the CLI is mid-backup (its hold placed, its
	// stream open) when the first part reaches the destination; then it is killed.
	dest := newStallingListener(t)
	cmd := exec.Command(cairnRaceBin, "admin", "backup", "--admin-server", srv.AdminURL, "--id", "killed-1",
		"--to", "s3://backups/cairn", "--s3-endpoint", "http://"+dest.ln.Addr().String())
	cmd.Env = framework.ChildEnv()
	proc, err := framework.StartChild(cmd)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-dest.accepted:
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
