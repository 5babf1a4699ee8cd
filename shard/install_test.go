package shard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/cairnstore/cairn/meta"
)

// countingDiscard counts the bytes written to it.
type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWriteSnapshot measures a Raft snapshot of a shard whose root holds 20,000
// files of 1 KiB inline (as small-put leaves it; meta.BenchmarkSnapshotWrite without the
// compression): the meta stream and its zstd together. zstd-B is the snapshot's size.
func BenchmarkWriteSnapshot(b *testing.B) {
	const files = 20_000
	f := meta.New(meta.Options{})
	r := rand.NewChaCha8([32]byte{})
	for i := range files {
		body := make([]byte, 1024)
		r.Read(body) // random bytes: what the compression gets least from
		f.ApplyBody(uint64(i+1), meta.Header{TimeMs: 1}, meta.Put{Agent: "a", Workspace: "w", Path: fmt.Sprintf("input/d%d/f%d", i%100, i),
			CreateWorkspace: true, Size: 1024, Segments: []meta.Segment{{Size: 1024, Inline: body}}})
	}
	s := f.Snapshot()
	var w countingDiscard
	b.ReportAllocs()
	for b.Loop() {
		w.n = 0
		if err := WriteSnapshot(&w, s); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w.n), "zstd-B")
}

// A snapshot stream is decoded with a bounded window (snapshotMaxWindowBytes): the same
// snapshot compressed with a larger window than that, or a frame that declares a larger
// single segment, is refused before its decoder allocates the window, while the stream
// WriteSnapshot writes decodes.
func TestASnapshotStreamDeclaringAnOversizedWindowIsRefused(t *testing.T) {
	f := meta.New(meta.Options{})
	if r := f.ApplyBody(1, meta.Header{TimeMs: 1}, put("input/a", "x")); r.Err != nil {
		t.Fatal(r.Err)
	}
	var written bytes.Buffer
	if err := WriteSnapshot(&written, f.Snapshot()); err != nil {
		t.Fatal(err)
	}
	open := func(b []byte) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	if v, err := CheckSnapshot(open(written.Bytes())); err != nil || v != 1 {
		t.Fatalf("the stream WriteSnapshot wrote: version %d, %v; want 1, nil", v, err)
	}

	// The same stream with its frame's window descriptor (RFC 8878 3.1.1.1.2; its frame
	// header has no single-segment flag) raised to 256 MiB, four times the bound: the
	// content and its checksum stay valid.
	if fhd := written.Bytes()[4]; fhd&0x20 != 0 {
		t.Fatalf("WriteSnapshot wrote a single-segment frame (header byte %#x): the test needs a window descriptor", fhd)
	}
	wide := bytes.Clone(written.Bytes())
	wide[5] = (28 - 10) << 3 // window log 28
	// A frame header alone: single segment, content size 40 GiB (RFC 8878 3.1.1.1).
	single := binary.LittleEndian.AppendUint64([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}, 40<<30)
	for name, b := range map[string][]byte{"a window of 256 MiB": wide, "a single segment of 40 GiB": single} {
		if _, err := CheckSnapshot(open(b)); !errors.Is(err, zstd.ErrWindowSizeExceeded) && !errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			t.Errorf("a snapshot stream declaring %s: %v, want the decoder's size refusal", name, err)
		}
	}
}
