package workbench

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// recordingReader reads from r and records whether each Read was handed the buffer the
// test reads into (want), i.e. whether the bytes went there without a copy.
type recordingReader struct {
	r      io.Reader
	want   []byte
	direct int
}

func (rr *recordingReader) Read(p []byte) (int, error) {
	if len(p) > 0 && len(rr.want) > 0 && &p[0] == &rr.want[0] {
		rr.direct++
	}
	return rr.r.Read(p)
}

// Once a body holds its weight, the pump runs dry and the ingest's reads go straight into
// its buffer: past the first two pieces, no byte is copied out of a piece, and every byte
// arrives once, in order.
func TestAGatedBodyReadsStraightIntoTheBufferOnceItHoldsWeight(t *testing.T) {
	body := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{5}).Read(body)
	budget := newIngestBudget(Config{MaxConcurrentIngests: 1, UploadConcurrency: 1, IngestQueueTimeout: time.Second})
	into := make([]byte, 256<<10)
	rr := &recordingReader{r: bytes.NewReader(body), want: into}
	g := newGatedBody(t.Context(), rr, int64(len(body)), budget)
	defer g.close()
	if err := g.wait(); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for {
		n, err := g.Read(into)
		got = append(got, into[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes that differ from the body's %d", len(got), len(body))
	}
	// 1 MiB in reads of up to 256 KiB, the first two pieces (64 KiB) through the pump.
	if rr.direct < 4 {
		t.Errorf("%d reads went straight into the buffer, want at least 4", rr.direct)
	}
	if g.held == 0 {
		t.Error("the body holds no weight after it was read")
	}
}
