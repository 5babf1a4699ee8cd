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

// startUpgradeLoad starts writers that PUT files through every node of a cluster (at
// urls: fixed ports, valid across restarts), each write under its own Idempotency-Key and
// retried (through the next node) on retryable answers for up to upgradeWriteBound; the
// Load remembers what was acknowledged and every answer that was not retryable.
func startUpgradeLoad(t *testing.T, urls, agents []string, writers int) *framework.Load {
	return framework.StartLoad(t, framework.LoadOptions{
		Writers: writers,
		Pause:   20 * time.Millisecond,
		Next: func(w, i int) framework.Write {
			body := fmt.Sprintf("writer %d write %d\n", w, i)
			if i%4 == 0 { // every fourth body is large enough to go to the object store
				body += strings.Repeat(fmt.Sprintf("%d-%d ", w, i), 4096)
			}
			return framework.Write{Agent: agents[(w+i)%len(agents)], Workbench: "w", Path: fmt.Sprintf("input/w%d/f%05d", w, i),
				Body: body, Key: fmt.Sprintf("upgrade-%d-%d", w, i)}
		},
		Target:   func(w, i, attempt int) (string, bool) { return urls[(w+i+attempt)%len(urls)], true },
		Patience: upgradeWriteBound,
		Retry:    retryable,
	})
}

// retryable reports whether an answer says "try again" (docs/architecture.md#replication-and-placement): no answer at all
// (the node is down), a 503, or an error envelope marked retryable.
func retryable(code int, body []byte) bool {
	return code == 0 || code == http.StatusServiceUnavailable || strings.Contains(string(body), `"retryable":true`)
}

// waitAcks waits until n more writes of load were acknowledged than when it was called.
func waitAcks(t *testing.T, load *framework.Load, n int64, what string) {
	t.Helper()
	from := load.Acked()
	retry.Within(t, 2*upgradeWriteBound, fmt.Sprintf("%d writes acknowledged %s", n, what), func() error {
		if got := load.Acked() - from; got < n {
			return fmt.Errorf("%d acknowledged", got)
		}
		return nil
	})
}

// ackedBodies returns load's acknowledged writes so far, agent/path → body, and the
// longest time one took from its first try.
func ackedBodies(load *framework.Load) (map[string]string, time.Duration) {
	acked, longest := map[string]string{}, time.Duration(0)
	for _, a := range load.Acks() {
		acked[a.Agent+"/"+a.Path] = a.Body
		longest = max(longest, a.Took)
	}
	return acked, longest
}

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

	var urls []string
	for _, s := range nodes {
		urls = append(urls, s.URL)
	}
	load := startUpgradeLoad(t, urls, agents, 4)
	waitAcks(t, load, upgradeWritesPerUp, "on the previous release")

	for i, s := range nodes {
		upgradeNode(t, nodes, i, shards)
		if got := s.URL; got != urls[i] {
			t.Fatalf("node %d came back at %s, not at %s", i, got, urls[i])
		}
		waitAcks(t, load, upgradeWritesPerUp, fmt.Sprintf("after node %d runs the new release", i))
		acked, _ := ackedBodies(load)
		errs := load.Failures()
		if len(errs) > 0 {
			t.Fatalf("after node %d was upgraded: %d writes failed with an answer that is not retryable; first: %s", i, len(errs), errs[0])
		}
		if i < len(nodes)-1 {
			readBack(t, nodes, acked, fmt.Sprintf("with %d of 3 nodes upgraded", i+1))
		}
	}
	waitAcks(t, load, upgradeWritesPerUp, "after the upgrade")
	load.Stop()
	acked, longest := ackedBodies(load)
	for _, e := range load.Failures() {
		t.Errorf("write failed: %s", e)
	}
	readBack(t, nodes, acked, "after the upgrade")
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	t.Logf("UPGRADE %d writes acknowledged across the rolling upgrade, each read back through all 3 nodes; %d retryable answers met, the longest write took %v",
		len(acked), load.Retried(), longest.Round(time.Millisecond))
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
