package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxErrorBodyBytes bounds how much of an error response the client reads: the envelope is
// small, and a misbehaving proxy must not make the client buffer an arbitrary page.
const maxErrorBodyBytes = 64 << 10

// Error is a non-2xx answer of the server (docs/workbench.md#errors, docs/architecture.md#surfaces).
type Error struct {
	// HTTPStatus is the HTTP status code of the response (404, 412, ...).
	HTTPStatus int
	// Code is the stable error code ("NotFound", "Conflict", "PayloadTooLarge", ...). For
	// answers without an envelope (HEAD, or a proxy's page) it is derived from HTTPStatus.
	Code string
	// Message is the server's human-readable explanation.
	Message string
	// Retryable says whether the same request may succeed later.
	Retryable bool
	// Details carries the code's structured data (for example "current_generation" on a
	// Conflict); nil when the server sent none. JSON numbers decode as float64.
	Details map[string]any
	// RetryAfter is the delay the server asked for with Retry-After (503, 429); 0 when
	// the header was absent or unparsable.
	RetryAfter time.Duration
}

// Error formats as "<Code>: <Message>".
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.HTTPStatus)
	}
	return e.Code + ": " + msg
}

// ErrorCode returns the Code of the *Error in err's chain, or "" when there is none (a
// transport failure, a local file error).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// statusCodes maps an HTTP status to the code and retryability the server's one mapping
// table gives it (docs/architecture.md#surfaces). Where two codes share a status (404: NotFound and
// SnapshotNotFound; 503: ObjectUnavailable and RoutingUnavailable) the more general one is used.
var statusCodes = map[int]struct {
	code      string
	retryable bool
}{
	http.StatusBadRequest:                   {"InvalidArguments", false},
	http.StatusNotFound:                     {"NotFound", false},
	http.StatusConflict:                     {"Conflict", false},
	http.StatusGone:                         {"SnapshotExpired", false},
	http.StatusPreconditionFailed:           {"Conflict", false},
	http.StatusRequestEntityTooLarge:        {"PayloadTooLarge", false},
	http.StatusRequestedRangeNotSatisfiable: {"InvalidArguments", false},
	http.StatusTooManyRequests:              {"ResourceExhausted", true},
	http.StatusInternalServerError:          {"Internal", false},
	http.StatusBadGateway:                   {"ObjectUnavailable", true},
	http.StatusServiceUnavailable:           {"ObjectUnavailable", true},
	http.StatusGatewayTimeout:               {"ObjectUnavailable", true},
}

// statusError builds the Error for a response without a usable envelope.
func statusError(status int, message string) *Error {
	sc, ok := statusCodes[status]
	if !ok {
		sc.code = "InvalidArguments"
		if status >= 500 {
			sc.code = "Internal"
		}
	}
	if message == "" {
		message = fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	}
	return &Error{HTTPStatus: status, Code: sc.code, Message: message, Retryable: sc.retryable}
}

// envelope is the error body every surface shares.
type envelope struct {
	Status    string         `json:"status"`
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details"`
}

// responseError reads an error response (at most maxErrorBodyBytes of it) and returns its
// *Error. It does not close the body.
func responseError(resp *http.Response) *Error {
	var e *Error
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	var env envelope
	if resp.Request != nil && resp.Request.Method == http.MethodHead {
		e = statusError(resp.StatusCode, "")
	} else if err := json.Unmarshal(body, &env); err == nil && env.Code != "" {
		e = &Error{HTTPStatus: resp.StatusCode, Code: env.Code, Message: env.Message,
			Retryable: env.Retryable, Details: env.Details}
	} else if de, ok := documentsError(resp.StatusCode, body); ok {
		e = de
	} else {
		e = statusError(resp.StatusCode, snippet(body))
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return e
}

// documentsError reads the working-documents surface's error body (docs/documents.md#errors:
// {error, message, field?, rule?, headVersionId?, runId?, errorText?}) whole: Code is its
// error (StaleBaseError, ValidationError, …), Message its message, Details its other
// members under their names; retryable as the status is. ok false: not such a body.
func documentsError(status int, body []byte) (*Error, bool) {
	var b struct {
		Error, Message                               string
		Field, Rule, HeadVersionID, RunID, ErrorText string
	}
	if json.Unmarshal(body, &b) != nil || b.Error == "" || b.Message == "" {
		return nil, false
	}
	e := statusError(status, b.Message)
	e.Code = b.Error
	for k, v := range map[string]string{"field": b.Field, "rule": b.Rule, "headVersionId": b.HeadVersionID, "runId": b.RunID, "errorText": b.ErrorText} {
		if v != "" {
			if e.Details == nil {
				e.Details = map[string]any{}
			}
			e.Details[k] = v
		}
	}
	return e, true
}

// snippet returns the start of a non-envelope error body as one line, or "".
func snippet(body []byte) string {
	const max = 200
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// parseRetryAfter reads a Retry-After value, delay-seconds or HTTP-date (RFC 9110
// §10.2.3), as a duration from now; 0 when absent or malformed.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		if secs < 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
