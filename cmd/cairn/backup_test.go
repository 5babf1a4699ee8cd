package main

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/ops/backup"
)

// backupNode is an embedded node on dataDir (blob store blob, "" for the default
// directory inside it) behind test listeners; stop closes it (also at cleanup).
type backupNode struct {
	url, admin string
	stop       func()
}

func startBackupNode(t *testing.T, dataDir, blob string) *backupNode {
	t.Helper()
	return startNodeWith(t, dataDir, func(cfg *ops.Config) {
		if blob != "" {
			cfg.Blob = blob
		}
	})
}

// startNodeWith is startBackupNode with the default configuration edited by edit.
func startNodeWith(t *testing.T, dataDir string, edit func(*ops.Config)) *backupNode {
	t.Helper()
	cfg := ops.DefaultConfig()
	cfg.DataDir = dataDir
	cfg.Listen = "127.0.0.1:0"
	edit(&cfg)
	n, err := server.Open(t.Context(), cfg, ops.Credentials{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReady(t.Context()); err != nil {
		n.Close()
		t.Fatal(err)
	}
	srv, adm := httptest.NewServer(n.Handler()), httptest.NewServer(n.AdminHandler())
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			srv.Close()
			adm.Close()
			n.Close()
		}
	}
	t.Cleanup(stop)
	return &backupNode{url: srv.URL, admin: adm.URL, stop: stop}
}

// bigBody is a body above the inline limit: it lives in the blob store.
func bigBody(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(p, bytes.Repeat([]byte("a body that is larger than the inline bound. "), 400), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			out = append(out, p)
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// Issue 25, finding 9: the backup of an embedded node on the default --blob dir restores
// its API keys and the bodies whose blobs lived in the lost data directory.
func TestBackupOfAnEmbeddedNodeRestoresItsKeysAndBlobs(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	cli(t, "admin", "key", "create", "--data-dir", data, "--name", "ci-writer", "--agent", "demo", "--scope", "workspace:write")
	big := bigBody(t)
	want, _ := os.ReadFile(big)

	n := startBackupNode(t, data, "")
	cli(t, "put", "--server", n.url, "--agent", "demo", "--workbench", "wb", "outputs/big.bin", big)
	dest := t.TempDir()
	out := cli(t, "admin", "backup", "--admin-server", n.admin, "--to", dest, "--id", "b1")
	if !strings.Contains(out, "API keys: included") || !strings.Contains(out, "blobs: 1 included") {
		t.Errorf("backup output says nothing of the keys and blobs it copied:\n%s", out)
	}
	n.stop()
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}

	out = cli(t, "admin", "restore", "--from", dest, "--data-dir", data)
	if !strings.Contains(out, "API keys: restored") || !strings.Contains(out, "blobs: 1 restored") {
		t.Errorf("restore output:\n%s", out)
	}
	if keys := cli(t, "admin", "key", "list", "--data-dir", data); !strings.Contains(keys, "ci-writer") {
		t.Fatalf("the restored node has lost its API key:\n%s", keys)
	}
	g := startBackupNode(t, data, "")
	if got := cli(t, "cat", "--server", g.url, "--agent", "demo", "--workbench", "wb", "outputs/big.bin"); got != string(want) {
		t.Fatalf("the restored big body reads back as %d bytes, want %d", len(got), len(want))
	}
	if status, body := getReadyz(t, g.url); status != http.StatusOK {
		t.Fatalf("readyz after a full restore: %d %s", status, body)
	}
}

func getReadyz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Issue 25, finding 9: a backup that leaves the blobs in the blob store says so, and a
// node restored without them is not ready, naming how many sampled blobs are missing.
func TestANodeRestoredWithoutItsBlobsIsNotReady(t *testing.T) {
	data, blobs := filepath.Join(t.TempDir(), "data"), t.TempDir()
	n := startBackupNode(t, data, "dir://"+blobs)
	cli(t, "put", "--server", n.url, "--agent", "demo", "--workbench", "wb", "outputs/big.bin", bigBody(t))
	if status, body := getReadyz(t, n.url); status != http.StatusOK {
		t.Fatalf("readyz with every blob in place: %d %s", status, body)
	}
	dest := t.TempDir()
	out := cli(t, "admin", "backup", "--admin-server", n.admin, "--to", dest, "--id", "b1")
	if !strings.Contains(out, "blobs: NOT COPIED") {
		t.Errorf("a backup without the blobs does not say so:\n%s", out)
	}
	n.stop()
	// Both the data directory and the blob store are lost.
	for _, d := range []string{data, blobs} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	cli(t, "admin", "restore", "--from", dest, "--data-dir", data)
	g := startBackupNode(t, data, "dir://"+blobs)
	status, body := getReadyz(t, g.url)
	var got struct {
		Failing []string `json:"failing"`
	}
	_ = json.Unmarshal([]byte(body), &got)
	if status != http.StatusServiceUnavailable || len(got.Failing) != 1 ||
		!strings.Contains(got.Failing[0], "1 of 1 sampled referenced blobs are missing") {
		t.Fatalf("readyz of a node whose blobs are gone: %d %s; want 503 naming 1 of 1 missing", status, body)
	}
}

// cutReader ends a stream after n bytes, as a backup client killed mid-stream does.
type cutReader struct {
	r io.Reader
	n int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > c.n {
		p = p[:c.n]
	}
	k, err := c.r.Read(p)
	c.n -= k
	return k, err
}

// Issue 25, finding 10: a backup cut off mid-stream leaves a hold and a destination
// without a manifest; `backup holds` lists the hold and `backup release --id --from`
// releases it and removes what the backup wrote.
func TestAHoldACutOffBackupLeavesIsListedAndReleased(t *testing.T) {
	n := startBackupNode(t, filepath.Join(t.TempDir(), "data"), "")
	cli(t, "put", "--server", n.url, "--agent", "demo", "--workbench", "wb", "outputs/big.bin", bigBody(t))

	// The cut-off backup: the hold is placed, part of the stream reaches the destination,
	// and a temporary file is left behind as a kill -9 would leave it.
	dest := t.TempDir()
	target, err := backup.OpenTarget(dest, backup.S3{})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.NewAdmin(n.admin, nil).Backup(t.Context(), "cut-1", "")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := io.ReadAll(stream)
	stream.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Write(t.Context(), target, &cutReader{r: bytes.NewReader(whole), n: len(whole) / 2}); err == nil {
		t.Fatal("a backup stream cut in half was written whole")
	}
	if err := os.WriteFile(filepath.Join(dest, ".tmp-4242"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if len(files(t, dest)) < 2 {
		t.Fatalf("the cut-off backup wrote nothing to its destination: %v", files(t, dest))
	}

	// Restoring or verifying the cut-off destination is an invalid --from, not a fault.
	for _, args := range [][]string{{"admin", "restore", "--from", dest, "--data-dir", filepath.Join(t.TempDir(), "r")}, {"admin", "backup", "verify", "--from", dest}} {
		_, _, err := execCairn(t, args...)
		if code, msg := describeError(err); code != "InvalidArguments" || !strings.HasPrefix(msg, "--from: backup incomplete:") || !strings.Contains(msg, "has no manifest.json") {
			t.Fatalf("%s of a cut-off backup: %s: %s; want InvalidArguments naming --from", args[1], code, msg)
		}
	}

	// A backup whose stream the node cut off (killed mid-stream) is Unavailable and says
	// whether running it again is safe.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != client.AdminBackupPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-tar")
		w.Header().Set("Content-Length", strconv.Itoa(len(whole)))
		w.WriteHeader(http.StatusOK)
		w.Write(whole[:len(whole)/2]) // then the handler returns: the connection closes short
	}))
	t.Cleanup(cut.Close)
	_, _, err = execCairn(t, "admin", "backup", "--admin-server", cut.URL, "--id", "cut-2", "--to", t.TempDir())
	if code, msg := describeError(err); code != "Unavailable" || !strings.Contains(msg, "backup incomplete") || !strings.Contains(msg, "running the backup again is safe") {
		t.Fatalf("a backup whose stream broke off: %s: %s; want Unavailable saying a new run is safe", code, msg)
	}

	_, _, err = execCairn(t, "admin", "backup", "delete", "--admin-server", n.admin, "--from", dest)
	if err == nil || !strings.Contains(err.Error(), "cairn admin backup release --id ID") {
		t.Fatalf("backup delete of a partial destination: %v; want an error naming backup release", err)
	}
	if out := cli(t, "admin", "backup", "holds", "--admin-server", n.admin); !strings.Contains(out, "cut-1") {
		t.Fatalf("backup holds does not list the cut-off backup's hold:\n%s", out)
	}
	// A destination of another backup is left alone.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, backup.IdentityPart), []byte(`{"backup":"nightly"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execCairn(t, "admin", "backup", "release", "--admin-server", n.admin, "--id", "cut-1", "--from", other); err == nil {
		t.Fatal("release --from a destination of another backup succeeded")
	}
	if len(files(t, other)) != 1 {
		t.Fatalf("release touched another backup's destination: %v", files(t, other))
	}

	out := cli(t, "admin", "backup", "release", "--admin-server", n.admin, "--id", "cut-1", "--from", dest)
	if !strings.Contains(out, "hold released on 1 of 1 shards") {
		t.Fatalf("release output:\n%s", out)
	}
	if left := files(t, dest); len(left) != 0 {
		t.Fatalf("release --from left %v", left)
	}
	if out := cli(t, "admin", "backup", "holds", "--admin-server", n.admin); strings.Contains(out, "cut-1") {
		t.Fatalf("the released hold is still listed:\n%s", out)
	}
}
