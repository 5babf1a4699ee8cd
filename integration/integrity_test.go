package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/dir"
	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// Integrity (issue 10, findings 1–3): no byte of a body reaches a client before the bytes it
// belongs to are verified, a corrupt blob is repaired by the next upload of the same
// content, and a damaged raft.db never ends in a panic or a start loop.

// blobFile returns the dir-backend file of the blob whose uncompressed bytes are segment.
func blobFile(t *testing.T, dataDir string, segment []byte) string {
	t.Helper()
	name := hex.EncodeToString(func() []byte { s := sha256.Sum256(segment); return s[:] }())
	var found string
	err := filepath.WalkDir(filepath.Join(dataDir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == name {
			found = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == "" {
		t.Fatalf("no blob file %s under %s", name, dataDir)
	}
	return found
}

// wantDataCorrupted requires a 5xx DataCorrupted error envelope, not retryable.
func wantDataCorrupted(t *testing.T, what string, r httpResult) {
	t.Helper()
	var env struct {
		Status    string `json:"status"`
		Code      string `json:"code"`
		Retryable bool   `json:"retryable"`
	}
	if r.status != http.StatusInternalServerError || json.Unmarshal(r.body, &env) != nil || env.Code != "DataCorrupted" || env.Retryable {
		n := min(len(r.body), 200)
		t.Errorf("%s: %d %q, want 500 with a DataCorrupted envelope, retryable false", what, r.status, r.body[:n])
	}
}

// corruptCount reads cairn_blob_corrupt_total (summed over its labels) from /metrics.
func corruptCount(t *testing.T, base string) float64 {
	t.Helper()
	r := doHTTP(t, "GET", base+"/metrics", nil)
	var sum float64
	for _, line := range strings.Split(string(r.body), "\n") {
		if !strings.HasPrefix(line, "cairn_blob_corrupt_total") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

func randomBody(seed uint64, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}).Read(b)
	return b
}

// A blob flipped on disk is never served: not over REST (whole body or a Range that does
// not even cover the flipped byte), not over MCP format=bytes; the error is a typed
// DataCorrupted, counted and logged with the digest; the next upload of the same content
// repairs the blob.
func TestCorruptBlobIsNeverServedAndReuploadRepairsIt(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	const agent, wb = "integrity", "w"
	srv := startWithWorkbench(t, dataDir, agent, wb)
	body := randomBody(1, 64<<10) // one identity-encoded segment
	u := fileURL(srv.URL, agent, wb, "outputs/data.bin")
	if r := doHTTP(t, "PUT", u, bytes.NewReader(body)); r.status != 201 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	if r := doHTTP(t, "GET", u, nil); r.status != 200 || !bytes.Equal(r.body, body) {
		t.Fatalf("GET before the damage: %d, %d bytes", r.status, len(r.body))
	}
	path := blobFile(t, dataDir, body)
	blobtest.FlipByte(t, path, dir.HeaderBytes+40_000)
	before := corruptCount(t, srv.URL)

	wantDataCorrupted(t, "GET of the whole body", doHTTP(t, "GET", u, nil))
	wantDataCorrupted(t, "GET of a range before the flipped byte", doHTTP(t, "GET", u, nil, "Range", "bytes=10-20"))
	wantDataCorrupted(t, "GET of the last bytes", doHTTP(t, "GET", u, nil, "Range", "bytes=-100"))

	c := mcpCaller{t: t, cs: framework.MCP(t, srv.URL, agent, "")}
	r := c.fails("workbench_read", map[string]any{"id": wb, "section": "outputs", "path": "data.bin", "format": "bytes"}, "DataCorrupted")
	if r["retryable"] != false {
		t.Errorf("MCP DataCorrupted is retryable: %v", r)
	}
	c.fails("workbench_read", map[string]any{"id": wb, "section": "outputs", "path": "data.bin", "format": "bytes", "offset": 0, "limit": 10}, "DataCorrupted")

	if got := corruptCount(t, srv.URL); got < before+1 {
		t.Errorf("cairn_blob_corrupt_total went from %v to %v, want it to count the corrupt reads", before, got)
	}
	digest := hex.EncodeToString(func() []byte { s := sha256.Sum256(body); return s[:] }())
	if !strings.Contains(srv.Output(), digest) {
		t.Errorf("no log line names the corrupt blob's digest %s", digest)
	}

	// Uploading the same content again (another path: the same blob) replaces the blob.
	if r := doHTTP(t, "PUT", fileURL(srv.URL, agent, wb, "outputs/again.bin"), bytes.NewReader(body)); r.status != 201 {
		t.Fatalf("PUT of the same content: %d %s", r.status, r.body)
	}
	if r := doHTTP(t, "GET", u, nil); r.status != 200 || !bytes.Equal(r.body, body) {
		t.Errorf("GET after the re-upload: %d, %d bytes (equal %v), want the original bytes", r.status, len(r.body), bytes.Equal(r.body, body))
	}
}

// A body of several segments whose second segment is damaged starts with 200 (the first
// segment is verified and sent) and then the stream is cut: the client sees a transport
// error, never a clean end of a short or wrong body.
func TestCorruptLaterSegmentAbortsTheStream(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	const agent, wb = "integrity", "w"
	srv := startWithWorkbench(t, dataDir, agent, wb)
	body := randomBody(2, 20<<20) // above the single-segment limit: content-defined chunks
	u := fileURL(srv.URL, agent, wb, "outputs/big.bin")
	if r := doHTTP(t, "PUT", u, bytes.NewReader(body)); r.status != 201 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	// Find a blob that is not the first segment: its payload (identity: random bytes) does
	// not start with the body's first bytes.
	var later string
	err := filepath.WalkDir(filepath.Join(dataDir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || later != "" {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		head := make([]byte, dir.HeaderBytes+64)
		if _, err := io.ReadFull(f, head); err != nil {
			return err
		}
		if !bytes.Equal(head[dir.HeaderBytes:], body[:64]) {
			later = p
		}
		return nil
	})
	if err != nil || later == "" {
		t.Fatalf("no blob besides the first segment (%v): the body was not cut into segments", err)
	}
	blobtest.FlipByte(t, later, dir.HeaderBytes+100)

	req, err := http.NewRequestWithContext(t.Context(), "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusInternalServerError:
		// Acceptable only if no byte of the body was sent: the envelope instead.
		wantDataCorrupted(t, "GET", httpResult{status: resp.StatusCode, body: got})
	case resp.StatusCode != http.StatusOK:
		t.Fatalf("GET: %d %q", resp.StatusCode, got[:min(len(got), 200)])
	case err == nil:
		t.Fatalf("GET: 200 and a clean end after %d of %d bytes (equal %v): the damaged segment was streamed", len(got), len(body), bytes.Equal(got, body))
	case !bytes.Equal(got, body[:len(got)]):
		t.Fatalf("GET: the %d bytes received before the stream was cut differ from the body: unverified bytes were sent", len(got))
	default:
		t.Logf("stream cut after %d of %d bytes: %v", len(got), len(body), err)
	}
}

// A byte of an inline body (stored in the Raft log) changed in raft.db is not served as
// "hellX world" with the digest of "hello world": the entry's checksum fails when the node
// restarts, which refuses to start, naming raft.db. (Inline bodies are also hashed on every
// read, for entries written before logs carried checksums: workbench's
// TestDamagedInlineSegmentIsDataCorrupted.)
func TestCorruptInlineBodyIsNeverServed(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	srv := framework.StartProcess(t, cairnBin, dataDir)
	u := fileURL(srv.URL, "integrity", "w", "input/hello.txt")
	if r := doHTTP(t, "PUT", srv.URL+"/v1/agents/integrity/workbenches/w", nil); r.status != 201 {
		t.Fatalf("create workbench: %d %s", r.status, r.body)
	}
	if r := doHTTP(t, "PUT", u, strings.NewReader("hello world")); r.status != 201 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	srv.Stop()
	db := filepath.Join(dataDir, "shards", "0", "raft.db")
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	n := bytes.Count(raw, []byte("hello world"))
	if n == 0 {
		t.Fatalf("%s does not hold the inline body", db)
	}
	// Every copy (bbolt keeps freed pages until reused): whichever the log reads is damaged.
	raw = bytes.ReplaceAll(raw, []byte("hello world"), []byte("hellX world"))
	if err := os.WriteFile(db, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("changed %d copies of the inline body in %s", n, db)
	wantDamagedStart(t, dataDir, db)
}

// wantDamagedStart runs `cairn serve` on dataDir and requires it to refuse to start with
// one clear error naming db as damaged: exit status non-zero, no Go panic, never serving.
func wantDamagedStart(t *testing.T, dataDir, db string) {
	t.Helper()
	r := runCLI(t, cliOptions{bin: cairnBin, timeout: time.Minute}, "serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0")
	if strings.Contains(r.stderr, "cairn is serving") {
		t.Fatalf("cairn serve served on a damaged %s:\n%s", db, r)
	}
	if r.code == 0 {
		t.Fatalf("cairn serve on a damaged %s exited 0:\n%s", db, r)
	}
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
		t.Errorf("cairn serve panicked on a damaged %s:\n%s", db, r)
	}
	if !strings.Contains(r.stderr, db+" is damaged") || !strings.Contains(r.stderr, "backup") {
		t.Errorf("the error does not name %s as damaged and say what to do:\n%s", db, r)
	}
}

// A truncated raft.db stops `cairn serve` with a clear error naming the file and what to
// do: exit status non-zero, no Go panic, no start loop — also when it is cut to nothing,
// which bbolt would otherwise take for a new, empty log.
func TestTruncatedRaftLogFailsStartClearly(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	srv := framework.StartProcess(t, cairnBin, dataDir)
	// Enough entries that the log's pages run well past the first few.
	inline := bytes.Repeat([]byte("x"), 4000)
	for i := range 100 {
		if r := doHTTP(t, "PUT", fileURL(srv.URL, "integrity", "w", fmt.Sprintf("input/%d.txt", i)), bytes.NewReader(inline)); r.status != 201 {
			t.Fatalf("PUT: %d %s", r.status, r.body)
		}
	}
	srv.Stop()
	db := filepath.Join(dataDir, "shards", "0", "raft.db")
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{fi.Size() / 2, 4096 + 100, 100, 0} {
		t.Run(fmt.Sprintf("cut to %d bytes", size), func(t *testing.T) {
			if err := os.Truncate(db, size); err != nil {
				t.Fatal(err)
			}
			wantDamagedStart(t, dataDir, db)
		})
	}
}

// A changed byte in the newest Raft snapshot stops the start with a clear error naming it
// (raft's CRC-64 of the snapshot, checked before the replica restores), instead of raft
// quietly restoring an older snapshot, or none, in its place.
func TestDamagedRaftSnapshotFailsStartClearly(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	srv := framework.StartProcess(t, cairnBin, dataDir, "--raft-snapshot-threshold", "16", "--raft-snapshot-interval", "200ms")
	snapDir := filepath.Join(dataDir, "shards", "0", "snapshots")
	i := 0
	retry.Within(t, time.Minute, "a Raft snapshot is taken", func() error {
		i++
		if r := doHTTP(t, "PUT", fileURL(srv.URL, "integrity", "w", fmt.Sprintf("input/%d.txt", i)), strings.NewReader("some bytes")); r.status != 201 {
			t.Fatalf("PUT: %d %s", r.status, r.body)
		}
		m, _ := filepath.Glob(filepath.Join(snapDir, "*", "state.bin"))
		if len(m) == 0 {
			return fmt.Errorf("no snapshot in %s after %d writes", snapDir, i)
		}
		return nil
	})
	srv.Stop()
	m, err := filepath.Glob(filepath.Join(snapDir, "*", "state.bin"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no snapshot state in %s (%v)", snapDir, err)
	}
	newest := m[len(m)-1] // names sort by term, index, time
	fi, err := os.Stat(newest)
	if err != nil {
		t.Fatal(err)
	}
	blobtest.FlipByte(t, newest, fi.Size()/2)
	wantDamagedStart(t, dataDir, filepath.Dir(newest))
}

// startWithWorkbench starts a node on dataDir and creates workbench wb of agent on it.
func startWithWorkbench(t *testing.T, dataDir, agent, wb string) *framework.Process {
	t.Helper()
	srv := framework.StartProcess(t, cairnBin, dataDir)
	if r := doHTTP(t, "PUT", srv.URL+"/v1/agents/"+agent+"/workbenches/"+wb, nil); r.status != 201 {
		t.Fatalf("create workbench: %d %s", r.status, r.body)
	}
	return srv
}
