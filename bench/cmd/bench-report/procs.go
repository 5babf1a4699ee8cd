//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
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

// waitHTTP polls url until it answers 200 (and, for MinIO, is not "offline"), the process
// exits, or readyTimeout passes.
func (p *proc) waitHTTP(ctx context.Context, url string) error {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && resp.Header.Get("X-Minio-Server-Status") != "offline" {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready: %v (log: %s)", p.name, p.err, p.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s within %v (log: %s)", p.name, url, readyTimeout, p.log)
		}
	}
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
	p, err = start("minio", filepath.Join(dir, "minio.log"), []string{
		"MINIO_ROOT_USER=" + minioUser, "MINIO_ROOT_PASSWORD=" + minioPassword, "MINIO_BROWSER=off", "MINIO_UPDATE=off",
	}, bin, "server", filepath.Join(dir, "minio-data"), "--address", addr, "--console-address", console)
	if err != nil {
		return nil, "", err
	}
	if err := p.waitHTTP(ctx, "http://"+addr+"/minio/health/live"); err != nil {
		p.stop()
		return nil, "", err
	}
	return p, "http://" + addr, nil
}

// startCairn starts `cairn serve` on a fresh data directory with extra flags, serving
// pprof on a loopback port when the binary was built with -tags pprof, and waits until
// /readyz answers.
func startCairn(ctx context.Context, name, bin, dir string, env []string, flags ...string) (p *proc, url, pprofAddr string, err error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	pprofAddr, err = freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	args := append([]string{"serve", "--data-dir", filepath.Join(dir, name+"-data"), "--listen", addr, "--log-level", "warn"}, flags...)
	p, err = start(name, filepath.Join(dir, name+".log"), append(env, "CAIRN_PPROF_LISTEN="+pprofAddr), bin, args...)
	if err != nil {
		return nil, "", "", err
	}
	if err := p.waitHTTP(ctx, "http://"+addr+"/readyz"); err != nil {
		p.stop()
		return nil, "", "", err
	}
	return p, "http://" + addr, pprofAddr, nil
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
