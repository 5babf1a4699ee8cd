package workbench

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
)

// Wire error codes (docs/workbench.md#errors). The surfaces map them to HTTP statuses.
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
	// CodeWorkbenchCommitProtocolMismatch and CodeRestoreProtocolMismatch: the core answered
	// a commit or a restore with another record than the one asked for (the adapter fails
	// closed rather than report it); retryable.
	CodeWorkbenchCommitProtocolMismatch = "WorkbenchCommitProtocolMismatch"
	CodeRestoreProtocolMismatch         = "RestoreProtocolMismatch"
	CodeInvalidState                    = "InvalidState"
	CodeObjectUnavailable               = "ObjectUnavailable"
	CodeResourceExhausted               = "ResourceExhausted"
	// CodeRoutingUnavailable: ownership of the root is moving (no leader, or the shard
	// does not own the root here); retryable after details.retry_after_ms.
	CodeRoutingUnavailable = "RoutingUnavailable"
	// CodeDataCorrupted: stored bytes failed verification against their digest; not
	// retryable on the replica that found it.
	CodeDataCorrupted = "DataCorrupted"
	// CodePermissionDenied: the principal may use the agent root but lacks the scope the
	// call needs (details.scope), or is not an admin on an admin route (403). A root it
	// may not use answers NotFound instead, exactly as a root that does not exist
	// (workbench/auth/doc.go).
	CodePermissionDenied = "PermissionDenied"
	// CodeUnauthenticated: the request carries no valid API key (REST 401 with
	// WWW-Authenticate: Bearer).
	CodeUnauthenticated = "Unauthenticated"
	// CodeOutcomeUnknown: a write reached the replication layer but its commit could not
	// be confirmed in time (a leader lost, a quorum unreachable); it may or may not apply.
	// Retryable with the same request id (REST Idempotency-Key), which the shard
	// deduplicates: the retry returns the first answer if the write applied and applies it
	// otherwise. Cairn's addition to the contract's codes (docs/workbench.md §Errors).
	CodeOutcomeUnknown = "OutcomeUnknown"
	CodeInternal       = "Internal"
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

// RoutingRetryAfter is how long a RoutingUnavailable asks the caller to wait
// (details.retry_after_ms; REST's Retry-After rounds it up to whole seconds).
const RoutingRetryAfter = 250 * time.Millisecond

// RoutingUnavailable is the contract's "ownership is moving, try again": retryable, with
// details.retry_after_ms. Every surface answers it the same way (REST: 503 with
// Retry-After).
func RoutingUnavailable(msg string) *Error {
	return &Error{Code: CodeRoutingUnavailable, Message: msg, Retryable: true,
		Details: map[string]any{"retry_after_ms": RoutingRetryAfter.Milliseconds()}}
}

// OutcomeRetryAfter is how long an OutcomeUnknown asks the caller to wait before the
// retry (details.retry_after_ms): about one leader election with the cluster's 500 ms
// timeouts (docs/architecture.md, Replication).
const OutcomeRetryAfter = time.Second

// outcomeUnknown is the answer to a write whose commit could not be confirmed
// (shard/outcome.ErrUnknown): it may still apply, so the only safe retry is the same
// request under the same request id. details.outcome is "unknown" for programs that
// read details rather than codes.
func outcomeUnknown() *Error {
	return &Error{Code: CodeOutcomeUnknown, Retryable: true,
		Message: "the write was not confirmed in time and may or may not have applied: retry it with the same Idempotency-Key, which applies it at most once, or read the current state before writing it again",
		Details: map[string]any{"outcome": "unknown", "retry_after_ms": OutcomeRetryAfter.Milliseconds()}}
}

// PreconditionFailed is e as the answer to a condition the caller set (REST If-Match
// and If-None-Match, a generation or revision the caller named): the same e, not
// retryable, since the same call names the same stale condition and fails the same way
// until the caller re-reads and decides again (RFC 9110 §13.1: a failed precondition is
// the client's to resolve). A Conflict the service met on its own, in a compare-and-swap
// the caller did not ask for (an edit that kept losing races, a restore still running),
// stays retryable. e itself is not changed.
func PreconditionFailed(e *Error) *Error {
	cp := *e
	cp.Retryable = false
	return &cp
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
// RoutingUnavailable / OutcomeUnknown / ObjectUnavailable / Internal without naming
// anything internal.
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
		if me.Code == meta.CodeNotOwner {
			return RoutingUnavailable("this shard does not own the agent root here; retry")
		}
		if me.Code == meta.CodeRootMoving {
			// A move between shards holds the root's writes for about a second; the retry
			// (with the same idempotency key) is routed again (docs/architecture.md,
			// "Moving a root").
			return RoutingUnavailable("the agent root is being moved between shards; retry")
		}
		if me.Code == meta.CodeUpgradeInProgress {
			return RoutingUnavailable(me.Message)
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
		if me.Reason != "" {
			e.Details["reason"] = me.Reason // a conflict of proposals (meta/proposal.go)
		}
		if me.Rule != "" {
			e.Details["rule"] = me.Rule // a rule of names (meta/name.go)
		}
		if len(me.Paths) > 0 {
			e.Details["paths"] = me.Paths // the paths a change set was refused for (meta/changeset.go)
		}
		if me.Code == meta.CodeSnapshotExpired {
			// The contract's details.source: what the expired read point was of.
			e.Details["source"] = me.Workspace
			e.Details["snapshot_id"] = me.SnapshotID
		}
		if me.Quota != "" {
			// A quota check (meta/quota.go): which quota, its limit, the root's usage and
			// what the request needed on top. Not retryable: it takes an admin or a delete.
			e.Details["quota"] = me.Quota
			e.Details["limit"] = me.Limit
			e.Details["usage"] = me.Used
			e.Details["requested"] = me.Requested
		}
		// Retryable: the same call may succeed later — after a concurrent change (Conflict;
		// not a backup id another backup holds, which takes another id or a release),
		// when load drops, or once a restore completes (its destination's InvalidState,
		// its snapshot's ForkRetentionActive).
		e.Retryable = me.Code == meta.CodeConflict && me.Reason != meta.ReasonBackupIDInUse || me.Code == meta.CodeResourceExhausted && me.Quota == "" ||
			me.Code == meta.CodeForkRetentionActive || me.Code == meta.CodeInvalidState
		return e
	}
	switch {
	case errors.Is(err, ErrCoreUnavailable):
		return RoutingUnavailable("this node cannot serve the workbench right now; retry")
	case errors.Is(err, ErrOutcomeUnknown):
		return outcomeUnknown()
	case errors.Is(err, ErrCoreStorageFull):
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
		return dataCorrupted(nil)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeInternal, Message: "the request was cancelled or timed out", Retryable: true, Details: map[string]any{}}
	}
	return &Error{Code: CodeInternal, Message: "internal error", Details: map[string]any{}}
}

// dataCorrupted is the answer when stored bytes failed verification against their digest
// (integrity.go): not retryable, since the same bytes fail the same way until the content
// is uploaded again; digest, when known, names the damaged segment.
func dataCorrupted(digest *meta.Digest) *Error {
	e := newError(CodeDataCorrupted, "stored data of this file failed verification against its digest and is not served; "+
		"writing the same content again repairs it")
	if digest != nil {
		e.Details["digest"] = DigestURI(*digest)
	}
	return e
}
