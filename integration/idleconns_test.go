package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// procFDs counts the open descriptors of process pid (/proc/<pid>/fd).
func procFDs(t testing.TB, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// procRSS reads VmRSS of process pid in KiB.
func procRSS(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// testIdleConnections opens conns idle connections (that never send a byte) to a server
// capped at maxConns and checks that the server holds at most maxConns of them open
// (measured from /proc), that it closes silent ones (read-header timeout), and that a new
// client is served once they are gone. The figures go to the test log.
func testIdleConnections(t *testing.T, conns, maxConns int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		if room := int(lim.Cur) - 256; conns > room {
			t.Logf("the descriptor limit (%d) allows %d client connections, not %d", lim.Cur, room, conns)
			conns = room
		}
	}
	srv := framework.StartProcess(t, cairnBin, t.TempDir(), "--max-connections", strconv.Itoa(maxConns),
		"--max-connections-per-client", strconv.Itoa(maxConns), "--read-header-timeout", "500ms")
	pid := srv.Pid()
	baseFDs, baseRSS := procFDs(t, pid), procRSS(t, pid)
	addr := strings.TrimPrefix(srv.URL, "http://")

	var (
		mu     sync.Mutex
		open   []net.Conn
		failed int
	)
	work := make(chan struct{})
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{Timeout: 2 * time.Second}
			for range work {
				c, err := d.Dial("tcp", addr)
				mu.Lock()
				if err != nil {
					failed++
				} else {
					open = append(open, c)
				}
				mu.Unlock()
			}
		}()
	}
	for range conns {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	fds, rss := procFDs(t, pid), procRSS(t, pid)
	t.Logf("IDLE conns=%d dialled=%d refused_or_timed_out=%d server_fds=%d (before %d) server_rss_kib=%d (before %d) cap=%d",
		conns, len(open), failed, fds, baseFDs, rss, baseRSS, maxConns)
	if fds > baseFDs+maxConns+16 {
		t.Errorf("the server holds %d descriptors with %d idle connections, more than its cap of %d connections allows (%d before)", fds, len(open), maxConns, baseFDs)
	}
	// A new connection (not a kept-alive one of earlier requests): it waits behind the
	// idle ones until the read-header timeout has closed enough of them.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	retry.Within(t, 2*time.Minute, "a new client is served beside the idle connections", func() error {
		resp, err := hc.Get(srv.URL + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	t.Logf("IDLE after %v: a new client was served; server_fds=%d server_rss_kib=%d", time.Since(start), procFDs(t, pid), procRSS(t, pid))
}

func TestIdleConnectionsAreCappedAndClosed(t *testing.T) {
	testIdleConnections(t, 400, 64)
}
