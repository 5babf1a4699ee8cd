package workbench_test

import (
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/dir"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// readRange reads [off, off+n) of path and returns the bytes and the first error.
func readRange(t *testing.T, svc *workbench.Service, path string, off, n int64) ([]byte, error) {
	t.Helper()
	f, err := svc.Reads.Open(t.Context(), "a", "w", path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Reader(t.Context(), off, n)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

func wantCorrupted(t *testing.T, what string, got []byte, err error, digest meta.Digest) {
	t.Helper()
	var we *workbench.Error
	if !errors.As(err, &we) || we.Code != workbench.CodeDataCorrupted || we.Retryable {
		t.Fatalf("%s: %q, error %v; want DataCorrupted, not retryable", what, got, err)
	}
	if we.Details["digest"] != workbench.DigestURI(digest) {
		t.Errorf("%s: details %v, want digest %s", what, we.Details, workbench.DigestURI(digest))
	}
}

// A body whose second object-store segment is damaged: every range that touches the
// segment — even a part of it that does not hold the damaged byte — is DataCorrupted, and
// no byte of it is returned; ranges of the intact segment still read.
func TestRangesOfADamagedSegmentAreDataCorrupted(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 0})
	svc := n.Service
	reg := prometheus.NewRegistry()
	if err := svc.Instrument(reg); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	second := strings.Repeat("efghijklmnop", 100)
	for _, part := range []string{"abcd", second} {
		if _, err := svc.Writes.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/two", Body: strings.NewReader(part), CreateWorkbench: true}); err != nil {
			t.Fatal(err)
		}
	}
	uid := ""
	err := n.Blobs.List(ctx, "r1", func(k blob.Key, _ blob.Info) error { uid = k.Root; return nil })
	if err != nil || uid == "" {
		t.Fatalf("the blobs of root r1: %v (root uid %q)", err, uid)
	}
	d := meta.Digest(sha256.Sum256([]byte(second)))
	path := n.Blobs.(*dir.Store).BlobPath(blob.Key{Root: uid, Digest: blob.Digest(d)})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 0xff // the segment's last byte (identity or zstd: either fails)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	if got, err := readRange(t, svc, "logs/two", 0, 4); err != nil || string(got) != "abcd" {
		t.Fatalf("the intact first segment: %q, %v", got, err)
	}
	for _, c := range []struct {
		what   string
		off, n int64
	}{
		{"the first bytes of the damaged segment", 4, 2},
		{"a range across both segments", 2, 4},
		{"the whole body", 0, -1},
	} {
		got, err := readRange(t, svc, "logs/two", c.off, c.n)
		wantCorrupted(t, c.what, got, err, d)
		if strings.Contains(string(got), "ef") {
			t.Errorf("%s: bytes of the damaged segment were returned: %q", c.what, got)
		}
	}
	if got := corruptTotal(t, reg); got < 3 {
		t.Errorf("cairn_blob_corrupt_total = %v, want ≥ 3", got)
	}
}

// corruptTotal sums cairn_blob_corrupt_total over its labels.
func corruptTotal(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == "cairn_blob_corrupt_total" {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// An inline segment whose bytes do not hash to its digest (an entry of a log written
// before entries carried checksums, or a damaged snapshot of one) is DataCorrupted on every
// read, never served as the digest's content.
func TestDamagedInlineSegmentIsDataCorrupted(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096})
	good := []byte("hello world")
	d := meta.Digest(sha256.Sum256(good))
	_, err := n.Shard.Propose(t.Context(), meta.Header{}, meta.Put{Agent: "a", Workspace: "w", Path: "input/hello.txt", CreateWorkspace: true,
		Size: int64(len(good)), Digest: d, ContentType: "text/plain",
		Segments: []meta.Segment{{Digest: d, Size: int64(len(good)), Inline: []byte("hellX world")}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what   string
		off, n int64
	}{{"the whole body", 0, -1}, {"the first bytes", 0, 4}, {"the last byte", 10, 1}} {
		got, err := readRange(t, n.Service, "input/hello.txt", c.off, c.n)
		wantCorrupted(t, c.what, got, err, d)
	}
	f, err := n.Service.Reads.Open(t.Context(), "a", "w", "input/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.ReadAll(t.Context(), 1<<20)
	wantCorrupted(t, "ReadAll", got, err, d)
}
