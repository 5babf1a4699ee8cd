package rest

import (
	"encoding/json"
	"net/http"

	"github.com/cairnstore/cairn/api/workbench"
)

// precondition says which conditional header a write carried, so a failed condition
// answers 412 instead of 409 (DESIGN.md §10).
type precondition int

const (
	noPrecondition precondition = iota
	ifMatch
	ifNoneMatchStar
)

// statusOf maps a wire code to its HTTP status (DESIGN.md §10's table).
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
		workbench.CodeInvalidState, "WorkbenchCommitConflict", "ForkRetentionActive":
		return http.StatusConflict
	case workbench.CodeSnapshotExpired:
		return http.StatusGone
	case workbench.CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case workbench.CodeResourceExhausted:
		return http.StatusTooManyRequests
	case workbench.CodeObjectUnavailable, workbench.CodeNotOwner:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError answers with the contract's envelope.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error, pre precondition) {
	e := workbench.AsError(err)
	status := statusOf(e.Code, pre)
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	if status == http.StatusInternalServerError && h.log != nil {
		h.log.Error("request failed", "method", r.Method, "path", r.URL.EscapedPath(), "err", err)
	}
	writeJSON(w, status, e.Envelope())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
