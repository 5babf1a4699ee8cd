package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cairnstore/cairn/workbench"
)

// Code is an S3 error code ("Error Responses", Amazon S3 API Reference).
type Code string

// The codes the gateway answers with; statusOf maps each to its HTTP status.
const (
	CodeAccessDenied                      Code = "AccessDenied"
	CodeAuthorizationHeaderMalformed      Code = "AuthorizationHeaderMalformed"
	CodeAuthorizationQueryParametersError Code = "AuthorizationQueryParametersError"
	CodeIncompleteBody                    Code = "IncompleteBody"
	CodeInternalError                     Code = "InternalError"
	CodeInvalidAccessKeyID                Code = "InvalidAccessKeyId"
	CodeInvalidArgument                   Code = "InvalidArgument"
	CodeInvalidDigest                     Code = "InvalidDigest"
	CodeXAmzContentSHA256Mismatch         Code = "XAmzContentSHA256Mismatch"
	CodeInvalidRequest                    Code = "InvalidRequest"
	CodeBadDigest                         Code = "BadDigest"
	CodeRequestTimeTooSkewed              Code = "RequestTimeTooSkewed"
	CodeRequestTimeout                    Code = "RequestTimeout"
	CodeSignatureDoesNotMatch             Code = "SignatureDoesNotMatch"
	CodeServiceUnavailable                Code = "ServiceUnavailable"
	CodeBucketNotEmpty                    Code = "BucketNotEmpty"
	CodeEntityTooLarge                    Code = "EntityTooLarge"
	CodeInvalidBucketName                 Code = "InvalidBucketName"
	CodeInvalidRange                      Code = "InvalidRange"
	CodeKeyTooLong                        Code = "KeyTooLongError"
	CodeMalformedXML                      Code = "MalformedXML"
	CodeMaxMessageLengthExceeded          Code = "MaxMessageLengthExceeded"
	CodeMetadataTooLarge                  Code = "MetadataTooLarge"
	CodeMissingContentLength              Code = "MissingContentLength"
	CodeMethodNotAllowed                  Code = "MethodNotAllowed"
	CodeNoSuchBucket                      Code = "NoSuchBucket"
	CodeNoSuchKey                         Code = "NoSuchKey"
	CodeOperationAborted                  Code = "OperationAborted"
	CodeNoSuchVersion                     Code = "NoSuchVersion"
	CodeNotImplemented                    Code = "NotImplemented"
	CodePreconditionFailed                Code = "PreconditionFailed"
	CodeQuotaExceeded                     Code = "QuotaExceeded"
	CodeSlowDown                          Code = "SlowDown"
	CodeNoSuchUpload                      Code = "NoSuchUpload"
	CodeInvalidPart                       Code = "InvalidPart"
	CodeInvalidPartNumber                 Code = "InvalidPartNumber"
	CodeInvalidPartOrder                  Code = "InvalidPartOrder"
	CodeEntityTooSmall                    Code = "EntityTooSmall"
)

// statusOf is the one table from codes to HTTP statuses.
var statusOf = map[Code]int{
	CodeAccessDenied:                      http.StatusForbidden,
	CodeAuthorizationHeaderMalformed:      http.StatusBadRequest,
	CodeAuthorizationQueryParametersError: http.StatusBadRequest,
	CodeIncompleteBody:                    http.StatusBadRequest,
	CodeInternalError:                     http.StatusInternalServerError,
	CodeInvalidAccessKeyID:                http.StatusForbidden,
	CodeInvalidArgument:                   http.StatusBadRequest,
	CodeInvalidDigest:                     http.StatusBadRequest,
	CodeXAmzContentSHA256Mismatch:         http.StatusBadRequest,
	CodeInvalidRequest:                    http.StatusBadRequest,
	CodeBadDigest:                         http.StatusBadRequest,
	CodeRequestTimeTooSkewed:              http.StatusForbidden,
	CodeRequestTimeout:                    http.StatusBadRequest,
	CodeSignatureDoesNotMatch:             http.StatusForbidden,
	CodeServiceUnavailable:                http.StatusServiceUnavailable,
	CodeBucketNotEmpty:                    http.StatusConflict,
	CodeEntityTooLarge:                    http.StatusBadRequest,
	CodeInvalidBucketName:                 http.StatusBadRequest,
	CodeInvalidRange:                      http.StatusRequestedRangeNotSatisfiable,
	CodeKeyTooLong:                        http.StatusBadRequest,
	CodeMalformedXML:                      http.StatusBadRequest,
	CodeMaxMessageLengthExceeded:          http.StatusBadRequest,
	CodeInvalidPartNumber:                 http.StatusRequestedRangeNotSatisfiable,
	CodeMetadataTooLarge:                  http.StatusBadRequest,
	CodeMissingContentLength:              http.StatusLengthRequired,
	CodeMethodNotAllowed:                  http.StatusMethodNotAllowed,
	CodeNoSuchBucket:                      http.StatusNotFound,
	CodeNoSuchKey:                         http.StatusNotFound,
	CodeOperationAborted:                  http.StatusConflict,
	CodeNoSuchVersion:                     http.StatusNotFound,
	CodeNotImplemented:                    http.StatusNotImplemented,
	CodePreconditionFailed:                http.StatusPreconditionFailed,
	CodeQuotaExceeded:                     http.StatusForbidden,
	CodeSlowDown:                          http.StatusServiceUnavailable,
	CodeNoSuchUpload:                      http.StatusNotFound,
	CodeInvalidPart:                       http.StatusBadRequest,
	CodeInvalidPartOrder:                  http.StatusBadRequest,
	CodeEntityTooSmall:                    http.StatusBadRequest,
}

// fromWorkbench turns an error of the Workbench service into S3's: missing is the code
// a NotFound means where it happened (NoSuchBucket or NoSuchKey); the message is the
// service's, which names no internal object.
func fromWorkbench(err error, missing Code) error {
	var s3err *Error
	if errors.As(err, &s3err) {
		return s3err
	}
	var e *workbench.Error
	if !errors.As(err, &e) {
		return err
	}
	code := CodeInternalError
	switch e.Code {
	case workbench.CodeNotFound, workbench.CodeNotArtifact, workbench.CodeNotDirectory:
		code = missing
	case workbench.CodeInvalidArguments:
		code = CodeInvalidArgument
	case workbench.CodePayloadTooLarge:
		code = CodeEntityTooLarge
	case workbench.CodeConflict, workbench.CodeAlreadyExists:
		code = CodePreconditionFailed
	case workbench.CodePermissionDenied, workbench.CodeUnauthenticated:
		code = CodeAccessDenied
	case workbench.CodeResourceExhausted:
		code = CodeSlowDown
		if !e.Retryable {
			code = CodeQuotaExceeded
		}
	case workbench.CodeRoutingUnavailable, workbench.CodeObjectUnavailable, workbench.CodeOutcomeUnknown,
		workbench.CodeReadFenceChanged, workbench.CodeInvalidState:
		code = CodeServiceUnavailable
	}
	if code == CodeInternalError {
		return &Error{Code: code, Message: "we encountered an internal error; please try again"}
	}
	return &Error{Code: code, Message: e.Message}
}

// Error is an S3 error: its code and a message for people. It never names an internal
// object key, address or Go type.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Status is the HTTP status of the error's code (500 for a code the table lacks).
func (e *Error) Status() int {
	if s, ok := statusOf[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// codeOf is the S3 code of err, "" when it is no *Error.
func codeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the XML body of an error answer.
type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      Code     `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource,omitempty"`
	RequestID string   `xml:"RequestId"`
}

// WriteError answers err as S3 does: its status and an XML <Error>. An error that is no
// *Error is an InternalError whose text stays in the node's log, not in the answer.
func WriteError(w http.ResponseWriter, r *http.Request, requestID string, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: CodeInternalError, Message: "we encountered an internal error; please try again"}
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-amz-request-id", requestID)
	if e.Status() == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1") // every 503 is worth a retry (a moving root, an election)
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(e.Status())
		return
	}
	body, _ := xml.Marshal(errorBody{Code: e.Code, Message: e.Message, Resource: r.URL.Path, RequestID: requestID})
	// The length declared, so that an answer flushed before its request's body ends
	// (answerError) reaches the client whole in one write, not as an open chunked body.
	w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(body)))
	w.WriteHeader(e.Status())
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}
