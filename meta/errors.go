package meta

import (
	"errors"
	"fmt"
)

// Code is a stable error code, the same strings docs/workbench.md#errors uses on the wire.
type Code string

// Error codes the FSM answers with. The surfaces map them to wire codes and HTTP statuses in
// one table (workbench).
const (
	CodeInvalidArguments  Code = "InvalidArguments"
	CodeNotFound          Code = "NotFound"
	CodeNotArtifact       Code = "NotArtifact"
	CodeNotDirectory      Code = "NotDirectory"
	CodeAlreadyExists     Code = "AlreadyExists"
	CodeConflict          Code = "Conflict"
	CodeInvalidState      Code = "InvalidState"
	CodeResourceExhausted Code = "ResourceExhausted"
	CodeInternal          Code = "Internal"
	// Snapshots, commits and restores (docs/workbench.md).
	CodeSnapshotNotFound        Code = "SnapshotNotFound"
	CodeSnapshotExpired         Code = "SnapshotExpired"
	CodeForkRetentionActive     Code = "ForkRetentionActive"
	CodeWorkbenchCommitConflict Code = "WorkbenchCommitConflict"
)

// Error is the deterministic failure of a command or a read. It is a plain value: results
// that carry one are stored in dedupe records and Raft snapshots, so every field encodes.
//
// Message never names internal identifiers (incarnations, root uids, blob keys).
type Error struct {
	Code    Code   `cbor:"1,keyasint"`
	Message string `cbor:"2,keyasint"`
	// Field names the argument that broke a rule (InvalidArguments), e.g. "path".
	Field string `cbor:"3,keyasint,omitempty"`
	// Path is the path the error is about, when it is not the one in the request (for
	// NotDirectory: the ancestor that is a file).
	Path string `cbor:"4,keyasint,omitempty"`
	// CurrentGeneration is the generation the path has now (Conflict, AlreadyExists); 0 when
	// the path has none.
	CurrentGeneration uint64 `cbor:"5,keyasint,omitempty"`
	// Kind is "file" or "directory" for AlreadyExists and NotArtifact.
	Kind string `cbor:"6,keyasint,omitempty"`
	// OperationID names the restore operation a Conflict is about.
	OperationID string `cbor:"7,keyasint,omitempty"`
	// State is the lifecycle state of the snapshot a SnapshotExpired is about.
	State string `cbor:"8,keyasint,omitempty"`
	// Workspace is the workbench a SnapshotExpired's snapshot was taken of.
	Workspace string `cbor:"9,keyasint,omitempty"`
	// SnapshotID is the snapshot a SnapshotExpired is about.
	SnapshotID uint64 `cbor:"10,keyasint,omitempty"`
	// Quota names the quota a ResourceExhausted from a quota check is about (QuotaFiles,
	// ...); Limit is its limit, Used the root's usage and Requested what the command
	// needed on top (quota.go).
	Quota     string `cbor:"11,keyasint,omitempty"`
	Limit     int64  `cbor:"12,keyasint,omitempty"`
	Used      int64  `cbor:"13,keyasint,omitempty"`
	Requested int64  `cbor:"14,keyasint,omitempty"`
	// Reason tells Conflicts of proposals and decisions apart (proposal.go: "stale",
	// "already_decided", "submission_reused", "request_reused"), and names the Conflict
	// of a backup id in use (backup.go: "backup_id_in_use").
	Reason string `cbor:"24,keyasint,omitempty"`
	// Rule names the rule of names an InvalidArguments broke (name.go: RuleNotNFC, ...).
	Rule string `cbor:"25,keyasint,omitempty"`
	// Paths lists the paths a refused change set is about (changeset.go: the paths that
	// changed since it was planned, or whose source is gone), in path order, at most
	// MaxChangeSetConflicts.
	Paths []string `cbor:"26,keyasint,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Is makes errors.Is(err, &Error{Code: c}) match any Error with code c.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

// CodeOf returns the code of err when it is (or wraps) an *Error, else "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalidArg(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidArguments, Field: field, Message: fmt.Sprintf(format, args...)}
}
