package s3

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"

	"github.com/minio/minio-go/v7"

	"github.com/cairnstore/cairn/blob"
)

// ErrBucketMissing: Open found no bucket named Config.Bucket and Config.CreateBucket is
// false. It does not wrap blob.ErrUnavailable: retrying does not help until someone
// creates the bucket.
var ErrBucketMissing = errors.New("blob/s3: the configured bucket (Config.Bucket) does not exist and Config.CreateBucket is false")

// ObjectUnavailableError is the error of every call the object store could not serve: it
// was unreachable, timed out, answered 5xx or throttled (SlowDown) through all the retries
// of RetryConfig, or refused the request (AccessDenied, NoSuchBucket, bad credentials). It
// wraps blob.ErrUnavailable, so callers may retry the call later.
//
// Its message is generic on purpose: it never names the endpoint, the bucket, an object
// name, a root or a digest, so it can travel to logs and to other tenants' error reports.
// For the same reason the underlying error (whose text names URLs) is not kept: Reason,
// Code and StatusCode describe the failure.
type ObjectUnavailableError struct {
	// Op is the Store method or step that failed: "open", "put", "get", "stat", "delete",
	// "list" or "read" (a body that broke off mid-stream).
	Op string
	// Reason is a generic description of the last failure, e.g. "connection refused",
	// "timeout", "HTTP 503 SlowDown", "request refused: HTTP 403 AccessDenied".
	Reason string
	// StatusCode is the HTTP status of the last response; 0 when none arrived.
	StatusCode int
	// Code is the S3 error code of the last response ("SlowDown", "AccessDenied"); "" when
	// none arrived.
	Code string
	// Transient is true when the last failure looked temporary (no connection, a timeout,
	// 5xx, throttling), false when the store refused the request (4xx); both wrap
	// blob.ErrUnavailable.
	Transient bool
	// Attempts is the number of attempts made for the failed request.
	Attempts int

	// ctxErr is the context's error when the caller's ctx ended while retrying.
	ctxErr error
}

// Error formats as "blob/s3: <op>: object store unavailable: <reason> (<n> attempts)".
func (e *ObjectUnavailableError) Error() string {
	msg := "blob/s3: " + e.Op + ": object store unavailable: " + e.Reason
	switch e.Attempts {
	case 0:
	case 1:
		msg += " (1 attempt)"
	default:
		msg += " (" + strconv.Itoa(e.Attempts) + " attempts)"
	}
	if e.ctxErr != nil {
		msg += "; gave up: " + e.ctxErr.Error()
	}
	return msg
}

// Unwrap returns blob.ErrUnavailable; blob.ErrStorageFull too when the store said its
// storage is full (507, XMinioStorageFull); and the context's error when the caller's ctx
// ended while the call was retrying.
func (e *ObjectUnavailableError) Unwrap() []error {
	errs := []error{blob.ErrUnavailable}
	if e.Code == "XMinioStorageFull" || e.StatusCode == http.StatusInsufficientStorage {
		errs = append(errs, blob.ErrStorageFull) // MinIO's answer when its disks are full
	}
	if e.ctxErr != nil {
		errs = append(errs, e.ctxErr)
	}
	return errs
}

// failure is what classify makes of an error from minio-go or from a response body.
type failure struct {
	notFound     bool // 404 NoSuchKey (or NoSuchUpload)
	precondition bool // 412: a conditional write found the object
	transient    bool // worth retrying
	status       int
	code         string
	reason       string // generic: never the error's own text, which names URLs and keys
}

// retryableCodes are S3 error codes of transient conditions, whatever the HTTP status.
var retryableCodes = map[string]bool{
	"SlowDown":                   true,
	"SlowDownRead":               true,
	"SlowDownWrite":              true,
	"InternalError":              true,
	"ServiceUnavailable":         true,
	"RequestTimeout":             true,
	"Throttling":                 true,
	"ThrottlingException":        true,
	"RequestLimitExceeded":       true,
	"RequestThrottled":           true,
	"OperationAborted":           true,
	"ConditionalRequestConflict": true, // a concurrent conditional write of the same key
	"XMinioServerNotInitialized": true,
	"XMinioReadQuorum":           true,
	"XMinioWriteQuorum":          true,
	// The body did not match its x-amz-checksum-crc32c (or Content-MD5): damaged in
	// transit. Put sends it again from memory.
	"XAmzContentChecksumMismatch": true,
	"BadDigest":                   true,
}

// retryableStatus are HTTP statuses of transient conditions.
var retryableStatus = map[int]bool{
	http.StatusRequestTimeout:      true,
	http.StatusTooManyRequests:     true,
	499:                            true, // client closed request (nginx)
	http.StatusInternalServerError: true,
	http.StatusBadGateway:          true,
	http.StatusServiceUnavailable:  true,
	http.StatusGatewayTimeout:      true,
}

// classify describes err. Its reason never contains err's text.
func classify(err error) failure {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && (resp.StatusCode != 0 || resp.Code != "") {
		f := failure{status: resp.StatusCode, code: safeCode(resp.Code)}
		switch {
		case resp.Code == minio.NoSuchKey || resp.Code == minio.NoSuchUpload ||
			(resp.StatusCode == http.StatusNotFound && resp.Code == ""):
			f.notFound = true
			f.reason = "not found"
			return f
		case resp.StatusCode == http.StatusPreconditionFailed || resp.Code == minio.PreconditionFailed:
			f.precondition = true
			f.reason = "precondition failed"
			return f
		}
		f.transient = retryableCodes[resp.Code] || retryableStatus[resp.StatusCode]
		f.reason = httpReason(resp.StatusCode, f.code)
		if !f.transient {
			f.reason = "request refused: " + f.reason
		}
		return f
	}
	// Anything else minio-go or net/http returns is a failure of the connection.
	f := failure{transient: true}
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		f.reason = "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		f.reason = "connection reset"
	case errors.Is(err, syscall.EPIPE):
		f.reason = "connection closed"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		f.reason = "connection closed"
	case errors.As(err, &netErr) && netErr.Timeout():
		f.reason = "timeout"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// A timeout inside the HTTP client, not the caller's ctx (callers check theirs).
		f.reason = "timeout"
	default:
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			f.reason = "host name lookup failed"
		} else {
			f.reason = "network error"
		}
	}
	return f
}

// httpReason formats "HTTP <status> <code>", leaving out what is missing.
func httpReason(status int, code string) string {
	r := "HTTP"
	if status != 0 {
		r += " " + strconv.Itoa(status)
	}
	if code != "" {
		r += " " + code
	}
	if r == "HTTP" {
		r = "error response"
	}
	return r
}

// safeCode returns code if it looks like an S3 error code (a short alphanumeric token),
// else "": minio-go puts the HTTP status line there when a body does not parse, and a
// server could put anything.
func safeCode(code string) string {
	if len(code) == 0 || len(code) > 64 {
		return ""
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '_' {
			return ""
		}
	}
	return code
}

// unavailable builds the error of a call that gave up on f after attempts attempts.
func unavailable(op string, f failure, attempts int) *ObjectUnavailableError {
	return &ObjectUnavailableError{
		Op:         op,
		Reason:     f.reason,
		StatusCode: f.status,
		Code:       f.code,
		Transient:  f.transient,
		Attempts:   attempts,
	}
}
