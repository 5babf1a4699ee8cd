package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/internal/freeport"
	"github.com/cairnstore/cairn/internal/ready"
)

const (
	// EnvBinary names the environment variable holding the MinIO server binary.
	EnvBinary = "CAIRN_MINIO_BIN"

	// AccessKey and SecretKey are the root credentials of every test server.
	AccessKey = "cairntest"
	SecretKey = "cairntest-secret"

	// readyTimeout bounds the wait for a started server to answer its health check.
	readyTimeout = 30 * time.Second
	// stopTimeout bounds the wait for a killed server to exit.
	stopTimeout = 10 * time.Second
	// startTries is how often Start picks new ports when MinIO could not bind its own.
	startTries = 3
)

// Server is a MinIO server process. Its methods must be called from the test goroutine.
type Server struct {
	// Endpoint is the S3 API address, "127.0.0.1:<port>". It stays the same across Stop
	// and Restart.
	Endpoint string

	tb          testing.TB
	bin         string
	dataDir     string
	logPath     string
	consoleAddr string
	proc        *process // nil while stopped
}

// process is one run of the server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd.Wait returned
	err  error         // cmd.Wait's result, set before done is closed
}

// Start starts a MinIO server on free loopback ports with an empty data directory under
// tb.TempDir and waits until it is live. It stops the server when tb ends, and prints the
// server's log if tb failed.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{
		tb:      tb,
		bin:     Binary(tb),
		dataDir: filepath.Join(tb.TempDir(), "data"),
		logPath: filepath.Join(tb.TempDir(), "minio.log"),
	}
	tb.Cleanup(func() {
		s.Stop()
		if tb.Failed() {
			if log, err := os.ReadFile(s.logPath); err == nil {
				tb.Logf("MinIO log (%s):\n%s", s.logPath, tail(log, 8<<10))
			}
		}
	})
	var err error
	for range startTries {
		s.Endpoint, s.consoleAddr = freeport.Addr(tb), freeport.Addr(tb)
		if err = s.start(); err == nil {
			return s
		}
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	tb.Fatalf("s3test: start MinIO: %v", err)
	return nil
}

// Stop kills the server (SIGKILL, as a crash would) and waits for it to exit. The data
// directory stays; Restart serves it again. Stop of a stopped server does nothing.
func (s *Server) Stop() {
	s.tb.Helper()
	if s.proc == nil {
		return
	}
	p := s.proc
	s.proc = nil
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		s.tb.Errorf("s3test: MinIO (pid %d) did not exit within %v of SIGKILL", p.cmd.Process.Pid, stopTimeout)
	}
}

// Pause stops the server process with SIGSTOP: it keeps its sockets, accepts
// connections (the kernel does) and answers nothing, as a hung object store would. Resume
// continues it.
func (s *Server) Pause() {
	s.tb.Helper()
	if s.proc == nil {
		s.tb.Fatalf("s3test: Pause of a stopped server")
	}
	if err := s.proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.tb.Fatalf("s3test: SIGSTOP MinIO: %v", err)
	}
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() {
	s.tb.Helper()
	if s.proc == nil {
		s.tb.Fatalf("s3test: Resume of a stopped server")
	}
	if err := s.proc.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.tb.Fatalf("s3test: SIGCONT MinIO: %v", err)
	}
}

// Restart starts a stopped server again on the same data directory and address, and waits
// until it is live.
func (s *Server) Restart() {
	s.tb.Helper()
	if s.proc != nil {
		s.tb.Fatalf("s3test: Restart of a running server")
	}
	var err error
	deadline := time.Now().Add(readyTimeout)
	for {
		// The old process's listening socket may linger for a moment.
		if err = s.start(); err == nil || !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		s.tb.Fatalf("s3test: restart MinIO: %v", err)
	}
}

// Config returns the s3.Config of a store in bucket on this server: DefaultConfig with the
// server's endpoint and credentials, and retries short enough for tests (3 attempts, a few
// milliseconds apart).
func (s *Server) Config(bucket string) s3.Config {
	c := s3.DefaultConfig()
	c.Endpoint = s.Endpoint
	c.Bucket = bucket
	c.AccessKey = AccessKey
	c.SecretKey = SecretKey
	c.Retry = s3.RetryConfig{MaxAttempts: 3, BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond}
	return c
}

// Open opens a store with cfg and closes it when tb ends.
func Open(tb testing.TB, cfg s3.Config) *s3.Store {
	tb.Helper()
	st, err := s3.Open(tb.Context(), cfg)
	if err != nil {
		tb.Fatalf("s3.Open: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// Client returns a MinIO client of this server with the root credentials, for a test that
// looks at or changes objects behind a Store's back. Its idle connections close when tb
// ends.
func (s *Server) Client(tb testing.TB) *minio.Client {
	tb.Helper()
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(tr.CloseIdleConnections)
	c, err := minio.New(s.Endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(AccessKey, SecretKey, ""),
		Transport: tr,
		Region:    s3.DefaultRegion,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// FlipPayloadByte rewrites object name in bucket with the middle byte of its payload
// inverted and its Cairn metadata (s3.MetaEncoding, s3.MetaSize) kept, as bit rot or
// tampering would leave it: only reading the payload can tell.
func FlipPayloadByte(tb testing.TB, c *minio.Client, bucket, name string) {
	tb.Helper()
	payload := ObjectPayload(tb, c, bucket, name)
	oi, err := c.StatObject(tb.Context(), bucket, name, minio.StatObjectOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	payload[len(payload)/2] ^= 0xff
	meta := map[string]string{s3.MetaEncoding: oi.UserMetadata[s3.MetaEncoding], s3.MetaSize: oi.UserMetadata[s3.MetaSize]}
	if _, err := c.PutObject(tb.Context(), bucket, name, bytes.NewReader(payload), int64(len(payload)),
		minio.PutObjectOptions{UserMetadata: meta}); err != nil {
		tb.Fatalf("s3test: rewrite %s: %v", name, err)
	}
}

// ObjectPayload returns the bytes of object name in bucket as the object store holds them.
func ObjectPayload(tb testing.TB, c *minio.Client, bucket, name string) []byte {
	tb.Helper()
	obj, err := c.GetObject(tb.Context(), bucket, name, minio.GetObjectOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	payload, err := io.ReadAll(obj)
	obj.Close()
	if err != nil {
		tb.Fatalf("s3test: read %s: %v", name, err)
	}
	return payload
}

var bucketSeq atomic.Uint64

// Bucket returns a bucket name not used before in this test process.
func Bucket() string {
	return fmt.Sprintf("cairn-test-%d-%d", os.Getpid(), bucketSeq.Add(1))
}

var errAddrInUse = errors.New("address already in use")

// start runs the server and waits for it to be live.
func (s *Server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- s3test: starting %s server %s --address %s --console-address %s\n",
		s.bin, s.dataDir, s.Endpoint, s.consoleAddr)
	cmd := exec.Command(s.bin, "server", s.dataDir, "--address", s.Endpoint, "--console-address", s.consoleAddr)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+AccessKey,
		"MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.proc = p
	if err := s.waitLive(p); err != nil {
		s.Stop()
		if log, rerr := os.ReadFile(s.logPath); rerr == nil && bytes.Contains(log, []byte("address already in use")) {
			return fmt.Errorf("%w: %v", errAddrInUse, err)
		}
		return err
	}
	return nil
}

// waitLive waits until MinIO is live (internal/ready: 200 without
// "X-Minio-Server-Status: offline", sent while the object layer still starts), the process
// exits, or readyTimeout passes.
func (s *Server) waitLive(p *process) error {
	err := ready.Wait(context.Background(), "http://"+s.Endpoint+"/minio/health/live", p.done, readyTimeout, 25*time.Millisecond)
	switch {
	case errors.Is(err, ready.ErrExited):
		return fmt.Errorf("MinIO exited before it was live: %v (log: %s)", p.err, s.logPath)
	case err != nil:
		return fmt.Errorf("MinIO %v (log: %s)", err, s.logPath)
	}
	return nil
}

var binary struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of the MinIO server binary: $CAIRN_MINIO_BIN, or else what
// scripts/minio.sh prints (building it if needed, once per test process). It fails tb when
// neither works.
func Binary(tb testing.TB) string {
	tb.Helper()
	binary.once.Do(func() { binary.path, binary.err = findBinary() })
	if binary.err != nil {
		tb.Fatalf("s3test: MinIO server binary: %v", binary.err)
	}
	return binary.path
}

func findBinary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s is not an executable file", EnvBinary, p)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("%s is not set and scripts/minio.sh was not found: %w", EnvBinary, err)
	}
	script := filepath.Join(root, "scripts", "minio.sh")
	// A first build takes minutes; bound it well below go test's default timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s is not set and %s failed: %v\n%s", EnvBinary, script, err, tail(stderr.Bytes(), 4<<10))
	}
	p := strings.TrimSpace(stdout.String())
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s printed %q: %w", script, p, err)
	}
	return p, nil
}

// moduleRoot returns the directory of the go.mod of module github.com/cairnstore/cairn,
// searching up from the working directory (a test's is its package directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(mod, []byte("module github.com/cairnstore/cairn\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/cairnstore/cairn above the working directory")
		}
		dir = parent
	}
}

// tail returns at most the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
