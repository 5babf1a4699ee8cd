package integration

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/freeport"
	"github.com/cairnstore/cairn/internal/retry"
)

// previousRelease is the commit the rolling-upgrade test starts its cluster from. Cairn has
// no release tags yet; this is the last commit CI accepted before the work of issue 17
// (principals and producers, quotas, workbench delete and purge, backup holds, command
// forwarding between nodes). Move it forward to each release's commit.
const previousRelease = "41411e4d2eb4d7c47ab3037c0c80ca071d5303cc"

// Bounds of the upgrade test; generous, they only turn a hang into a failure.
const (
	upgradeWriteBound  = 30 * time.Second // one write, retried on retryable answers
	upgradeCatchUp     = 90 * time.Second // a restarted node's replicas catch up
	upgradeBuildBound  = 10 * time.Minute // building the previous release
	upgradeWritesPerUp = 100              // writes acknowledged between two steps
)

// releaseBins caches the binaries buildRelease built, by commit, for the test binary's
// run (they live next to cairnBin and go with it).
var releaseBins sync.Map // commit → path

// buildRelease builds ./cmd/cairn of commit (once per test binary run), from the
// repository the test runs in (git archive, then go build), and returns the binary. It
// skips the test, saying why, when the source has no git history to build from (a
// tarball, or a shallow clone without the commit).
func buildRelease(t *testing.T, commit string) string {
	t.Helper()
	if bin, ok := releaseBins.Load(commit); ok {
		return bin.(string)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("the previous release %s cannot be built: this source tree has no git history (git rev-parse: %v)", commit, err)
	}
	repo := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		shallow, _ := exec.Command("git", "-C", repo, "rev-parse", "--is-shallow-repository").Output()
		if strings.TrimSpace(string(shallow)) == "true" {
			t.Skipf("the previous release %s cannot be built: it is not in this shallow clone", commit)
		}
		t.Fatalf("the previous release %s is not a commit of %s: %v", commit, repo, err)
	}
	src := filepath.Join(t.TempDir(), "src")
	archive := exec.Command("git", "-C", repo, "archive", "--format=tar", commit)
	out, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Start(); err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	untarErr := untar(out, src)
	if err := archive.Wait(); err != nil || untarErr != nil {
		t.Fatalf("git archive %s: %v, %v: %s", commit, err, untarErr, stderr.String())
	}
	bin := filepath.Join(filepath.Dir(cairnBin), "cairn-"+commit[:7])
	ctx, cancel := context.WithTimeout(t.Context(), upgradeBuildBound)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/cairn")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	build.WaitDelay = 5 * time.Second
	start := time.Now()
	b, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("go build of the previous release %s: %v\n%s", commit, err, b)
	}
	t.Logf("built the previous release %s in %v", commit[:7], time.Since(start).Round(time.Millisecond))
	releaseBins.Store(commit, bin)
	return bin
}

// untar unpacks a tar stream of regular files and directories into dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if name != filepath.Clean(dir) && !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			err = writeFileFrom(name, tr, os.FileMode(h.Mode)&0o755|0o600)
		}
		if err != nil {
			return err
		}
	}
}

func writeFileFrom(name string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// upgradeLoad is writers that PUT files through every node of a cluster, each write under
// its own Idempotency-Key and retried (through the next node) on retryable answers, and
// that remember what was acknowledged and every answer that was not retryable.
type upgradeLoad struct {
	agents []string

	mu      sync.Mutex
	urls    []string          // the nodes' client URLs (fixed ports: valid across restarts)
	acked   map[string]string // agent/path → body
	errs    []string          // non-retryable answers and writes never acknowledged
	ackN    atomic.Int64
	retried atomic.Int64 // retryable answers met
	longest atomic.Int64 // the longest time from a write's first attempt to its acknowledgement, ns
	stop    chan struct{}
	wg      sync.WaitGroup
	client  *http.Client
}

func startUpgradeLoad(nodes []*framework.Process, agents []string, writers int) *upgradeLoad {
	l := &upgradeLoad{agents: agents, acked: map[string]string{}, stop: make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Second}}
	for _, s := range nodes {
		l.urls = append(l.urls, s.URL)
	}
	for w := range writers {
		l.wg.Add(1)
		go l.writer(w)
	}
	return l
}

// retryable reports whether an answer says "try again" (docs/architecture.md#replication-and-placement): no answer at all
// (the node is down), a 503, or an error envelope marked retryable.
func retryable(code int, body []byte) bool {
	return code == 0 || code == http.StatusServiceUnavailable || strings.Contains(string(body), `"retryable":true`)
}

func (l *upgradeLoad) writer(w int) {
	defer l.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		agent := l.agents[(w+i)%len(l.agents)]
		name := fmt.Sprintf("input/w%d/f%05d", w, i)
		body := fmt.Sprintf("writer %d write %d\n", w, i)
		if i%4 == 0 { // every fourth body is large enough to go to the object store
			body += strings.Repeat(fmt.Sprintf("%d-%d ", w, i), 4096)
		}
		key := fmt.Sprintf("upgrade-%d-%d", w, i)
		began := time.Now()
		deadline := began.Add(upgradeWriteBound)
		var last string
		for attempt := 0; ; attempt++ {
			l.mu.Lock()
			base := l.urls[(w+i+attempt)%len(l.urls)]
			l.mu.Unlock()
			code, b := l.put(fileURL(base, agent, "w", name), body, key)
			if code/100 == 2 {
				l.mu.Lock()
				l.acked[agent+"/"+name] = body
				l.mu.Unlock()
				l.ackN.Add(1)
				for took := int64(time.Since(began)); ; {
					if cur := l.longest.Load(); took <= cur || l.longest.CompareAndSwap(cur, took) {
						break
					}
				}
				break
			}
			last = fmt.Sprintf("PUT %s/%s through %s (attempt %d): %d %s", agent, name, base, attempt+1, code, b)
			if !retryable(code, b) || time.Now().After(deadline) {
				if retryable(code, b) {
					last = fmt.Sprintf("not acknowledged within %v of retries; last: %s", upgradeWriteBound, last)
				}
				l.mu.Lock()
				l.errs = append(l.errs, last)
				l.mu.Unlock()
				break
			}
			l.retried.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (l *upgradeLoad) put(u, body, key string) (int, []byte) {
	req, _ := http.NewRequest(http.MethodPut, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Idempotency-Key", key)
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, b
}

// waitAcks waits until n more writes were acknowledged than when it was called.
func (l *upgradeLoad) waitAcks(t *testing.T, n int64, what string) {
	t.Helper()
	from := l.ackN.Load()
	retry.Within(t, 2*upgradeWriteBound, fmt.Sprintf("%d writes acknowledged %s", n, what), func() error {
		if got := l.ackN.Load() - from; got < n {
			return fmt.Errorf("%d acknowledged", got)
		}
		return nil
	})
}

// snapshot returns a copy of the acknowledged writes and the errors so far.
func (l *upgradeLoad) snapshot() (map[string]string, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	acked := make(map[string]string, len(l.acked))
	for k, v := range l.acked {
		acked[k] = v
	}
	return acked, append([]string(nil), l.errs...)
}

func (l *upgradeLoad) halt() { close(l.stop); l.wg.Wait() }

// readBack reads every acknowledged write through every running node.
func readBack(t *testing.T, nodes []*framework.Process, acked map[string]string, when string) {
	t.Helper()
	for _, s := range nodes {
		if !s.Running() {
			continue
		}
		for k, want := range acked {
			agent, name, _ := strings.Cut(k, "/")
			code, b := clusterDo(http.MethodGet, fileURL(s.URL, agent, "w", name), nil, upgradeWriteBound)
			if code != http.StatusOK || string(b) != want {
				t.Fatalf("%s: read %s through %s: %d %.300q, want the acknowledged body (%d bytes)", when, k, s.URL, code, b, len(want))
			}
		}
	}
}

// caughtUp waits until every shard has a leader with three voters and node s applied, on
// every shard, at least what that leader had applied when the wait began.
func caughtUp(t *testing.T, nodes []*framework.Process, s *framework.Process, shards int) {
	t.Helper()
	for id := range shards {
		leader := shardLeader(t, nodes, id, 3)
		metric := fmt.Sprintf("cairn_shard_applied_version{shard=\"%d\"}", id)
		want := metricValue(t, leader, metric)
		retry.Within(t, upgradeCatchUp, fmt.Sprintf("the replica of shard %d on %s catches up", id, s.URL), func() error {
			if got := metricValue(t, s, metric); got < want {
				return fmt.Errorf("applied version %v, the leader had %v", got, want)
			}
			return nil
		})
	}
}

// TestRollingUpgradeFromPreviousRelease starts a 3-node cluster (2 shards, replication 3)
// on the binary of previousRelease, built from git here; writers PUT files through every
// node while each node in turn is stopped with SIGTERM and started again on its data
// directory and ports with the binary under test. No write may meet an answer other than
// success or a retryable one, and every acknowledged write reads back through every node,
// while the versions are mixed and after the upgrade.
func TestRollingUpgradeFromPreviousRelease(t *testing.T) {
	const shards = 2
	nodes := startReleaseCluster(t, buildRelease(t, previousRelease), shards)
	agents := []string{"u1", "u2", "u3", "u4"} // enough to land on both shards
	for _, a := range agents {
		if code, b := clusterDo(http.MethodPut, nodes[0].URL+"/v1/agents/"+a+"/workbenches/w", nil, 60*time.Second); code/100 != 2 && code != http.StatusConflict {
			t.Fatalf("create workbench of %s on the previous release: %d %s", a, code, b)
		}
	}
	for i := range 3 {
		caughtUp(t, nodes, nodes[i], shards)
	}

	load := startUpgradeLoad(nodes, agents, 4)
	defer func() {
		select {
		case <-load.stop:
		default:
			load.halt()
		}
	}()
	load.waitAcks(t, upgradeWritesPerUp, "on the previous release")

	for i, s := range nodes {
		upgradeNode(t, nodes, i, shards)
		if got := s.URL; got != load.urls[i] {
			t.Fatalf("node %d came back at %s, not at %s", i, got, load.urls[i])
		}
		load.waitAcks(t, upgradeWritesPerUp, fmt.Sprintf("after node %d runs the new release", i))
		acked, errs := load.snapshot()
		if len(errs) > 0 {
			t.Fatalf("after node %d was upgraded: %d writes failed with an answer that is not retryable; first: %s", i, len(errs), errs[0])
		}
		if i < len(nodes)-1 {
			readBack(t, nodes, acked, fmt.Sprintf("with %d of 3 nodes upgraded", i+1))
		}
	}
	load.waitAcks(t, upgradeWritesPerUp, "after the upgrade")
	load.halt()
	acked, errs := load.snapshot()
	for _, e := range errs {
		t.Errorf("write failed: %s", e)
	}
	readBack(t, nodes, acked, "after the upgrade")
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	t.Logf("UPGRADE %d writes acknowledged across the rolling upgrade, each read back through all 3 nodes; %d retryable answers met, the longest write took %v",
		len(acked), load.retried.Load(), time.Duration(load.longest.Load()).Round(time.Millisecond))
}

// upgradeNode stops node i (SIGTERM), starts it again on its data directory and ports
// with the binary under test (and the previous release's history retention), waits until its replicas caught up, and logs which release
// leads each shard.
func upgradeNode(t *testing.T, nodes []*framework.Process, i, shards int) {
	t.Helper()
	s := nodes[i]
	s.Stop()
	s.Bin = cairnBin
	// The previous release prunes superseded versions at once; the new one must prune
	// alike while they share shards (runbook, "Rolling upgrade").
	s.Args = append(s.Args, "--history-versions", "1", "--history-age", "0s")
	s.Restart()
	caughtUp(t, nodes, s, shards)
	var leads []string
	for id := range shards {
		l := shardLeader(t, nodes, id, 3)
		release := "new"
		if l.Bin != cairnBin {
			release = "previous"
		}
		leads = append(leads, fmt.Sprintf("shard %d: %s release (%s)", id, release, l.URL))
	}
	t.Logf("node %d runs the new release; leaders: %s", i, strings.Join(leads, ", "))
}

// startReleaseCluster starts etcd, MinIO and 3 nodes of a cluster (shards shards,
// replication 3) on bin, each on ports of its own that it keeps across restarts.
func startReleaseCluster(t *testing.T, bin string, shards int) []*framework.Process {
	t.Helper()
	st := framework.StartStores(t)
	st.ExportCredentials(t)
	common := st.ClusterArgs(shards)
	var nodes []*framework.Process
	for i := range 3 {
		// Fixed ports: the upgraded node comes back where it was, as an operator's would.
		ports := []string{"--listen", freeport.Addr(t), "--admin-listen", freeport.Addr(t),
			"--peer-listen", freeport.Addr(t)}
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("n%d", i))
		nodes = append(nodes, framework.StartProcess(t, bin, dir, append(common, ports...)...))
	}
	return nodes
}

// bounce stops node i (SIGTERM: it hands its leaderships over) and starts it again on the
// same binary, data directory and ports, then waits until its replicas caught up.
func bounce(t *testing.T, nodes []*framework.Process, i, shards int) {
	t.Helper()
	nodes[i].Stop()
	nodes[i].Restart()
	caughtUp(t, nodes, nodes[i], shards)
}
