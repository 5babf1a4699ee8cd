package integration

import (
	"bufio"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/cairnstore/cairn/blob/s3/s3test"
	"github.com/cairnstore/cairn/integration/framework"
)

// Tests of `cairn serve --blob s3://…` against a real MinIO (blob/s3/s3test: the pinned
// build of $CAIRN_MINIO_BIN or scripts/minio.sh; without one these tests fail, never
// skip). Large bodies come from a generator and are hashed as they stream: the test
// process never holds a body in memory. The same checks run at full size (2 GiB, 1 GiB)
// under `make test-long` (s3_long_test.go, build tag long).

const (
	// maxServerHWMBytes bounds the server's peak resident memory (VmHWM) while it streams
	// a large body into and out of the object store: a body must never be held whole.
	maxServerHWMBytes = 300 << 20
	// editBytes is the size of the overwrite and the insertion of the chunk-reuse tests.
	editBytes = 1 << 20
	// Upper bounds on the objects a re-upload may add (docs/architecture.md#the-write-path: content-defined
	// chunks, so an edit changes only the chunks around it).
	maxNewObjectsAfterOverwrite = 3
	maxNewObjectsAfterInsert    = 4
)

// The normal suite's sizes; s3_long_test.go runs the same tests at full size.
const (
	roundTripBytes   = 256 << 20
	chunkReuseBytes  = 256 << 20
	normalRunTimeout = 10 * time.Minute
)

func TestS3LargeBodyStreamsWithBoundedServerMemory(t *testing.T) {
	testS3LargeBodyRoundTrip(t, roundTripBytes, normalRunTimeout)
}

func TestS3ReuploadAfterAnEditStoresOnlyTheChangedChunks(t *testing.T) {
	testS3ChunkReuse(t, chunkReuseBytes, normalRunTimeout)
}

// s3Cairn is a `cairn serve` whose blobs live in a bucket of its own MinIO.
type s3Cairn struct {
	*framework.Process
	endpoint string // MinIO's, host:port
	bucket   string
	prefix   string
	raw      *minio.Client
}

// startS3Cairn starts MinIO and a plain (not race-instrumented: memory is measured)
// `cairn serve --blob s3://<bucket>/<prefix>` on it. The credentials reach the child only
// through AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
func startS3Cairn(t *testing.T) *s3Cairn {
	t.Helper()
	o := framework.StartObjectStore(t)
	c := &s3Cairn{endpoint: o.Endpoint, bucket: o.Bucket, prefix: "cairn/it"}
	o.ExportCredentials(t)
	c.Process = framework.StartProcess(t, cairnBin, filepath.Join(t.TempDir(), "data"), o.BlobArgs("/"+c.prefix)...)
	if strings.Contains(c.Output(), s3test.SecretKey) {
		t.Fatalf("cairn serve logged the S3 secret key:\n%s", c.Output())
	}
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c.raw, err = minio.New(o.Endpoint, &minio.Options{
		Creds:     credentials.NewStaticV4(s3test.AccessKey, s3test.SecretKey, ""),
		Transport: tr,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := doHTTP(t, http.MethodPut, c.URL+"/v1/agents/big/workbenches/w1", nil); r.status/100 != 2 {
		t.Fatalf("create workbench: %d %s", r.status, r.body)
	}
	return c
}

// objects lists the bucket: object name → size in bytes. Every object must lie under the
// configured prefix in the docs/architecture.md#blob-storage-and-garbage-collection layout.
func (c *s3Cairn) objects(t *testing.T) map[string]int64 {
	t.Helper()
	all := map[string]int64{}
	for oi := range c.raw.ListObjectsIter(t.Context(), c.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if oi.Err != nil {
			t.Fatalf("list bucket: %v", oi.Err)
		}
		if !strings.HasPrefix(oi.Key, c.prefix+"/roots/") || !strings.Contains(oi.Key, "/blobs/") {
			t.Fatalf("object %q is not under %s/roots/<root>/blobs/", oi.Key, c.prefix)
		}
		all[oi.Key] = oi.Size
	}
	return all
}

// put streams body (size bytes) to path and returns the wall time.
func (c *s3Cairn) put(t *testing.T, ctx context.Context, path string, body io.Reader, size int64) time.Duration {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, fileURL(c.URL, "big", "w1", path), body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", path, err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT %s: %d %s", path, resp.StatusCode, msg)
	}
	return time.Since(start)
}

// get streams path back and returns its size, SHA-256 and the wall time.
func (c *s3Cairn) get(t *testing.T, ctx context.Context, path string) (int64, [sha256.Size]byte, time.Duration) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fileURL(c.URL, "big", "w1", path), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "identity")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, msg)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		t.Fatalf("GET %s: after %d bytes: %v", path, n, err)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return n, sum, time.Since(start)
}

// testS3LargeBodyRoundTrip PUTs size pseudo-random bytes over REST into an s3-backed
// server, GETs them back, compares SHA-256 and checks the server's peak RSS.
func testS3LargeBodyRoundTrip(t *testing.T, size int64, timeout time.Duration) {
	c := startS3Cairn(t)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()

	sent := sha256.New()
	up := c.put(t, ctx, "input/large.bin", io.TeeReader(pattern(1, 0, size), sent), size)
	var want [sha256.Size]byte
	sent.Sum(want[:0])
	objs := c.objects(t)
	var stored int64
	for _, n := range objs {
		stored += n
	}
	n, got, down := c.get(t, ctx, "input/large.bin")
	if n != size || got != want {
		t.Fatalf("GET returned %d bytes with SHA-256 %x, want %d bytes with %x", n, got, size, want)
	}
	hwm := serverHWM(t, c.Process)
	t.Logf("THROUGHPUT s3 round trip of %d MiB: PUT %.1f s (%.1f MB/s), GET %.1f s (%.1f MB/s); %d objects, %d bytes stored; server VmHWM %d MiB",
		size>>20, up.Seconds(), float64(size)/1e6/up.Seconds(), down.Seconds(), float64(size)/1e6/down.Seconds(),
		len(objs), stored, hwm>>20)
	if stored < size || len(objs) < int(size/(16<<20)) {
		t.Fatalf("the bucket holds %d objects of %d bytes for a %d-byte incompressible body", len(objs), stored, size)
	}
	if hwm <= 0 {
		return // no /proc: logged by serverHWM
	}
	if hwm >= maxServerHWMBytes {
		t.Fatalf("server peak RSS (VmHWM) %d MiB for a %d MiB body, want < %d MiB", hwm>>20, size>>20, maxServerHWMBytes>>20)
	}
}

// testS3ChunkReuse uploads size pseudo-random bytes, then the same path again with
// editBytes overwritten in the middle, then with editBytes inserted in the middle, and
// counts the objects each re-upload adds to the bucket.
func testS3ChunkReuse(t *testing.T, size int64, timeout time.Duration) {
	c := startS3Cairn(t)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	mid := size / 2
	const path = "input/data.bin"

	c.put(t, ctx, path, pattern(1, 0, size), size)
	base := c.objects(t)
	if len(base) < int(size/(16<<20)) {
		t.Fatalf("a %d MiB body made only %d objects: not chunked?", size>>20, len(base))
	}
	baseBytes := sumSizes(base)

	overwritten := io.MultiReader(pattern(1, 0, mid), pattern(2, 0, editBytes), pattern(1, mid+editBytes, size))
	c.put(t, ctx, path, overwritten, size)
	afterOverwrite := c.objects(t)
	newOverwrite := added(base, afterOverwrite)

	inserted := io.MultiReader(pattern(1, 0, mid), pattern(3, 0, editBytes), pattern(1, mid, size))
	c.put(t, ctx, path, inserted, size+editBytes)
	afterInsert := c.objects(t)
	newInsert := added(afterOverwrite, afterInsert)

	// The last version reads back whole: old chunks and new ones, in order.
	want := sha256.New()
	io.Copy(want, io.MultiReader(pattern(1, 0, mid), pattern(3, 0, editBytes), pattern(1, mid, size)))
	n, got, _ := c.get(t, ctx, path)
	if n != size+editBytes || string(got[:]) != string(want.Sum(nil)) {
		t.Fatalf("the re-uploaded body reads back as %d bytes with another SHA-256", n)
	}

	t.Logf("CHUNKS %d MiB body: %d objects, %d bytes; 1 MiB overwritten in the middle: +%d objects, +%d bytes; 1 MiB inserted in the middle: +%d objects, +%d bytes",
		size>>20, len(base), baseBytes, len(newOverwrite), sumSizes(newOverwrite), len(newInsert), sumSizes(newInsert))
	if len(newOverwrite) > maxNewObjectsAfterOverwrite {
		t.Errorf("re-upload with 1 MiB overwritten added %d objects (%d bytes), want at most %d", len(newOverwrite), sumSizes(newOverwrite), maxNewObjectsAfterOverwrite)
	}
	if len(newInsert) > maxNewObjectsAfterInsert {
		t.Errorf("re-upload with 1 MiB inserted added %d objects (%d bytes), want at most %d", len(newInsert), sumSizes(newInsert), maxNewObjectsAfterInsert)
	}
	if len(newOverwrite) == 0 || len(newInsert) == 0 {
		t.Errorf("an edit added no object (overwrite %d, insert %d): the new bytes were not stored?", len(newOverwrite), len(newInsert))
	}
}

// added returns the objects of after that are not in before.
func added(before, after map[string]int64) map[string]int64 {
	out := maps.Clone(after)
	for k := range before {
		delete(out, k)
	}
	return out
}

func sumSizes(m map[string]int64) int64 {
	var n int64
	for _, s := range m {
		n += s
	}
	return n
}

// serverHWM returns the peak resident set size (VmHWM) of the server's process, in
// bytes, or 0 (after logging why) where /proc/<pid>/status does not exist.
func serverHWM(t *testing.T, s *framework.Process) int64 {
	t.Helper()
	if !s.Running() {
		t.Fatal("serverHWM: the server is not running")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.Pid()))
	if errors.Is(err, os.ErrNotExist) {
		t.Logf("no /proc on this system: the server's peak memory is not checked")
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "VmHWM:	  123456 kB"
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			t.Fatalf("unexpected VmHWM line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			t.Fatalf("VmHWM line %q: %v", sc.Text(), err)
		}
		return kb << 10
	}
	t.Fatalf("no VmHWM line in /proc/%d/status (%v)", s.Pid(), sc.Err())
	return 0
}

// pattern returns the bytes [from, to) of an endless pseudo-random stream named by seed:
// AES-CTR keystream under a key made from seed, so any range is generated directly and
// fast (hardware AES), and equal ranges of equal seeds are equal bytes.
func pattern(seed uint64, from, to int64) io.Reader {
	var key [16]byte
	binary.BigEndian.PutUint64(key[:], seed)
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 16-byte key is always valid
	}
	var iv [aes.BlockSize]byte
	binary.BigEndian.PutUint64(iv[8:], uint64(from/aes.BlockSize))
	p := &patternReader{ctr: cipher.NewCTR(block, iv[:]), left: to - from}
	// Discard the head of the first AES block.
	var skip [aes.BlockSize]byte
	p.ctr.XORKeyStream(skip[:from%aes.BlockSize], skip[:from%aes.BlockSize])
	return p
}

type patternReader struct {
	ctr  cipher.Stream
	left int64
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	clear(b)
	p.ctr.XORKeyStream(b, b)
	p.left -= int64(len(b))
	return len(b), nil
}

// The generator's ranges agree with its whole stream, so an edited body differs from the
// original exactly where the test edits it.
func TestPatternRangesAgreeWithTheWholeStream(t *testing.T) {
	whole, err := io.ReadAll(pattern(7, 0, 1000))
	if err != nil || len(whole) != 1000 {
		t.Fatalf("read %d bytes, %v", len(whole), err)
	}
	for _, r := range [][2]int64{{0, 1}, {1, 17}, {15, 16}, {16, 33}, {333, 1000}, {999, 1000}, {500, 500}} {
		part, err := io.ReadAll(pattern(7, r[0], r[1]))
		if err != nil || string(part) != string(whole[r[0]:r[1]]) {
			t.Fatalf("pattern(7, %d, %d) differs from the whole stream's bytes (%v)", r[0], r[1], err)
		}
	}
	other, _ := io.ReadAll(pattern(8, 0, 1000))
	if string(other) == string(whole) {
		t.Fatal("two seeds gave the same bytes")
	}
}
