package workbench

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/cairnstore/cairn/meta"
)

// ComposePart names one source of a composed file: a file's current revision.
type ComposePart struct {
	Path string
	// IfGeneration, when non-zero, is the generation the part must be at (Conflict, a
	// failed precondition, otherwise).
	IfGeneration uint64
}

// ComposeRequest names files of one workbench and the file their bodies, concatenated in
// order, become, in the same agent root.
type ComposeRequest struct {
	Agent string
	// SrcWorkbench holds the parts.
	SrcWorkbench string
	Parts        []ComposePart
	// Workbench and Path name the composed file; the workbench must exist.
	Workbench, Path string
	// ContentType of the composed file; "" is application/octet-stream.
	ContentType string
	// Fields are the composed file's writer-attached fields (meta.ValidateFields); the
	// parts' are not carried over.
	Fields map[string]meta.FieldValue
	// Cond and IfGeneration condition the write as WriteRequest's do.
	Cond         meta.Condition
	IfGeneration uint64
	// RequestID makes the compose idempotent.
	RequestID string
}

// Compose publishes, in one command, a file whose body is the parts' bodies in order: its
// segments are the parts' segments, so no segment is uploaded again (the S3 gateway's
// CompleteMultipartUpload). It reads every part from one linearizable view and proposes
// the write fenced at that view (meta.Header.UploadFence), as Copy does: a part whose
// blobs the collector took since (it was deleted and swept in between) makes the FSM
// refuse the write (BlobDeleting), and Compose answers ObjectUnavailable, retryable,
// having changed nothing. The composed digest is the SHA-256 of the whole body: the first
// part's stored hash state resumed (hashAfter), then the other parts' bytes read back
// through it as a stream, so memory stays bounded whatever the size. The parts are left
// as they are. Errors: InvalidArgument for no parts or a composed file past
// meta.MaxSegmentsPerCommand segments, NotFound for a missing part or workbench (or one
// the caller may not reach), Conflict (failed precondition; details.field "parts[i]" for
// a part) for a part's IfGeneration or the write's condition, PermissionDenied without
// read or write scope.
func (s *Writes) Compose(ctx context.Context, req ComposeRequest) (FileResult, error) {
	if len(req.Parts) == 0 {
		return FileResult{}, invalidArgument("parts", "must name at least one part")
	}
	for _, p := range req.Parts {
		if err := validateTarget(req.Agent, req.SrcWorkbench, p.Path); err != nil {
			return FileResult{}, err
		}
	}
	ct, err := checkRevision(req.Agent, req.Workbench, req.Path, req.ContentType, req.Fields)
	if err != nil {
		return FileResult{}, err
	}
	view, ws, err := s.readSource(ctx, req.Agent, req.SrcWorkbench, req.Workbench)
	if err != nil {
		return FileResult{}, err
	}
	entries := make([]*meta.Entry, len(req.Parts))
	var size int64
	var segments []meta.Segment
	key := []string{"compose", req.Agent, req.SrcWorkbench}
	for i, p := range req.Parts {
		e, merr := view.File(ws, p.Path)
		if merr != nil {
			return FileResult{}, AsError(merr)
		}
		if p.IfGeneration != 0 && e.Generation != p.IfGeneration {
			pe := PreconditionFailed(conflict(e.Generation, p.IfGeneration))
			pe.Details["field"] = fmt.Sprintf("parts[%d]", i)
			return FileResult{}, pe
		}
		if len(segments)+len(e.Segments) > meta.MaxSegmentsPerCommand {
			return FileResult{}, invalidArgument("parts", "the composed file would have more than %d segments", meta.MaxSegmentsPerCommand)
		}
		entries[i] = e
		size += e.Size
		segments = append(segments, e.Segments...)
		key = append(key, p.Path, strconv.FormatUint(e.Generation, 10))
	}
	whole, err := s.hashAfter(ctx, req.Agent, entries[0])
	if err != nil {
		return FileResult{}, err
	}
	for _, e := range entries[1:] {
		if err := s.hashEntry(ctx, req.Agent, e, whole); err != nil {
			return FileResult{}, err
		}
	}
	var body ingested
	if _, err := body.finish(whole, nil); err != nil {
		return FileResult{}, AsError(err)
	}
	key = append(key, req.Workbench, req.Path, fmt.Sprint(req.Cond, req.IfGeneration), ct, string(body.digest[:]), fieldsKey(req.Fields))
	h := meta.Header{RequestID: req.RequestID, UploadFence: view.AppliedVersion(), RequestHash: requestHash(key...)}
	return s.publishFenced(ctx, h, meta.Put{Agent: req.Agent, Workspace: req.Workbench, Path: req.Path,
		Cond: req.Cond, IfGeneration: req.IfGeneration, Size: size, Digest: body.digest, ContentType: ct,
		Segments: segments, HashState: body.hashState, Fields: req.Fields}, "a part was deleted while the file was composed; compose it again")
}

// hashEntry streams e's body through h.
func (s *Writes) hashEntry(ctx context.Context, agent string, e *meta.Entry, h io.Writer) error {
	if e.Size == 0 {
		return nil
	}
	r, err := s.base.openEntry(ctx, agent, e, 0, -1)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := io.Copy(h, r); err != nil {
		return AsError(err)
	}
	return nil
}
