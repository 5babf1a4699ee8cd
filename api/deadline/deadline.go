package deadline

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// Defaults of the progress-based deadlines (api/rest.Options, api/s3.Config, ops).
const (
	DefaultBodyMinBytesPerSecond = 64 << 10
	DefaultBodyRateWindow        = 30 * time.Second
	DefaultWriteTimeout          = time.Minute
)

// Body is a request body that must keep arriving at a minimum average rate.
//
// The rule is a bucket of waiting time: it starts full at window, every Read spends the
// time it waits for the client, every byte received refills 1/minRate seconds, and the
// bucket never holds more than window. The connection's read deadline is set to the
// time left in the bucket, so a client that sends nothing for a whole window, or
// averages below minRate long enough, is cut off with slow's error.
type Body struct {
	rc      io.ReadCloser
	ctl     *http.ResponseController
	minRate int64
	window  time.Duration
	credit  time.Duration
	total   int64
	slow    func(received int64) error
	err     error
}

// NewBody bounds rc, the body of the request w answers; slow makes the error of a body
// cut off, given the bytes received.
func NewBody(rc io.ReadCloser, w http.ResponseWriter, minRate int64, window time.Duration, slow func(received int64) error) *Body {
	return &Body{rc: rc, ctl: http.NewResponseController(w), minRate: minRate, window: window, credit: window, slow: slow}
}

func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	start := time.Now()
	_ = b.ctl.SetReadDeadline(start.Add(b.credit)) // unsupported writers: no deadline
	n, err := b.rc.Read(p)
	b.total += int64(n)
	b.credit -= time.Since(start)
	b.credit += time.Duration(float64(n) / float64(b.minRate) * float64(time.Second))
	if b.credit > b.window {
		b.credit = b.window
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || (err == nil && b.credit <= 0) {
		b.err = b.slow(b.total)
		return n, b.err
	}
	return n, err
}

// Close closes the underlying body.
func (b *Body) Close() error { return b.rc.Close() }

// Extend moves the connection's write deadline timeout ahead; called before every write
// of a response, a client that stops reading is cut off after timeout while a large
// download that keeps moving is not. timeout ≤ 0: no deadline.
func Extend(ctl *http.ResponseController, timeout time.Duration) {
	if timeout > 0 {
		_ = ctl.SetWriteDeadline(time.Now().Add(timeout))
	}
}

// Writer is a ResponseWriter that calls Extend before every write.
type Writer struct {
	http.ResponseWriter
	ctl     *http.ResponseController
	timeout time.Duration
}

// NewWriter wraps w.
func NewWriter(w http.ResponseWriter, timeout time.Duration) *Writer {
	return &Writer{ResponseWriter: w, ctl: http.NewResponseController(w), timeout: timeout}
}

func (w *Writer) WriteHeader(status int) {
	Extend(w.ctl, w.timeout)
	w.ResponseWriter.WriteHeader(status)
}

func (w *Writer) Write(p []byte) (int, error) {
	Extend(w.ctl, w.timeout)
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
