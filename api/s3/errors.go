package s3

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
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
	CodeSignatureDoesNotMatch             Code = "SignatureDoesNotMatch"
	CodeServiceUnavailable                Code = "ServiceUnavailable"
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
	CodeSignatureDoesNotMatch:             http.StatusForbidden,
	CodeServiceUnavailable:                http.StatusServiceUnavailable,
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
	w.WriteHeader(e.Status())
	if r.Method == http.MethodHead {
		return
	}
	body, _ := xml.Marshal(errorBody{Code: e.Code, Message: e.Message, Resource: r.URL.Path, RequestID: requestID})
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}
