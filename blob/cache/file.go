package cache

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/client_golang/prometheus"
)

// File is an open, checked cached blob. It is not safe for concurrent use.
type File struct {
	f      *os.File
	size   int64
	served prometheus.Counter
}

// Size returns the blob's length in bytes.
func (f *File) Size() int64 { return f.size }

// ReadAt reads len(p) bytes at off into p, exactly (io.ReaderAt).
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	f.served.Add(float64(n))
	return n, err
}

// WriteRange writes bytes [off, off+n) of the blob to w and returns how many it wrote.
// It hands w an *io.LimitedReader over the *os.File, so a writer that reaches a TCP
// connection (io.ReaderFrom: net.TCPConn, net/http's response) sends it with sendfile,
// no copy through user space. A file shorter than the range fails with
// io.ErrUnexpectedEOF.
func (f *File) WriteRange(w io.Writer, off, n int64) (int64, error) {
	if off < 0 || n < 0 || off+n > f.size {
		return 0, fmt.Errorf("cache: range [%d, +%d) outside a blob of %d bytes", off, n, f.size)
	}
	if _, err := f.f.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	m, err := io.Copy(w, &io.LimitedReader{R: f.f, N: n})
	f.served.Add(float64(m))
	if err == nil && m < n {
		err = io.ErrUnexpectedEOF
	}
	return m, err
}

// Close closes the file.
func (f *File) Close() error {
	if f == nil || f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}
