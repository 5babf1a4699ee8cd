package workbench

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
)

// Writes stores files: a whole body (Write), the end of one (Append), a deletion (Delete).
// Each is one command on the shard of the file's agent root; Write's doc comment walks
// the write path.
//
// Invariants:
//
//   - Every non-inline segment of a body is uploaded before the command that references
//     it is proposed (docs/architecture.md#the-write-path): a failed upload leaves at most
//     unreferenced blobs, never a path pointing at missing data.
//   - A body streams: it holds at most a few segments in memory, each at most
//     blob.ChunkMaxBytes, and passes the redactor (Config.Redactor) before it is cut and
//     hashed.
//   - Appends to one path through this node run one at a time (appendLocks); across
//     nodes the command's generation check decides.
//   - Every write holds one of its principal's upload slots (Config.Limits) while it runs.
//   - A write under a files cap (WriteRequest.MaxWorkbenchFiles) is checked against the
//     cap by the store, in the command that writes; only while the cluster-version gate
//     holds the cap back (a replica of a release before meta.WorkbenchFilesVersion) is
//     it proposed once more without it (uncapped), and then only the surface's own checks
//     bound the count.
type Writes struct {
	base *base
	// appendLocks serializes appends to one path through this node.
	appendLocks pathLocks
}

// Write streams a body into the object store (segments above the inline threshold) and
// publishes it at the path under the request's condition.
//
// The write path, stop by stop (docs/architecture.md#the-write-path tells it as a design;
// this is where each step lives). A REST PUT enters at api/rest/file.go (the handler
// decodes the precondition headers and hands the body over unread); MCP's
// workbench_put_file and the CLI arrive here too.
//
//  1. Checks before any byte is read: validateTarget and checkWritable (the path and
//     section rules), normalizeContentType, meta.ValidateFields, and mayWritePath
//     (access.go, access_paths.go: a root or workbench the caller may not reach answers
//     as missing, a path outside its prefixes is PermissionDenied).
//  2. base.admitUpload (limits.go): the principal's upload cap; then ingestBody (redact.go, for
//     tenants with secret redaction) and ingest (service.go): the body is read once, hashed
//     while it is cut into segments (content-defined chunking past 8 MiB), each segment
//     above the inline limit compressed when that pays and uploaded put-if-absent under
//     its content address, holding its weight of the node's ingest budget (its length when
//     declared and at most one segment, else a slot: ingest_budget.go) from its first
//     32 KiB to its end (ingest_gate.go). Nothing in the metadata has changed yet.
//  3. proposeBlobs (publish.go): the meta.Put command, fenced against the garbage
//     collector (meta.Header.UploadFence); a publish the FSM refuses with BlobDeleting
//     uploads what the collector took and is proposed again.
//  4. propose and proposeRaw (service.go): the write scope and reserved workbenches,
//     absentRoot (access.go: a missing root is created, a hidden one answers as missing),
//     then Cores.For(agent).Propose with the producer stamped in the header.
//  5. shard/host core.go (rootCore.Propose, Host.propose): the root's placement on its
//     shard, the cluster-version gate (versions.go), then the shard's leader: the local
//     replica, or the leader over the peer port (peer.go), a forwarded call ending when
//     the leader changes (forwardContext) and an idempotent one retried after an unknown
//     outcome.
//  6. shard/propose.go (Shard.Propose): the leader's clock stamped, the command encoded
//     (meta.EncodeCommand), the disk-space guard, raft Apply, waiting at most the
//     caller's deadline (ErrTimeout: outcome unknown).
//  7. shard/fsm.go (raftFSM.Apply) on every replica: meta.FSM.Apply decodes the command
//     through the op table (meta/ops.go) and applies fileApplier.put (meta/write.go): the
//     condition, the generation, the version chain, reference counts, indexes, the
//     dedupe record and the change feed, deterministically.
//  8. Back here: fileResult (this file) shapes the answer; the surface writes it (REST: ETag is the
//     generation).
func (s *Writes) Write(ctx context.Context, req WriteRequest) (FileResult, error) {
	ct, err := checkRevision(req.Agent, req.Workbench, req.Path, req.ContentType, req.Fields)
	if err != nil {
		return FileResult{}, err
	}
	req.ContentType = ct
	if err := mayWritePath(ctx, s.base, req.Agent, req.Workbench, req.Path); err != nil {
		return FileResult{}, err
	}
	done, werr := s.base.admitUpload(ctx)
	if werr != nil {
		return FileResult{}, werr
	}
	defer done()
	body, err := s.base.ingestBody(ctx, req.Agent, req.Body, req.SizeHint, nil)
	if err != nil {
		return FileResult{}, err
	}
	defer body.release()
	if req.AfterBody != nil {
		more, err := req.AfterBody(body.digest)
		if err != nil {
			return FileResult{}, err
		}
		if req.Fields = withBodyFields(req.Fields, more); len(more) > 0 {
			if err := meta.ValidateFields("fields", req.Fields); err != nil {
				return FileResult{}, AsError(err)
			}
		}
	}
	h := meta.Header{RequestID: req.RequestID, RequestHash: requestHash("put", req.Agent, req.Workbench, req.Path,
		fmt.Sprint(req.Cond, req.IfGeneration, req.Executable, req.CreateWorkbench), req.ContentType, string(body.digest[:]),
		fieldsKey(req.Fields))}
	res, werr := s.base.proposeBlobs(ctx, h, meta.Put{Agent: req.Agent, Workspace: req.Workbench, Path: req.Path,
		CreateWorkspace: req.CreateWorkbench, Cond: req.Cond, IfGeneration: req.IfGeneration, Size: body.size,
		Digest: body.digest, ContentType: req.ContentType, Executable: req.Executable, Segments: body.segments, HashState: body.hashState,
		Fields: req.Fields, MaxWorkbenchFiles: req.MaxWorkbenchFiles}, body)
	if werr != nil && req.Cond == meta.CondIfGeneration && isMissingForGeneration(werr) {
		return FileResult{}, missingForGeneration(req.IfGeneration)
	}
	if werr != nil {
		return FileResult{}, werr
	}
	return s.fileResult(req.Agent, req.Workbench, req.Path, res), nil
}

// MayWrite answers what Write would answer for a write of path in workbench id of agent
// before it reads a byte of the body: InvalidArguments for a bad name or path, NotFound
// for a root or workbench the caller may not reach, PermissionDenied without the write
// scope or for a path outside the caller's prefixes (mayWritePath). It writes nothing: a
// surface that keeps its own records of a write to come (the S3 gateway's multipart
// uploads) asks it before it records one.
func (s *Writes) MayWrite(ctx context.Context, agent, id, path string) error {
	if err := validateTarget(agent, id, path); err != nil {
		return err
	}
	if err := checkWritable(path); err != nil {
		return err
	}
	if err := mayWritePath(ctx, s.base, agent, id, path); err != nil {
		return err
	}
	return nil
}

func (s *Writes) fileResult(agent, id, path string, res meta.Result) FileResult {
	sec, rel := splitSection(path)
	return FileResult{WorkbenchID: id, Path: path, Section: sec, RelativePath: rel,
		Presentation: s.base.WorkbenchPath(agent, id) + "/" + path, Size: res.Size, Generation: res.Generation,
		Digest: res.Digest, ContentType: res.ContentType, Executable: res.Executable, Created: res.Created, Replayed: res.Replayed,
		Ordinal: res.Ordinal}
}

// Append adds the body at the end of the file in O(delta): it resumes the stored hash
// state over the new bytes, uploads only the new segments and proposes a command that
// carries only them. Without IfGeneration it retries generation races itself.
func (s *Writes) Append(ctx context.Context, req AppendRequest) (AppendResult, error) {
	if err := validateTarget(req.Agent, req.Workbench, req.Path); err != nil {
		return AppendResult{}, err
	}
	if err := checkWritable(req.Path); err != nil {
		return AppendResult{}, err
	}
	ct, werr := normalizeContentType(req.ContentType)
	if werr != nil {
		return AppendResult{}, werr
	}
	req.ContentType = ct
	if err := mayWritePath(ctx, s.base, req.Agent, req.Workbench, req.Path); err != nil {
		return AppendResult{}, err
	}
	done, werr := s.base.admitUpload(ctx)
	if werr != nil {
		return AppendResult{}, werr
	}
	defer done()
	// Appends to one path through this node take turns: they would only lose generation
	// races to each other. Others (other writers, other nodes) can still move the file on;
	// then the append rebases below.
	unlock := s.appendLocks.lock(req.Agent, req.Workbench, req.Path)
	defer unlock()
	cur, err := s.currentEntry(ctx, req.Agent, req.Workbench, req.Path, req.CreateWorkbench)
	if err != nil {
		return AppendResult{}, err
	}
	resume, err := s.hashAfter(ctx, req.Agent, cur)
	if err != nil {
		return AppendResult{}, err
	}
	body, err := s.base.ingestBody(ctx, req.Agent, req.Body, req.SizeHint, resume)
	if err != nil {
		return AppendResult{}, err
	}
	defer body.release()
	if body.size == 0 && cur != nil && (req.IfGeneration == 0 || req.IfGeneration == cur.Generation) {
		// Appending nothing changes nothing: no new generation (like edit's no_change).
		info := s.base.fileInfo(req.Agent, req.Workbench, req.Path, cur)
		return AppendResult{FileResult: FileResult{WorkbenchID: info.WorkbenchID, Path: info.Path, Section: info.Section,
			RelativePath: info.RelativePath, Presentation: info.Presentation, Size: cur.Size, Generation: cur.Generation,
			Digest: cur.Digest, ContentType: cur.ContentType, Executable: cur.Executable}, AppendDigest: body.appendDigest}, nil
	}
	h := meta.Header{RequestID: req.RequestID, RequestHash: requestHash("append", req.Agent, req.Workbench, req.Path,
		strconv.FormatUint(req.IfGeneration, 10), string(body.appendDigest[:]), strconv.FormatInt(body.size, 10))}
	for attempt := 1; ; attempt++ {
		expect := uint64(0)
		var curSize int64
		if cur != nil {
			expect, curSize = cur.Generation, cur.Size
		}
		if req.IfGeneration != 0 && cur == nil {
			return AppendResult{}, missingForGeneration(req.IfGeneration)
		}
		if req.IfGeneration != 0 && expect != req.IfGeneration {
			return AppendResult{}, PreconditionFailed(conflict(expect, req.IfGeneration))
		}
		res, werr := s.base.proposeBlobs(ctx, h, meta.Append{Agent: req.Agent, Workspace: req.Workbench, Path: req.Path,
			CreateWorkspace: req.CreateWorkbench, ExpectGeneration: expect, Segments: body.segments,
			AppendedBytes: body.size, NewSize: curSize + body.size, NewDigest: body.digest, NewHashState: body.hashState,
			ContentType: req.ContentType, Executable: req.Executable, InlineMaxBytes: s.base.cfg.InlineMaxBytes}, body)
		if werr == nil {
			return AppendResult{FileResult: s.fileResult(req.Agent, req.Workbench, req.Path, res),
				AppendedBytes: body.size, AppendDigest: body.appendDigest}, nil
		}
		if req.IfGeneration != 0 && isMissingForGeneration(werr) {
			return AppendResult{}, missingForGeneration(req.IfGeneration)
		}
		if werr.Code == CodeConflict && req.IfGeneration != 0 {
			return AppendResult{}, PreconditionFailed(werr)
		}
		if werr.Code != CodeConflict || attempt == maxAppendAttempts {
			return AppendResult{}, werr
		}
		// Lost a race: back off a little, then rebase the same new bytes on the file as it
		// is now.
		if err := backoff(ctx, attempt); err != nil {
			return AppendResult{}, AsError(err)
		}
		if cur, err = s.currentEntry(ctx, req.Agent, req.Workbench, req.Path, req.CreateWorkbench); err != nil {
			return AppendResult{}, err
		}
		if resume, err = s.hashAfter(ctx, req.Agent, cur); err != nil {
			return AppendResult{}, err
		}
		if err := s.rehash(ctx, req.Agent, body, resume); err != nil {
			return AppendResult{}, err
		}
	}
}

// checkRevision checks what a whole-file write (Write, Copy, Compose) asks of its target
// before it reads anything: the path (validateTarget, checkWritable), the content type,
// returned normalized ("" is application/octet-stream), and the fields
// (meta.ValidateFields).
func checkRevision(agent, id, path, contentType string, fields map[string]meta.FieldValue) (string, error) {
	if err := validateTarget(agent, id, path); err != nil {
		return "", err
	}
	if err := checkWritable(path); err != nil {
		return "", err
	}
	ct, werr := normalizeContentType(contentType)
	if werr != nil {
		return "", werr
	}
	if err := meta.ValidateFields("fields", fields); err != nil {
		return "", AsError(err)
	}
	return ct, nil
}

// withBodyFields returns fields with the fields a body yielded added: a copy when both
// have some (the caller's map is never changed), a name in fields keeping its value.
func withBodyFields(fields, more map[string]meta.FieldValue) map[string]meta.FieldValue {
	if len(more) == 0 {
		return fields
	}
	out := make(map[string]meta.FieldValue, len(fields)+len(more))
	for n, v := range more {
		out[n] = v
	}
	for n, v := range fields {
		out[n] = v
	}
	return out
}

// currentEntry returns the live entry at path, nil when there is none (or when the
// workbench is missing and may be created).
func (s *Writes) currentEntry(ctx context.Context, agent, id, path string, create bool) (*meta.Entry, error) {
	view, err := s.base.readView(ctx, agent)
	if err != nil {
		return nil, AsError(err)
	}
	ws, err := view.Workspace(agent, id)
	if err != nil {
		if create && meta.CodeOf(err) == meta.CodeNotFound {
			return nil, nil
		}
		return nil, AsError(err)
	}
	e, err := view.File(ws, path)
	if meta.CodeOf(err) == meta.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, AsError(err)
	}
	return e, nil
}

// hashAfter returns a SHA-256 state positioned after e's body (a fresh one for nil),
// rehashing the body once when its stored state cannot be restored.
func (s *Writes) hashAfter(ctx context.Context, agent string, e *meta.Entry) (hash.Hash, error) {
	if e == nil {
		return sha256.New(), nil
	}
	if h, ok := resumeHash(e); ok {
		return h, nil
	}
	h := sha256.New()
	r, err := s.base.openEntry(ctx, agent, e, 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := io.Copy(h, r); err != nil {
		return nil, AsError(err)
	}
	return h, nil
}

// rehash recomputes an ingested append's whole-body digest and state on a new base. It
// hashes the bytes the body kept for another upload (retain) where it has them, and reads
// the other segments back from the object store. The body is not published yet, so the
// collector may have deleted its blobs as orphans meanwhile (an append that kept losing
// races past the grace): a kept body goes on, and the bytes of a larger one are gone, as
// proposeBlobs answers (gcDeletedBody).
func (s *Writes) rehash(ctx context.Context, agent string, b *ingested, resume hash.Hash) error {
	for _, sg := range b.segments {
		if sg.IsInline() {
			resume.Write(sg.Inline)
			continue
		}
		if kept, ok := b.retained[sg.Digest]; ok {
			resume.Write(kept.Bytes())
			continue
		}
		data, free, werr := s.base.loadSegment(ctx, agent, sg, 0, sg.Size)
		if werr != nil {
			if _, err := s.base.blobs.Stat(ctx, blob.Key{Root: b.rootUID, Digest: blob.Digest(sg.Digest)}); errors.Is(err, blob.ErrNotFound) {
				return gcDeletedBody()
			}
			return werr
		}
		resume.Write(data)
		free()
	}
	own := b.appendDigest
	if _, err := b.finish(resume, nil); err != nil {
		return err
	}
	b.appendDigest = own
	return nil
}

// Delete removes a file; ifGeneration 0 means unconditional. It returns the shard version
// of the delete. A file no longer at ifGeneration is Conflict, not retryable (a failed
// precondition, PreconditionFailed).
func (s *Writes) Delete(ctx context.Context, agent, id, path string, ifGeneration uint64, requestID string) (uint64, error) {
	if err := validateTarget(agent, id, path); err != nil {
		return 0, err
	}
	if path == "" {
		return 0, invalidArgument("path", "must not be empty")
	}
	if path == meta.RestoreManifestPath {
		// It is what makes a restored workbench a fork (its parent and base, fork.go):
		// without it the fork could be neither merged nor discarded, its pin kept alive.
		return 0, invalidArgument("path", "%q is reserved: it records the restore this workbench came from; discard the fork or delete the workbench instead", path)
	}
	if err := mayWrite(ctx, agent); err != nil {
		return 0, err
	}
	h := meta.Header{RequestID: requestID, RequestHash: requestHash("delete", agent, id, path, strconv.FormatUint(ifGeneration, 10))}
	res, werr := s.base.propose(ctx, h, meta.Delete{Agent: agent, Workspace: id, Path: path, IfGeneration: ifGeneration})
	if werr != nil {
		if ifGeneration != 0 && werr.Code == CodeConflict {
			return 0, PreconditionFailed(werr)
		}
		return 0, werr
	}
	return res.Generation, nil
}
