package rest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/cairnstore/cairn/workbench"
)

// Defaults of the progress-based deadlines (Options).
const (
	DefaultBodyMinBytesPerSecond = 64 << 10
	DefaultBodyRateWindow        = 30 * time.Second
	DefaultWriteTimeout          = time.Minute
)

// rateBody is a request body that must keep arriving at a minimum average rate: a
// slow-loris upload ends with a typed error instead of holding its connection, its ingest
// slot (workbench) or its large-request slot (MCP) for ever, while a slow but moving upload
// of any size completes.
//
// The rule is a bucket of waiting time: it starts full at window, every Read spends the
// time it waits for the client, every byte received refills 1/minRate seconds, and the
// bucket never holds more than window. The connection's read deadline is set to the
// time left in the bucket, so a client that sends nothing for a whole window, or
// averages below minRate long enough, is cut off; only time spent waiting inside Read
// counts, so a server that is slow to read (waiting for an ingest slot, uploading
// segments) never blames the client.
type rateBody struct {
	rc      io.ReadCloser
	ctl     *http.ResponseController
	minRate int64
	window  time.Duration
	credit  time.Duration
	total   int64
	err     error
}

func newRateBody(rc io.ReadCloser, w http.ResponseWriter, minRate int64, window time.Duration) *rateBody {
	return &rateBody{rc: rc, ctl: http.NewResponseController(w), minRate: minRate, window: window, credit: window}
}

func (b *rateBody) Read(p []byte) (int, error) {
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
		b.err = slowBody(b.minRate, b.window, b.total)
		return n, b.err
	}
	return n, err
}

func (b *rateBody) Close() error { return b.rc.Close() }

// slowBody is the typed answer to a body that arrived below the minimum rate:
// InvalidArguments on field "body" (the client's upload broke the rule, the server is
// fine), retryable because the same request over a faster link succeeds.
func slowBody(minRate int64, window time.Duration, received int64) *workbench.Error {
	return &workbench.Error{Code: workbench.CodeInvalidArguments, Retryable: true,
		Message: fmt.Sprintf("body: arrived slower than the minimum of %d bytes/s averaged over %s (received %d bytes); the upload was cut off",
			minRate, window, received),
		Details: map[string]any{"field": "body", "rule": "min_rate", "min_bytes_per_second": minRate,
			"window_seconds": window.Seconds(), "received_bytes": received}}
}

// writeDeadline extends the connection's write deadline before every write of a
// response, so a client that stops reading is cut off after timeout while a large
// download that keeps moving is not (http.Server.WriteTimeout would bound the whole
// response instead).
func writeDeadline(ctl *http.ResponseController, timeout time.Duration) {
	if timeout > 0 {
		_ = ctl.SetWriteDeadline(time.Now().Add(timeout))
	}
}
