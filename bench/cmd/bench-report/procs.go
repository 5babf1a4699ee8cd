//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cairnstore/cairn/internal/ready"
)

// Timeouts of the fixture processes.
const (
	readyTimeout = 90 * time.Second // a process to answer its health check
	stopTimeout  = 15 * time.Second // a process to exit after SIGTERM, before SIGKILL
)

// MinIO credentials of the report's object store (loopback only, discarded after the run).
const (
	minioUser     = "cairnbench"
	minioPassword = "cairnbench-secret"
)

// proc is a child process the report started; stop ends it.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  string
}

// start runs name's command with its output in logPath.
func start(name, logPath string, env []string, bin string, args ...string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group (a Ctrl-C of make reaches the report, which stops it), and
	// killed with the report if the report dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid returns the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM, waits up to stopTimeout, then SIGKILLs.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitHTTP waits until url answers 200 (and, for MinIO, is not "offline";
// internal/ready), the process exits, or readyTimeout passes.
func (p *proc) waitHTTP(ctx context.Context, url string) error {
	err := ready.Wait(ctx, url, p.done, readyTimeout, 50*time.Millisecond)
	switch {
	case errors.Is(err, ready.ErrExited):
		return &startError{msg: fmt.Sprintf("%s exited before it was ready: %v (log: %s)", p.name, p.err, p.log), tail: logTail(p.log)}
	case err != nil:
		return &startError{msg: fmt.Sprintf("%s %v (log: %s)", p.name, err, p.log), tail: logTail(p.log)}
	}
	return nil
}

// startError is a fixture process that did not become ready, with the end of its log:
// the report removes its temporary directory, the log with it, when it stops.
type startError struct {
	msg, tail string
}

func (e *startError) Error() string {
	if e.tail == "" {
		return e.msg
	}
	return e.msg + "; its log ends:\n" + e.tail
}

// portTaken reports whether the process failed because an address it was to listen on
// was taken: a port freeAddr found free was bound by another process before it.
func (e *startError) portTaken() bool { return strings.Contains(e.tail, "address already in use") }

// logTailBytes is how much of a failed process's log its error quotes.
const logTailBytes = 2048

// logTail returns the last logTailBytes of the file at path ("" when it cannot be read).
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > logTailBytes {
		_, _ = f.Seek(st.Size()-logTailBytes, 0)
	}
	b := make([]byte, logTailBytes)
	n, _ := io.ReadFull(f, b)
	return strings.TrimSpace(string(b[:n]))
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startMinIO starts a MinIO server on dir and waits until it is live.
func startMinIO(ctx context.Context, bin, dir string) (p *proc, endpoint string, err error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	console, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	return startLive(ctx, addr, "/minio/health/live", "minio", filepath.Join(dir, "minio.log"), []string{
		"MINIO_ROOT_USER=" + minioUser, "MINIO_ROOT_PASSWORD=" + minioPassword, "MINIO_BROWSER=off", "MINIO_UPDATE=off",
	}, bin, "server", filepath.Join(dir, "minio-data"), "--address", addr, "--console-address", console)
}

// startLive starts bin with args as start does, serving on addr, and waits until
// http://addr+health answers; it returns the process and http://addr, and stops the
// process when it does not become live.
func startLive(ctx context.Context, addr, health, name, logPath string, env []string, bin string, args ...string) (*proc, string, error) {
	p, err := start(name, logPath, env, bin, args...)
	if err != nil {
		return nil, "", err
	}
	if err := p.waitHTTP(ctx, "http://"+addr+health); err != nil {
		p.stop()
		return nil, "", err
	}
	return p, "http://" + addr, nil
}

// startCairn starts `cairn serve` on a fresh data directory with extra flags, serving
// pprof on a loopback port when the binary was built with -tags pprof, and waits until
// /readyz answers.
//
// A process that failed because a port it was given was taken in the meantime
// (startError.portTaken) is started again with other ports, up to startAttempts times.
func startCairn(ctx context.Context, name, bin, dir string, env []string, flags ...string) (p *proc, url, pprofAddr string, err error) {
	for attempt := 1; ; attempt++ {
		p, url, pprofAddr, err = launchCairn(name, bin, dir, env, flags...)
		if err != nil {
			return nil, "", "", err
		}
		err = p.waitHTTP(ctx, url+"/readyz")
		if err == nil {
			return p, url, pprofAddr, nil
		}
		p.stop()
		var se *startError
		if attempt == startAttempts || !errors.As(err, &se) || !se.portTaken() {
			return nil, "", "", err
		}
		say("%s: a port it was given was taken; starting it again on others", name)
	}
}

// startAttempts bounds startCairn's attempts.
const startAttempts = 3

// launchCairn starts `cairn serve` as startCairn does, without waiting for it.
func launchCairn(name, bin, dir string, env []string, flags ...string) (p *proc, url, pprofAddr string, err error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	pprofAddr, err = freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	args := append([]string{"serve", "--data-dir", dataDir(dir, name), "--listen", addr, "--admin-listen", "127.0.0.1:0", "--log-level", "warn"}, flags...)
	p, err = start(name, filepath.Join(dir, name+".log"), append(env, "CAIRN_PPROF_LISTEN="+pprofAddr), bin, args...)
	if err != nil {
		return nil, "", "", err
	}
	return p, "http://" + addr, pprofAddr, nil
}

// dataDir is the data directory of the cairn node name under dir.
func dataDir(dir, name string) string { return filepath.Join(dir, name+"-data") }

// s3Key is an S3 credential of the S3 gateway, as `cairn admin key create --s3 --json`
// prints it.
type s3Key struct {
	AccessKeyID     string `json:"s3_access_key_id"`
	SecretAccessKey string `json:"s3_secret_access_key"`
}

// makeS3Key makes, offline in the data directory of a node not yet started, an API key
// with an S3 credential for agent root "default" (the one `cairn bench` uses) that reads
// and writes.
func makeS3Key(ctx context.Context, bin, dataDir string) (s3Key, error) {
	out, err := exec.CommandContext(ctx, bin, "admin", "key", "create", "--data-dir", dataDir, "--name", "bench-s3",
		"--agent", "default", "--scope", "workspace:read,workspace:write", "--s3", "--json").Output()
	if err != nil {
		return s3Key{}, fmt.Errorf("cairn admin key create --s3: %w", err)
	}
	var k s3Key
	if err := json.Unmarshal(out, &k); err != nil || k.AccessKeyID == "" || k.SecretAccessKey == "" {
		return s3Key{}, fmt.Errorf("cairn admin key create --s3: no S3 credential in its answer (%v)", err)
	}
	return k, nil
}

// hotCacheBytes bounds the segment cache of the hot-read node: more than every file an
// object-get job reads (8 files of 64 MiB).
const hotCacheBytes = 2 << 30

// startRelay starts `cairn bench relay` to the MinIO and waits until MinIO's health check
// answers through it.
func startRelay(ctx context.Context, bin, dir, minioURL string) (*proc, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	return startLive(ctx, addr, "/minio/health/live", "relay", filepath.Join(dir, "relay.log"), nil, bin, "bench", "relay", "--listen", addr, "--target", minioURL)
}

// shardLeader returns the index of the cluster node that leads shard 0 (its /metrics
// shows cairn_shard_leader{shard="0"} 1), retrying until exactly one does or
// readyTimeout passes.
func shardLeader(ctx context.Context, urls []string) (int, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		leaders := []int{}
		for i, u := range urls {
			resp, err := hc.Get(u + "/metrics")
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if sc.Text() == `cairn_shard_leader{shard="0"} 1` {
					leaders = append(leaders, i)
				}
			}
			resp.Body.Close()
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("cluster: %d nodes claim shard 0's leadership after %v, want one", len(leaders), readyTimeout)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Cluster of the report: shards and replicas of `cairn serve --cluster`. One shard: the
// benchmarks use one agent root, so one shard carries all their load whatever the count,
// and with one the report knows which node leads it and measures through a follower too.
const (
	clusterNodes       = 3
	clusterShards      = 1
	clusterReplication = 3
	clusterBucket      = "cairn-cluster"
)

// startCluster starts clusterNodes `cairn serve --cluster` on fresh data directories under
// dir, with the etcd endpoints and the MinIO, waits until every one is ready and a write
// through the first one succeeds, and returns them with their client URLs.
func startCluster(ctx context.Context, bin, dir string, etcd []string, minioURL string) (procs []*proc, urls []string, err error) {
	stopAll := func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
	}
	for i := range clusterNodes {
		peer, err := freeAddr()
		if err != nil {
			stopAll()
			return nil, nil, err
		}
		p, url, _, err := launchCairn(fmt.Sprintf("cairn-node%d", i), bin, dir, minioCreds(),
			"--cluster", "--peer-listen", peer, "--etcd", strings.Join(etcd, ","),
			"--shards", strconv.Itoa(clusterShards), "--replication", strconv.Itoa(clusterReplication),
			"--blob", "s3://"+clusterBucket, "--s3-endpoint", minioURL)
		if err != nil {
			stopAll()
			return nil, nil, err
		}
		procs, urls = append(procs, p), append(urls, url)
	}
	for i, p := range procs {
		if err := p.waitHTTP(ctx, urls[i]+"/readyz"); err != nil {
			stopAll()
			return nil, nil, err
		}
	}
	if err := warmCluster(ctx, procs[0], urls[0]); err != nil {
		stopAll()
		return nil, nil, err
	}
	return procs, urls, nil
}

// warmCluster retries a workbench creation and a file write of the benchmarks' agent
// through url until both succeed (its root's shard has a leader), or readyTimeout passes.
func warmCluster(ctx context.Context, p *proc, url string) error {
	hc := &http.Client{Timeout: 10 * time.Second}
	wb := url + "/v1/agents/default/workbenches/bench-report-warmup"
	deadline := time.Now().Add(readyTimeout)
	for _, step := range []struct {
		url  string
		body string
	}{{wb, ""}, {wb + "/files/input/warmup", "warm"}} {
		for {
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, step.url, strings.NewReader(step.body))
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode/100 == 2 || (step.body == "" && resp.StatusCode == http.StatusConflict) {
					break
				}
			}
			select {
			case <-p.done:
				return fmt.Errorf("%s exited while the cluster warmed up: %v (log: %s)", p.name, p.err, p.log)
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster: PUT %s did not succeed within %v (last: %v; log: %s)", step.url, readyTimeout, err, p.log)
			}
		}
	}
	return nil
}

// etcdReadyPrefix starts the line the etcd-cluster child prints once its members serve.
const etcdReadyPrefix = "etcd endpoints: "

// startEtcd runs this program's etcd-cluster mode (three embedded members, see
// runEtcdCluster) as a child process, so that etcd's CPU and memory are not the load
// generator's, and returns its client endpoints.
func startEtcd(ctx context.Context, dir string) (p *proc, endpoints []string, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	logPath := filepath.Join(dir, "etcd.log")
	p, err = start("etcd", logPath, nil, self, "etcd-cluster", filepath.Join(dir, "etcd-data"))
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		if eps, ok := readEtcdEndpoints(logPath); ok {
			return p, eps, nil
		}
		select {
		case <-p.done:
			return nil, nil, fmt.Errorf("etcd cluster exited before it was ready: %v (log: %s)", p.err, logPath)
		case <-ctx.Done():
			p.stop()
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, nil, fmt.Errorf("etcd cluster not ready within %v (log: %s)", readyTimeout, logPath)
		}
	}
}

func readEtcdEndpoints(logPath string) ([]string, bool) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), etcdReadyPrefix); ok {
			return strings.Split(rest, ","), true
		}
	}
	return nil, false
}
