package workbench_test

import (
	"bytes"
	"crypto/sha256"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/blob/mem"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// checkSegmentDigests checks that the segments of path cut body as their sizes say, each
// with the SHA-256 of its bytes, and the BLAKE3 of its bytes when it lives in the object
// store (an inline segment records none).
func checkSegmentDigests(t *testing.T, svc *workbench.Service, path string, body []byte) []meta.Segment {
	t.Helper()
	segs, err := svc.FileSegments(t.Context(), "a", "w", path)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(0)
	for i, sg := range segs {
		part := body[off : off+sg.Size]
		off += sg.Size
		if sg.Digest != meta.Digest(sha256.Sum256(part)) {
			t.Errorf("%s: segment %d has another SHA-256 than its bytes", path, i)
		}
		want := meta.Blake3(blob.Blake3Of(part))
		if sg.IsInline() {
			want = meta.Blake3{}
		}
		if sg.Blake3 != want {
			t.Errorf("%s: segment %d (inline %v) records the BLAKE3 %x, want %x", path, i, sg.IsInline(), sg.Blake3, want)
		}
	}
	if off != int64(len(body)) {
		t.Errorf("%s: segments of %d bytes, the body has %d", path, off, len(body))
	}
	return segs
}

// Every write records the BLAKE3 of each object-store segment it uploads: a body of one
// segment and of several, an append, a body whose blob existed already (a dedupe hit), and
// copies and composes, which reuse the recorded digests of their sources (no byte moves).
// The bodies read back whole, through reads that verify by those digests.
func TestWritesRecordTheBlake3OfEveryObjectStoreSegment(t *testing.T) {
	svc := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 4096}, mem.New()).Service
	ctx := t.Context()
	one, many, tiny := blobtest.RandomBytes(1, 1<<20), blobtest.RandomBytes(2, 24<<20), []byte("inline bytes")
	part1, part2 := blobtest.RandomBytes(3, 1<<20), blobtest.RandomBytes(4, 300<<10)
	write := func(path string, body []byte) {
		t.Helper()
		if _, err := svc.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: path,
			Body: bytes.NewReader(body), SizeHint: int64(len(body)), CreateWorkbench: true}); err != nil {
			t.Fatal(err)
		}
	}
	write("outputs/one", one)
	write("outputs/many", many)
	write("outputs/tiny", tiny)
	write("outputs/again", one) // its blob is stored already
	for _, p := range [][]byte{part1, part2} {
		if _, err := svc.Writes.Append(ctx, workbench.AppendRequest{Agent: "a", Workbench: "w", Path: "logs/l",
			Body: bytes.NewReader(p), CreateWorkbench: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Writes.Copy(ctx, workbench.CopyRequest{Agent: "a", SrcWorkbench: "w", SrcPath: "outputs/many",
		Workbench: "w", Path: "outputs/copy"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Writes.Compose(ctx, workbench.ComposeRequest{Agent: "a", SrcWorkbench: "w",
		Parts: []workbench.ComposePart{{Path: "outputs/one"}, {Path: "outputs/many"}}, Workbench: "w", Path: "outputs/composed"}); err != nil {
		t.Fatal(err)
	}

	segsOne := checkSegmentDigests(t, svc, "outputs/one", one)
	segsMany := checkSegmentDigests(t, svc, "outputs/many", many)
	if len(segsMany) < 2 {
		t.Fatalf("a %d-byte body was cut into %d segment(s), want several", len(many), len(segsMany))
	}
	if segs := checkSegmentDigests(t, svc, "outputs/tiny", tiny); len(segs) != 1 || !segs[0].IsInline() {
		t.Fatalf("the tiny body: segments %+v, want one inline", segs)
	}
	checkSegmentDigests(t, svc, "outputs/again", one)
	checkSegmentDigests(t, svc, "logs/l", append(bytes.Clone(part1), part2...))
	if segs := checkSegmentDigests(t, svc, "outputs/copy", many); !reflect.DeepEqual(segs, segsMany) {
		t.Error("the copy records other segments than its source")
	}
	composed := checkSegmentDigests(t, svc, "outputs/composed", append(bytes.Clone(one), many...))
	if !reflect.DeepEqual(composed, append(slices.Clone(segsOne), segsMany...)) {
		t.Error("the composed file records other segments than its parts")
	}
	for path, body := range map[string][]byte{"outputs/many": many, "outputs/composed": append(bytes.Clone(one), many...)} {
		if got := readAll(t, svc, path); !bytes.Equal(got, body) {
			t.Errorf("%s reads back other bytes than written", path)
		}
	}
}

// Segments recorded with a BLAKE3 (the write path now) and without one (the previous
// write path's, a meta.Segment without the key) both read, and both are refused with the
// same DataCorrupted once their blob is damaged. A BLAKE3 that does not match intact bytes
// is refused too: a read checks the recorded BLAKE3, not the SHA-256, when there is one.
func TestReadsVerifySegmentsWithAndWithoutABlake3(t *testing.T) {
	store := mem.New()
	n := workbenchtest.NewOn(t, workbench.Config{InlineMaxBytes: 0}, store)
	ctx := t.Context()
	newBody, oldBody := blobtest.RandomBytes(5, 3<<20), []byte(strings.Repeat("a segment the previous release wrote\n", 30000))
	if _, err := n.Service.Writes.Write(ctx, workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/new",
		Body: bytes.NewReader(newBody), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	newSegs, err := n.Service.FileSegments(ctx, "a", "w", "outputs/new")
	if err != nil || len(newSegs) != 1 || newSegs[0].Blake3 == (meta.Blake3{}) {
		t.Fatalf("the new body's segments: %+v, %v; want one with a BLAKE3", newSegs, err)
	}
	// The old format: the blob uploaded and the segment recorded as before BLAKE3 digests.
	hd := blob.Hash(oldBody)
	oldKey := blob.Key{Root: "r1", Digest: hd.Digest()}
	if _, err := store.Put(ctx, oldKey, hd); err != nil {
		t.Fatal(err)
	}
	d := meta.Digest(hd.Digest())
	put := func(path string, sg meta.Segment) {
		t.Helper()
		if _, err := n.Shard.Propose(ctx, meta.Header{}, meta.Put{Agent: "a", Workspace: "w", Path: path,
			Size: sg.Size, Digest: sg.Digest, ContentType: "text/plain", Segments: []meta.Segment{sg}}); err != nil {
			t.Fatal(err)
		}
	}
	put("outputs/old", meta.Segment{Digest: d, Size: int64(len(oldBody))})
	put("outputs/wrong", meta.Segment{Digest: d, Size: int64(len(oldBody)), Blake3: meta.Blake3(blob.Blake3Of(newBody))})

	for path, body := range map[string][]byte{"outputs/new": newBody, "outputs/old": oldBody} {
		if got, err := readRange(t, n.Service, path, 0, -1); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%s: %v, or other bytes than written", path, err)
		}
		if got, err := readRange(t, n.Service, path, 1000, 5000); err != nil || !bytes.Equal(got, body[1000:6000]) {
			t.Fatalf("%s, a range: %v, or other bytes than written", path, err)
		}
	}
	got, err := readRange(t, n.Service, "outputs/wrong", 0, 100)
	wantCorrupted(t, "intact bytes under a BLAKE3 of other bytes", got, err, d)

	if err := store.Corrupt(blob.Key{Root: "r1", Digest: blob.Digest(newSegs[0].Digest)}); err != nil {
		t.Fatal(err)
	}
	if err := store.Corrupt(oldKey); err != nil {
		t.Fatal(err)
	}
	for path, digest := range map[string]meta.Digest{"outputs/new": newSegs[0].Digest, "outputs/old": d} {
		got, err := readRange(t, n.Service, path, 0, 10)
		wantCorrupted(t, path+" damaged", got, err, digest)
	}
}
