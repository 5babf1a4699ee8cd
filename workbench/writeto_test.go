package workbench_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// writeRecorder keeps what it is written and the size of each write; it fails once it has
// taken failAfter bytes (0: never).
type writeRecorder struct {
	buf       bytes.Buffer
	sizes     []int
	failAfter int
}

var errPeerGone = errors.New("peer went away")

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	if w.failAfter > 0 && w.buf.Len()+len(p) > w.failAfter {
		return 0, errPeerGone
	}
	return w.buf.Write(p)
}

// io.Copy from a file reader goes through WriteTo: the verified segment buffers go to the
// writer in writes of up to 1 MiB, not through a 32 KiB copy buffer, ranges included; a
// failing writer's error comes back unchanged.
func TestReaderWritesSegmentsInLargeWrites(t *testing.T) {
	svc, _ := newService(t, 0)
	body := make([]byte, 20<<20) // several segments
	rand.NewChaCha8([32]byte{3}).Read(body)
	if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "outputs/big",
		Body: bytes.NewReader(body), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	f, err := svc.Reads.Open(t.Context(), "a", "w", "outputs/big")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		off, n int64
	}{
		{"the whole body", 0, -1},
		{"a range across segments", 3<<20 + 5, 11 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.Reader(t.Context(), tc.off, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var w writeRecorder
			got, err := io.Copy(&w, r)
			want := body[tc.off:]
			if tc.n >= 0 {
				want = want[:tc.n]
			}
			if err != nil || got != int64(len(want)) || !bytes.Equal(w.buf.Bytes(), want) {
				t.Fatalf("io.Copy: %d bytes, %v; want the %d bytes of the range", got, err, len(want))
			}
			largest := 0
			for _, s := range w.sizes {
				largest = max(largest, s)
			}
			if largest != 1<<20 || len(w.sizes) > len(want)/(256<<10)+8 {
				t.Errorf("%d writes, the largest %d bytes; want writes of up to 1 MiB", len(w.sizes), largest)
			}
		})
	}
	r, err := f.Reader(t.Context(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := writeRecorder{failAfter: 5 << 20}
	if n, err := io.Copy(&w, r); !errors.Is(err, errPeerGone) || n != int64(w.buf.Len()) {
		t.Fatalf("io.Copy to a failing writer: %d bytes, %v; want the writer's error after the bytes it took (%d)", n, err, w.buf.Len())
	}
}
