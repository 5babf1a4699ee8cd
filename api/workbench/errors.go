package workbench

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
)

// Wire error codes (WORKBENCH.md §Errors). The surfaces map them to HTTP statuses.
const (
	CodeInvalidArguments        = "InvalidArguments"
	CodeUnknownTool             = "UnknownTool"
	CodePayloadTooLarge         = "PayloadTooLarge"
	CodeNotFound                = "NotFound"
	CodeNotArtifact             = "NotArtifact"
	CodeNotDirectory            = "NotDirectory"
	CodeAlreadyExists           = "AlreadyExists"
	CodeConflict                = "Conflict"
	CodeInvalidUTF8             = "InvalidUtf8"
	CodeNoMatch                 = "NoMatch"
	CodeAmbiguousEdit           = "AmbiguousEdit"
	CodeStructuredDecodeFailed  = "StructuredDecodeFailed"
	CodeReadFenceChanged        = "ReadFenceChanged"
	CodeSnapshotNotFound        = "SnapshotNotFound"
	CodeSnapshotExpired         = "SnapshotExpired"
	CodeForkRetentionActive     = "ForkRetentionActive"
	CodeWorkbenchCommitConflict = "WorkbenchCommitConflict"
	CodeInvalidState            = "InvalidState"
	CodeObjectUnavailable       = "ObjectUnavailable"
	CodeResourceExhausted       = "ResourceExhausted"
	CodeNotOwner                = "NotOwner"
	CodeInternal                = "Internal"
)

// Error is the contract's error envelope: a stable code, a message for people, whether
// the same call may succeed later, and details for programs.
type Error struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Envelope returns the error as the contract's JSON object
// {"status":"error","code",…,"message",…,"retryable",…,"details",{…}}.
func (e *Error) Envelope() map[string]any {
	d := e.Details
	if d == nil {
		d = map[string]any{}
	}
	return map[string]any{"status": "error", "code": e.Code, "message": e.Message, "retryable": e.Retryable, "details": d}
}

// storageFull is the answer to a write refused because the disk under resource ("raft
// log" or "blob store") is full: ResourceExhausted, retryable once space is freed,
// details.resource naming it and details.reason "disk_full" (REST: 507).
func storageFull(resource string) *Error {
	return &Error{Code: CodeResourceExhausted, Retryable: true,
		Message: "the disk under the " + resource + " is full; retry once space is freed",
		Details: map[string]any{"resource": resource, "reason": ReasonDiskFull}}
}

// ReasonDiskFull is details.reason of a ResourceExhausted answer to a full disk.
const ReasonDiskFull = "disk_full"

func newError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Details: map[string]any{}}
}

func invalidArgument(field, format string, args ...any) *Error {
	e := newError(CodeInvalidArguments, "%s: %s", field, fmt.Sprintf(format, args...))
	e.Details["field"] = field
	return e
}

// AsError converts any error from the layers below into an *Error, in one place:
// meta codes keep their code; replication and object-store failures become retryable
// NotOwner / ObjectUnavailable / Internal without naming anything internal.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	var me *meta.Error
	if errors.As(err, &me) {
		if me.Code == meta.CodeBlobDeleting {
			return gcGaveUp() // only the write path retries it itself (gc.go)
		}
		e := &Error{Code: string(me.Code), Message: me.Message, Details: map[string]any{}}
		if me.Field != "" {
			e.Details["field"] = me.Field
			e.Message = me.Field + ": " + me.Message
		}
		if me.CurrentGeneration != 0 {
			e.Details["current_generation"] = me.CurrentGeneration
		}
		if me.Kind != "" {
			e.Details["kind"] = me.Kind
		}
		if me.Path != "" {
			e.Details["conflicting_path"] = me.Path
		}
		if me.OperationID != "" {
			e.Details["operation_id"] = me.OperationID
		}
		if me.State != "" {
			e.Details["state"] = me.State
		}
		// Retryable: the same call may succeed later — after a concurrent change (Conflict),
		// when load drops, or once a restore completes (its destination's InvalidState,
		// its snapshot's ForkRetentionActive).
		e.Retryable = me.Code == meta.CodeConflict || me.Code == meta.CodeResourceExhausted ||
			me.Code == meta.CodeForkRetentionActive || me.Code == meta.CodeInvalidState || me.Code == meta.CodeNotOwner
		return e
	}
	switch {
	case errors.Is(err, shard.ErrNotLeader), errors.Is(err, shard.ErrClosed):
		return &Error{Code: CodeNotOwner, Message: "this node cannot serve the workbench right now; retry", Retryable: true, Details: map[string]any{}}
	case errors.Is(err, shard.ErrTimeout):
		return &Error{Code: CodeInternal, Message: "timed out waiting for the write to commit; it may still apply: retry with the same idempotency key", Retryable: true, Details: map[string]any{}}
	case errors.Is(err, shard.ErrStorageFull):
		return storageFull("raft log")
	case errors.Is(err, blob.ErrStorageFull), errors.Is(err, syscall.ENOSPC):
		return storageFull("blob store")
	case errors.Is(err, blob.ErrUnavailable):
		return &Error{Code: CodeObjectUnavailable, Message: "the object store is unavailable; retry", Retryable: true, Details: map[string]any{}}
	case errors.Is(err, blob.ErrNotFound):
		// Metadata names an object the store does not hold (lost, or deleted behind Cairn's
		// back): not the caller's NotFound, and retrying does not bring it back.
		return &Error{Code: CodeInternal, Message: "an object holding the file's data is missing from the object store", Details: map[string]any{}}
	case errors.Is(err, blob.ErrCorrupt):
		return &Error{Code: CodeInternal, Message: "stored data failed verification", Details: map[string]any{}}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeInternal, Message: "the request was cancelled or timed out", Retryable: true, Details: map[string]any{}}
	}
	return &Error{Code: CodeInternal, Message: "internal error", Details: map[string]any{}}
}
