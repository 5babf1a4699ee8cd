package documents

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Error codes of this surface (docs/documents.md#errors). The design names
// StaleBaseError; the others are Cairn's names for the failures the design describes.
const (
	CodeValidation       = "ValidationError"
	CodeTooLarge         = "PayloadTooLarge"
	CodeNotFound         = "NotFound"
	CodeStaleBase        = "StaleBaseError"
	CodeConflict         = "ConflictError"
	CodeRunner           = "RunnerError"
	CodeUnauthenticated  = "Unauthenticated"
	CodeForbidden        = "Forbidden"
	CodeMethodNotAllowed = "MethodNotAllowed"
	CodeUnavailable      = "Unavailable"
	CodeRateLimited      = "RateLimited"
	CodeInternal         = "Internal"
)

// Error is every non-2xx answer of this surface: its status and the closed body
// {error, message, field?, rule?, headVersionId?, runId?, errorText?}.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
	// Field and Rule name the request member a ValidationError refuses and the rule.
	Field string `json:"field,omitempty"`
	Rule  string `json:"rule,omitempty"`
	// HeadVersionID is the document's head on a StaleBaseError.
	HeadVersionID string `json:"headVersionId,omitempty"`
	// RunID and ErrorText describe a failed runner run (RunnerError).
	RunID     string `json:"runId,omitempty"`
	ErrorText string `json:"errorText,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Rules a ValidationError names.
const (
	RuleRequired  = "required"
	RuleMaxLength = "max-length"
	RuleFormat    = "format"
	RuleType      = "type"
	RuleUnknown   = "unknown-member"
	RuleMaxItems  = "max-items"
	RuleExists    = "must-exist"
	RuleEnum      = "enum"
	RuleDuplicate = "duplicate-member" // an object names a member twice (internal/strictjson)
	// RuleUTF8: text that is not valid UTF-8, or escapes a lone UTF-16 surrogate.
	RuleUTF8 = "utf-8"
)

func invalid(field, rule, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeValidation, Field: field, Rule: rule,
		Message: field + ": " + fmt.Sprintf(format, args...)}
}

func notFound(what string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such " + what}
}

func conflict(format string, args ...any) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

func staleBase(head string) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeStaleBase, HeadVersionID: head,
		Message: "the base version is not the document's head (head " + head + ")"}
}

func tooLarge(limit int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge,
		Message: "the request body is larger than " + strconv.FormatInt(limit, 10) + " bytes"}
}

// fromStore maps a Store error to the answer: the one place store failures meet the wire.
func fromStore(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, ErrForbidden):
		return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: "the credential may not do this"}
	case errors.Is(err, ErrRateLimited):
		return &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: "too many requests for now"}
	case errors.Is(err, ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "the store is unavailable"}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "the store failed"}
}

// retryAdvice returns e, when it is a 429 or 503 of a route, with what to send again
// after Retry-After: a read as it was (it names no id and changes nothing); a write with
// the same requestId (a decision: submissionId), which makes a replay finish what the
// attempt began and answer what it would have (docs/documents.md, Routes).
func retryAdvice(e *Error, r *http.Request) *Error {
	if e.Code != CodeRateLimited && e.Code != CodeUnavailable {
		return e
	}
	c := *e
	switch {
	case r.Method != http.MethodPost:
		c.Message += "; retry the read after Retry-After"
	case strings.HasSuffix(r.URL.EscapedPath(), "/decisions"):
		c.Message += "; retry after Retry-After with the same submissionId and body"
	default:
		c.Message += "; retry after Retry-After with the same requestId and body"
	}
	return &c
}

// writeError writes e's answer (503 and 429 with Retry-After).
func writeError(w http.ResponseWriter, e *Error) {
	if e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.Status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"Internal","message":"the answer could not be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// WriteError answers e in this surface's shape. The node uses it for the refusals it makes
// before a request reaches the surface (authentication, the Host and Origin guards), so
// every non-2xx answer of these routes has the one body.
func WriteError(w http.ResponseWriter, e *Error) { writeError(w, e) }
