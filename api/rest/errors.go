package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/cairnstore/cairn/workbench"
)

// precondition says which conditional header a write carried, so a failed condition
// answers 412 instead of 409 (docs/architecture.md#surfaces).
type precondition int

const (
	noPrecondition precondition = iota
	ifMatch
	ifNoneMatchStar
)

// statusOf maps a wire code to its HTTP status (docs/architecture.md#surfaces's table).
func statusOf(code string, pre precondition) int {
	switch code {
	case workbench.CodeInvalidArguments, workbench.CodeInvalidUTF8, workbench.CodeNoMatch,
		workbench.CodeAmbiguousEdit, workbench.CodeStructuredDecodeFailed, workbench.CodeUnknownTool:
		return http.StatusBadRequest
	case workbench.CodeNotFound:
		if pre == ifMatch {
			// RFC 9110 §13.1.1: If-Match on a missing resource fails the precondition.
			return http.StatusPreconditionFailed
		}
		return http.StatusNotFound
	case workbench.CodeSnapshotNotFound:
		return http.StatusNotFound
	case workbench.CodeAlreadyExists:
		if pre == ifNoneMatchStar {
			return http.StatusPreconditionFailed
		}
		return http.StatusConflict
	case workbench.CodeConflict:
		if pre == ifMatch {
			return http.StatusPreconditionFailed
		}
		return http.StatusConflict
	case workbench.CodeNotDirectory, workbench.CodeNotArtifact, workbench.CodeReadFenceChanged,
		workbench.CodeInvalidState, workbench.CodeWorkbenchCommitConflict, workbench.CodeForkRetentionActive:
		return http.StatusConflict
	case workbench.CodeUnauthenticated:
		return http.StatusUnauthorized
	case workbench.CodePermissionDenied:
		// Only where the principal may use the root; a root it may not use is 404.
		return http.StatusForbidden
	case workbench.CodeSnapshotExpired, workbench.CodeFeedExpired:
		return http.StatusGone
	case workbench.CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case workbench.CodeResourceExhausted:
		return http.StatusTooManyRequests
	case workbench.CodeObjectUnavailable, workbench.CodeRoutingUnavailable:
		return http.StatusServiceUnavailable
	case workbench.CodeOutcomeUnknown:
		// A write whose commit could not be confirmed: 503 with Retry-After (RFC 9110
		// §15.6.4, "temporarily unable"), the status retrying clients honour, Cairn's own
		// included (api/client RetryPolicy: 503 and 429). Not 500, which says "a defect"
		// and is not retried; not 504, which names a gateway whose upstream did not
		// answer. The retry is safe under the same Idempotency-Key.
		return http.StatusServiceUnavailable
	case workbench.CodeDataCorrupted:
		// The request was fine; this server's stored bytes are not. 500 rather than 502:
		// no upstream answered badly that another attempt could reach, and proxies and
		// SDKs retry 502 on their own, which cannot help (retryable is false).
		return http.StatusInternalServerError
	}
	return http.StatusInternalServerError
}

// writeError answers with the contract's envelope.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error, pre precondition) {
	e := workbench.AsError(err)
	if a := activityOf(r.Context()); a != nil {
		a.code = e.Code
	}
	status := statusOf(e.Code, pre)
	if status == http.StatusPreconditionFailed {
		// A condition the client set failed: the same request fails the same way until
		// the client re-reads and decides again, so it is never "retry as is".
		e = workbench.PreconditionFailed(e)
	}
	if e.Code == workbench.CodeResourceExhausted && e.Details["reason"] == workbench.ReasonDiskFull {
		status = http.StatusInsufficientStorage // RFC 4918 §11.5: the server cannot store the representation
	}
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests || status == http.StatusInsufficientStorage {
		w.Header().Set("Retry-After", retryAfter(e))
	}
	if status == http.StatusInternalServerError && h.log != nil && r.Context().Err() == nil {
		h.log.Error("request failed", "method", r.Method, "path", r.URL.EscapedPath(), "err", err)
	}
	WriteJSON(w, status, e.Envelope())
}

// WriteJSON writes v as JSON. A map with a "status" key is written with that key first, as
// the contract shows every result and error ("status" then the rest, sorted). It takes
// "status" out of v.
func WriteJSON(w http.ResponseWriter, status int, v map[string]any) {
	e := jsonBuffers.Get().(*jsonBuffer)
	defer e.release()
	st, hasStatus := v["status"]
	if !hasStatus {
		_ = e.enc.Encode(v)
		e.send(w, status)
		return
	}
	delete(v, "status")
	e.buf.WriteString(`{"status":`)
	if e.enc.Encode(st) == nil {
		e.buf.Truncate(e.buf.Len() - 1) // Encode's newline
	}
	rest := e.buf.Len()
	// The rest as an object, "{…}\n": its "{" becomes the "," after status; an empty object
	// or one that does not encode leaves status alone.
	if e.enc.Encode(v) == nil && e.buf.Len()-rest > len("{}\n") {
		e.buf.Bytes()[rest] = ','
		e.buf.Truncate(e.buf.Len() - 1)
	} else {
		e.buf.Truncate(rest)
		e.buf.WriteByte('}')
	}
	e.buf.WriteByte('\n')
	e.send(w, status)
}

// writeStruct writes v, a struct whose fields come in the order WriteJSON writes a map's
// keys ("status", then the others in byte order), as JSON: HTML characters not escaped.
func writeStruct(w http.ResponseWriter, status int, v any) {
	e := jsonBuffers.Get().(*jsonBuffer)
	defer e.release()
	_ = e.enc.Encode(v)
	e.send(w, status)
}

// jsonBuffer is WriteJSON's buffer and its encoder (HTML characters not escaped), and
// writeListing's (listing.go): the answer it appends to, and the encoder that quotes the
// strings JSON must escape (made by the first such string).
type jsonBuffer struct {
	buf bytes.Buffer
	enc *json.Encoder

	out    []byte
	quoted bytes.Buffer
	quoter *json.Encoder
}

// jsonBuffers recycles WriteJSON's buffers, so that an answer is encoded into a buffer
// already grown to an answer's size instead of one grown by doubling and copied twice.
var jsonBuffers = sync.Pool{New: func() any {
	e := &jsonBuffer{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooledJSONBytes bounds the buffer kept between answers; a larger one is left to the
// collector.
const maxPooledJSONBytes = 256 << 10

// send answers status with the JSON in e's buffer, its length declared: a client reads an
// answer of any size into a buffer of that size, and net/http frames none of it in chunks.
func (e *jsonBuffer) send(w http.ResponseWriter, status int) {
	sendJSON(w, status, e.buf.Bytes())
}

// sendJSON answers status with body, JSON, its length declared (jsonBuffer.send).
func sendJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func (e *jsonBuffer) release() {
	if e.buf.Cap() > maxPooledJSONBytes || cap(e.out) > maxPooledJSONBytes {
		return
	}
	e.buf.Reset()
	e.out = e.out[:0]
	jsonBuffers.Put(e)
}

// retryAfter is the Retry-After of a retryable answer, in whole seconds (RFC 9110
// §10.2.3): details.retry_after_ms rounded up, at least 1.
func retryAfter(e *workbench.Error) string {
	ms, _ := e.Details["retry_after_ms"].(int64)
	return strconv.FormatInt(max(1, (ms+999)/1000), 10)
}
