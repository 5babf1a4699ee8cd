package openwop

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/cairnstore/cairn/workbench"
)

// The error codes this facade answers: those OpenWOP registers for host.workspace and
// runs (spec/v1/agent-workspace.md, rest-endpoints.md; unauthenticated, validation_error,
// forbidden, not_found, workspace_conflict, workspace_too_large, capability_not_provided,
// run_not_found, workflow_not_found) and the generic ones of rest-endpoints.md for what
// the store itself may answer (rate_limited, storage_limit_exceeded for a quota,
// service_unavailable, internal_error).
const (
	CodeUnauthenticated       = "unauthenticated"
	CodeValidation            = "validation_error"
	CodeForbidden             = "forbidden"
	CodeNotFound              = "not_found"
	CodeConflict              = "workspace_conflict"
	CodeTooLarge              = "workspace_too_large"
	CodeCapabilityNotProvided = "capability_not_provided"
	CodeRunNotFound           = "run_not_found"
	CodeWorkflowNotFound      = "workflow_not_found"
	CodeRateLimited           = "rate_limited"
	CodeStorageLimitExceeded  = "storage_limit_exceeded"
	CodeUnavailable           = "service_unavailable"
	CodeInternal              = "internal_error"
)

// Error is an answer other than success: an HTTP status and the envelope's fields.
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// envelope is the closed error body (error-envelope.schema.json: additionalProperties
// false).
type envelope struct {
	Error   string         `json:"error"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func fail(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

func invalid(msg string) *Error { return fail(http.StatusBadRequest, CodeValidation, msg) }

func notFound(msg string) *Error { return fail(http.StatusNotFound, CodeNotFound, msg) }

// conflict is the 409 of a failed If-Match; current is the file's live version (0: none).
// A failed precondition is final, never "try again": 409, no Retry-After (the envelope has
// no retryable member; only 429 and 503 ask for a retry).
func conflict(current uint64) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeConflict,
		Message: "If-Match does not name the file's current version", Details: map[string]any{"currentVersion": current}}
}

// exists is the 409 of a failed If-None-Match: * (the path holds live version current).
func exists(current uint64) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeConflict,
		Message: "If-None-Match: * but the file exists", Details: map[string]any{"currentVersion": current}}
}

// WriteError answers e as the envelope.
func WriteError(w http.ResponseWriter, e *Error) {
	if e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests {
		after := int64(1)
		if s, ok := e.Details["retryAfter"].(int64); ok && s > 0 {
			after = s
		}
		w.Header().Set("Retry-After", strconv.FormatInt(after, 10))
	}
	writeJSON(w, e.Status, envelope{Error: e.Code, Message: e.Message, Details: e.Details})
}

// methodNotAllowed answers 405 with the Allow header (RFC 9110 §15.5.6) naming the
// methods the route answers.
func methodNotAllowed(w http.ResponseWriter, allow, msg string) {
	w.Header().Set("Allow", allow)
	WriteError(w, fail(http.StatusMethodNotAllowed, CodeValidation, msg))
}

// serveCollection answers a collection route (route names it in the 405 message): GET
// lists, POST creates, any other method is 405 with Allow: GET, POST.
func serveCollection(w http.ResponseWriter, r *http.Request, route string, list, create func()) {
	switch r.Method {
	case http.MethodGet:
		list()
	case http.MethodPost:
		create()
	default:
		methodNotAllowed(w, "GET, POST", route+" answers GET and POST")
	}
}

// WriteUnauthenticated answers 401 with the envelope (and RFC 6750's challenge), for the
// node's authentication middleware on this facade's routes.
func WriteUnauthenticated(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
	WriteError(w, fail(http.StatusUnauthorized, CodeUnauthenticated, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // an artifact's "<" and ">" stay as the proposer wrote them
	err := enc.Encode(v)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal_error","message":"the answer could not be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// fromStore maps an error of the Workbench service to the envelope: the one place this
// surface translates Cairn's codes. A root or workbench the caller may not see reads as
// missing (not_found), as every Cairn surface answers it.
func fromStore(err error) *Error {
	var oe *Error
	if errors.As(err, &oe) {
		return oe
	}
	we := workbench.AsError(err)
	switch we.Code {
	case workbench.CodeNotFound, workbench.CodeSnapshotNotFound, workbench.CodeSnapshotExpired:
		return notFound("No such workspace file.")
	case workbench.CodeInvalidArguments, workbench.CodeNotDirectory, workbench.CodeAlreadyExists, workbench.CodeNotArtifact:
		return invalid(we.Message)
	case workbench.CodePayloadTooLarge:
		return fail(http.StatusRequestEntityTooLarge, CodeTooLarge, we.Message)
	case workbench.CodePermissionDenied:
		return fail(http.StatusForbidden, CodeForbidden, we.Message)
	case workbench.CodeUnauthenticated:
		return fail(http.StatusUnauthorized, CodeUnauthenticated, we.Message)
	case workbench.CodeOutcomeUnknown:
		// OpenWOP registers no code for an ambiguous outcome, so the registered, retriable
		// service_unavailable carries it, and details.outcome "unknown" tells it apart
		// from a refusal that applied nothing: retry with the same Idempotency-Key.
		e := fail(http.StatusServiceUnavailable, CodeUnavailable, we.Message)
		e.Details = map[string]any{"outcome": "unknown", "retryAfter": retryAfterSeconds(we)}
		return e
	case workbench.CodeResourceExhausted:
		if q, ok := we.Details["quota"].(string); ok {
			// A quota or a cap (a root's snapshots, a workbench's run snapshots): final
			// until something is deleted or retired, so not rate_limited, which asks for a
			// retry. OpenWOP's quota answer (error-envelope.schema.json): details.service is
			// the host-service family, details.limit "quota"; quota names which one.
			return &Error{Status: http.StatusUnprocessableEntity, Code: CodeStorageLimitExceeded, Message: we.Message,
				Details: map[string]any{"service": "workspace", "limit": "quota", "quota": q, "max": we.Details["limit"]}}
		}
		e := fail(http.StatusTooManyRequests, CodeRateLimited, we.Message)
		if _, ok := we.Details["retry_after_ms"].(int64); ok {
			e.Details = map[string]any{"retryAfter": retryAfterSeconds(we)} // seconds (rest-endpoints.md's example)
		}
		return e
	}
	if we.Retryable {
		return fail(http.StatusServiceUnavailable, CodeUnavailable, we.Message)
	}
	return fail(http.StatusInternalServerError, CodeInternal, "the store could not serve the request")
}

// retryAfterSeconds is details.retry_after_ms of a Cairn error in whole seconds, rounded
// up, at least 1 (the unit of Retry-After and of details.retryAfter).
func retryAfterSeconds(we *workbench.Error) int64 {
	ms, _ := we.Details["retry_after_ms"].(int64)
	return max(1, (ms+999)/1000)
}
