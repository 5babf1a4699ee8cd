package workbench

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cairnstore/cairn/meta"
)

// CopyRequest names a file's current revision and where a copy of it goes, in the same
// agent root.
type CopyRequest struct {
	Agent string
	// SrcWorkbench and SrcPath name the source file.
	SrcWorkbench, SrcPath string
	// IfSrcGeneration, when non-zero, is the source generation the copy must read
	// (Conflict, a failed precondition, otherwise).
	IfSrcGeneration uint64
	// SrcGeneration, when non-zero, copies the source's retained version with that
	// generation (a past version, from its history) instead of its live one: NotFound when
	// the path retains none.
	SrcGeneration uint64
	// Workbench and Path name the copy; the workbench must exist.
	Workbench, Path string
	// ContentType replaces the source's; "" keeps it.
	ContentType string
	// ReplaceFields gives the copy Fields instead of the source's fields (checked by
	// meta.ValidateFields); without it the copy keeps the source's.
	ReplaceFields bool
	Fields        map[string]meta.FieldValue
	// Cond and IfGeneration condition the copy's write as WriteRequest's do.
	Cond         meta.Condition
	IfGeneration uint64
	// RequestID makes the copy idempotent.
	RequestID string
}

// Copy writes a new revision at req.Path that references the source revision's segments:
// no byte is read or written in the object store, whatever the size, and the copy has the
// source's digest (and its fields, unless ReplaceFields). It reads the source from a
// linearizable view and proposes the write fenced at that view (meta.Header.UploadFence):
// if the collector took the source's blobs since (the source was deleted and swept in
// between), the FSM refuses the write (BlobDeleting) and Copy answers ObjectUnavailable,
// retryable, having changed nothing.
// Errors: NotFound for a missing source or target workbench (or one the caller may not
// reach), NotArtifact for a directory, Conflict (failed precondition) for IfSrcGeneration
// or the write's condition, PermissionDenied without read or write scope.
func (s *Writes) Copy(ctx context.Context, req CopyRequest) (FileResult, error) {
	if err := validateTarget(req.Agent, req.SrcWorkbench, req.SrcPath); err != nil {
		return FileResult{}, err
	}
	var replaced map[string]meta.FieldValue
	if req.ReplaceFields {
		replaced = req.Fields
	}
	normalized, err := checkRevision(req.Agent, req.Workbench, req.Path, req.ContentType, replaced)
	if err != nil {
		return FileResult{}, err
	}
	if req.ContentType != "" { // "" keeps the source's
		req.ContentType = normalized
	}
	view, ws, err := s.readSource(ctx, req.Agent, req.SrcWorkbench, req.Workbench)
	if err != nil {
		return FileResult{}, err
	}
	e, merr := view.File(ws, req.SrcPath)
	if req.SrcGeneration != 0 {
		var fv meta.FileVersion
		fv, merr = view.History().FileAt(ws, req.SrcPath, req.SrcGeneration)
		e = fv.Entry
	}
	if merr != nil {
		return FileResult{}, AsError(merr)
	}
	if req.IfSrcGeneration != 0 && e.Generation != req.IfSrcGeneration {
		return FileResult{}, PreconditionFailed(conflict(e.Generation, req.IfSrcGeneration))
	}
	ct := req.ContentType
	if ct == "" {
		ct = e.ContentType
	}
	fields := e.Fields
	if req.ReplaceFields {
		fields = req.Fields
	}
	h := meta.Header{RequestID: req.RequestID, UploadFence: view.AppliedVersion(),
		RequestHash: requestHash("copy", req.Agent, req.SrcWorkbench, req.SrcPath, strconv.FormatUint(e.Generation, 10),
			req.Workbench, req.Path, fmt.Sprint(req.Cond, req.IfGeneration), ct, string(e.Digest[:]), fieldsKey(fields))}
	return s.publishFenced(ctx, h, meta.Put{Agent: req.Agent, Workspace: req.Workbench, Path: req.Path,
		Cond: req.Cond, IfGeneration: req.IfGeneration, Size: e.Size, Digest: e.Digest, ContentType: ct,
		Executable: e.Executable, Segments: e.Segments, HashState: e.HashState, Fields: fields}, "the source was deleted while it was copied; read it again")
}

// readSource checks that the caller may read agent's root and write to workbench dst, and
// resolves the source workbench src in a linearizable view: where Copy and Compose read the
// files whose segments their write references (the view they fence the write at).
func (s *Writes) readSource(ctx context.Context, agent, src, dst string) (*meta.View, *meta.Workspace, error) {
	if err := mayRead(ctx, agent); err != nil {
		return nil, nil, err
	}
	if err := s.base.mayCreate(ctx, agent, dst); err != nil {
		return nil, nil, err
	}
	view, ws, _, err := s.base.resolve(ctx, agent, src, At{})
	return view, ws, err
}

// publishFenced proposes a put of segments another file references, its header fenced at
// the view that file was read from: a put the FSM refuses because the collector took
// those blobs since (BlobDeleting) is ObjectUnavailable, retryable, with gone as its
// message, and a failed condition is a failed precondition.
func (s *Writes) publishFenced(ctx context.Context, h meta.Header, put meta.Put, gone string) (FileResult, error) {
	res, err := s.base.proposeRaw(ctx, h, put)
	if err != nil {
		return FileResult{}, AsError(err)
	}
	if res.Err == nil {
		return s.fileResult(put.Agent, put.Workspace, put.Path, res), nil
	}
	werr := AsError(res.Err)
	switch {
	case res.Err.Code == meta.CodeBlobDeleting:
		return FileResult{}, &Error{Code: CodeObjectUnavailable, Retryable: true, Details: map[string]any{}, Message: gone}
	case put.Cond == meta.CondIfGeneration && isMissingForGeneration(werr):
		return FileResult{}, missingForGeneration(put.IfGeneration)
	case put.Cond != meta.CondNone && werr.Code == CodeConflict:
		return FileResult{}, PreconditionFailed(werr)
	}
	return FileResult{}, werr
}
