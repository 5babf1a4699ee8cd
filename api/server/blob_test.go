package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/s3"
	"github.com/cairnstore/cairn/blob/s3/s3test"
	"github.com/cairnstore/cairn/ops"
)

// testCreds are the credentials of every s3test server.
var testCreds = ops.Credentials{S3AccessKey: s3test.AccessKey, S3SecretKey: s3test.SecretKey}

// s3Config is testConfig with its blobs in bucket/prefix on srv.
func s3Config(t *testing.T, srv *s3test.Server, bucket, prefix string) ops.Config {
	cfg := testConfig(t)
	cfg.Blob = "s3://" + bucket
	if prefix != "" {
		cfg.Blob += "/" + prefix
	}
	cfg.S3Endpoint = "http://" + srv.Endpoint
	return cfg
}

// openReady opens a node on cfg, waits until it is ready and closes it when t ends.
func openReady(tb testing.TB, cfg ops.Config, creds ops.Credentials) *Node {
	tb.Helper()
	return openReadyLogged(tb, cfg, creds, nil)
}

// openRefused fails the test unless Open refuses cfg with an *ops.ConfigError naming
// field; a node that opens all the same is closed before the test fails.
func openRefused(t *testing.T, cfg ops.Config, creds ops.Credentials, field string) {
	t.Helper()
	n, err := Open(t.Context(), cfg, creds, nil)
	if err == nil {
		n.Close()
		t.Fatalf("the node opened; want a *ops.ConfigError about %s", field)
	}
	var ce *ops.ConfigError
	if !errors.As(err, &ce) || ce.Field != field {
		t.Fatalf("Open: %v, want a *ops.ConfigError about %s", err, field)
	}
}

// openReadyLogged is openReady with the node's logger (nil: slog.Default()). A node that
// does not open or does not become ready fails the test.
func openReadyLogged(tb testing.TB, cfg ops.Config, creds ops.Credentials, log *slog.Logger) *Node {
	tb.Helper()
	n, err := Open(tb.Context(), cfg, creds, log)
	if err != nil {
		tb.Fatalf("open the node: %v", err)
	}
	tb.Cleanup(func() { n.Close() })
	if err := n.WaitReady(tb.Context()); err != nil {
		tb.Fatalf("the node did not become ready: %v", err)
	}
	return n
}

// do sends one request to h and returns the status and body.
func do(t *testing.T, h http.Handler, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// putFile creates workbench w1 of agent demo and writes body to input/<name> over REST.
func putFile(t *testing.T, h http.Handler, name string, body []byte) {
	t.Helper()
	if code, b := do(t, h, http.MethodPut, "/v1/agents/demo/workbenches/w1", nil); code/100 != 2 {
		t.Fatalf("create workbench: %d %s", code, b)
	}
	if code, b := do(t, h, http.MethodPut, "/v1/agents/demo/workbenches/w1/files/input/"+name, body); code/100 != 2 {
		t.Fatalf("put %s: %d %s", name, code, b)
	}
}

func getFile(t *testing.T, h http.Handler, name string) []byte {
	t.Helper()
	code, b := do(t, h, http.MethodGet, "/v1/agents/demo/workbenches/w1/files/input/"+name, nil)
	if code != http.StatusOK {
		t.Fatalf("get %s: %d %s", name, code, b)
	}
	return b
}

func randomBody(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{42}).Read(b)
	return b
}

// bucketObjects lists every object name in bucket.
func bucketObjects(t *testing.T, srv *s3test.Server, bucket string) []string {
	t.Helper()
	var names []string
	for oi := range srv.Client(t).ListObjectsIter(t.Context(), bucket, minio.ListObjectsOptions{Recursive: true}) {
		if oi.Err != nil {
			t.Fatalf("list %s: %v", bucket, oi.Err)
		}
		names = append(names, oi.Key)
	}
	return names
}

func TestS3BlobStoreHoldsBodiesUnderTheDesignKeyLayout(t *testing.T) {
	srv := s3test.Start(t)
	bucket := s3test.Bucket()
	cfg := s3Config(t, srv, bucket, "tenant/a")
	n := openReady(t, cfg, testCreds)

	body := randomBody(64 << 10) // above the inline threshold: one object
	putFile(t, n.Handler(), "data.bin", body)

	names := bucketObjects(t, srv, bucket)
	if len(names) != 1 {
		t.Fatalf("bucket holds %q, want one object", names)
	}
	// docs/architecture.md#blob-storage-and-garbage-collection: <prefix>/roots/<root-uid>/blobs/<aa>/<sha256-hex>.
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	layout := regexp.MustCompile(`^tenant/a/roots/[a-z0-9]{1,64}/blobs/` + h[:2] + `/` + h + `$`)
	if !layout.MatchString(names[0]) {
		t.Fatalf("object %q does not follow <prefix>/roots/<root-uid>/blobs/<aa>/<sha256-hex> for digest %s", names[0], h)
	}
	if got := getFile(t, n.Handler(), "data.bin"); !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(body))
	}
	_, metrics := do(t, n.Handler(), http.MethodGet, "/metrics", nil)
	for _, want := range []string{"cairn_blob_put_objects_total 1", "cairn_blob_put_bytes_total 65536", "cairn_blob_get_objects_total 1"} {
		if !bytes.Contains(metrics, []byte(want+"\n")) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// The data outlives the process: a new node on the same data dir and bucket reads it.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2 := openReady(t, cfg, testCreds)
	if got := getFile(t, n2.Handler(), "data.bin"); !bytes.Equal(got, body) {
		t.Fatal("after a restart the body reads back different")
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "blobs")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an s3 node created the local blob directory: %v", err)
	}
}

func TestS3MissingBucketFailsTheStartWhenCreationIsOff(t *testing.T) {
	srv := s3test.Start(t)
	bucket := s3test.Bucket()
	cfg := s3Config(t, srv, bucket, "")
	cfg.S3CreateBucket = false
	_, err := Open(t.Context(), cfg, testCreds, nil)
	if !errors.Is(err, s3.ErrBucketMissing) {
		t.Fatalf("Open = %v, want s3.ErrBucketMissing", err)
	}
	for _, want := range []string{bucket, "--s3-create-bucket", srv.Endpoint} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if exists, err := srv.Client(t).BucketExists(t.Context(), bucket); err != nil || exists {
		t.Fatalf("BucketExists = %v, %v; the start must not create the bucket", exists, err)
	}
}

func TestS3BucketIsCreatedByDefault(t *testing.T) {
	srv := s3test.Start(t)
	bucket := s3test.Bucket()
	openReady(t, s3Config(t, srv, bucket, ""), testCreds)
	if exists, err := srv.Client(t).BucketExists(t.Context(), bucket); err != nil || !exists {
		t.Fatalf("BucketExists = %v, %v; the start should have created the bucket", exists, err)
	}
}

func TestS3WrongCredentialsFailTheStartWithoutShowingThem(t *testing.T) {
	srv := s3test.Start(t)
	cfg := s3Config(t, srv, s3test.Bucket(), "")
	wrong := ops.Credentials{S3AccessKey: s3test.AccessKey, S3SecretKey: "not-the-secret-xyzzy"}
	_, err := Open(t.Context(), cfg, wrong, nil)
	if !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("Open = %v, want an error wrapping blob.ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "xyzzy") {
		t.Fatalf("error %q shows the secret", err)
	}
	// The failed start released the data directory.
	cfg.Blob, cfg.S3Endpoint = "dir", ""
	openReady(t, cfg, ops.Credentials{})
}

func TestS3UnreachableEndpointFailsTheStart(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := testConfig(t)
	cfg.Blob, cfg.S3Endpoint = "s3://cairn", "http://"+addr
	_, err = Open(t.Context(), cfg, testCreds, nil)
	if !errors.Is(err, blob.ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Open = %v, want an unavailable error naming the endpoint", err)
	}
}

func TestDirURLPutsBlobsAtItsPath(t *testing.T) {
	cfg := testConfig(t)
	blobs := filepath.Join(t.TempDir(), "elsewhere")
	cfg.Blob = "dir://" + blobs
	n := openReady(t, cfg, ops.Credentials{})
	body := randomBody(64 << 10)
	putFile(t, n.Handler(), "data.bin", body)
	var files []string
	filepath.WalkDir(blobs, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	sum := sha256.Sum256(body)
	if len(files) != 1 || filepath.Base(files[0]) != hex.EncodeToString(sum[:]) {
		t.Fatalf("blob directory holds %q, want the one blob", files)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "blobs")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the default blob directory was created: %v", err)
	}
	if got := getFile(t, n.Handler(), "data.bin"); !bytes.Equal(got, body) {
		t.Fatal("read back differs")
	}
}
