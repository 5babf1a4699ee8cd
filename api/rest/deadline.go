package rest

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cairnstore/cairn/api/deadline"
	"github.com/cairnstore/cairn/workbench"
)

// Defaults of the progress-based deadlines (Options), declared in api/deadline.
const (
	DefaultBodyMinBytesPerSecond = deadline.DefaultBodyMinBytesPerSecond
	DefaultBodyRateWindow        = deadline.DefaultBodyRateWindow
	DefaultWriteTimeout          = deadline.DefaultWriteTimeout
)

// newRateBody bounds a request body's rate (deadline.Body): a slow-loris upload ends with
// slowBody's typed error instead of holding its connection, its weight of the ingest
// budget (workbench) or its large-request slot (MCP) for ever.
func newRateBody(rc io.ReadCloser, w http.ResponseWriter, minRate int64, window time.Duration) *deadline.Body {
	return deadline.NewBody(rc, w, minRate, window, func(received int64) error { return slowBody(minRate, window, received) })
}

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
// response (deadline.Extend).
func writeDeadline(ctl *http.ResponseController, timeout time.Duration) {
	deadline.Extend(ctl, timeout)
}
