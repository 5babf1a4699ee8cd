package workbench

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// CommitInput is workbench_commit's input.
type CommitInput struct {
	ID               string          `json:"id"`
	Manifest         json.RawMessage `json:"manifest"`
	ContentDigestURI string          `json:"content_digest_uri"`
	Replace          *bool           `json:"replace"`
}

// maxCommitAttempts bounds how often a commit recomputes its tree when writes to the
// workbench keep landing between its read and its publish.
const maxCommitAttempts = 8

// treeMembers returns the sealed members of ws as view sees it: every file except the run
// manifest (which the commit itself writes).
func treeMembers(view *meta.View, ws *meta.Workspace, exclude func(string) bool) []TreeMember {
	var out []TreeMember
	view.Files(ws, "", func(p string, e *meta.Entry) bool {
		if !exclude(p) {
			out = append(out, TreeMember{Path: p, DigestURI: DigestURI(e.Digest)})
		}
		return true
	})
	return out
}

// uploadBody stores a small manifest body (inline or in the object store) and describes it
// for a command, with the upload fence its publish must carry (docs/architecture.md#blob-storage-and-garbage-collection; 0 for an
// inline body).
func (s *Lifecycle) uploadBody(ctx context.Context, agent string, data []byte) (meta.FileBody, uint64, error) {
	b, err := s.base.ingest(ctx, agent, bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		return meta.FileBody{}, 0, err
	}
	return meta.FileBody{Size: b.size, Digest: b.digest, ContentType: "application/json", Segments: b.segments, HashState: b.hashState}, b.fence, nil
}

// minFence combines the upload fences of several bodies published by one command: the
// oldest one covers them all (0 = no body in the object store).
func minFence(fences ...uint64) uint64 {
	var out uint64
	for _, f := range fences {
		if f != 0 && (out == 0 || f < out) {
			out = f
		}
	}
	return out
}

// blobDeletingBackoff is how long a manifest publish that met a blob under delete intent
// waits before uploading again.
const blobDeletingBackoff = 100 * time.Millisecond

// commitFields renders a sealed commit the way workbench_commit reports it.
func (s *Lifecycle) commitFields(r Result, agent, id string, c *meta.CommitRecord, replace, replay bool) Result {
	s.base.fileFields(r, agent, id, meta.RunManifestPath)
	r["workbench_path"] = s.base.WorkbenchPath(agent, id)
	r["size_bytes"] = c.EnvelopeSize
	r["generation"] = c.Version
	r["content_digest_uri"] = c.ContentDigestURI
	r["manifest_digest_uri"] = c.ManifestDigestURI
	r["commit_identity"] = c.Identity
	r["envelope_digest_uri"] = DigestURI(c.EnvelopeDigest)
	r["tree_digest_uri"] = c.TreeDigestURI
	r["committed_at_unix_seconds"] = c.CommittedAtMs / 1000
	r["producer"] = c.Producer.String() // who sealed it ("" when unknown)
	r["replace"] = replace
	r["idempotent_replay"] = replay
	return r
}

// Commit implements workbench_commit (docs/workbench.md, workbench_commit): it seals the workbench's
// current tree under a deterministic identity, writing metadata/run_manifest.json and the
// head in one command. Exact retries replay; another identity is WorkbenchCommitConflict
// unless replace is set, and a replace still loses to a concurrent head change.
//
// requestID (REST Idempotency-Key; "" for none) is carried by the commit command. A retry
// under it is answered from the FSM's dedupe record: the first commit, with
// idempotent_replay true as an exact retry without it answers; the id with another
// manifest, content digest or replace is InvalidArguments naming idempotency_key. Under an
// id the view's shortcut to a sealed commit of the same identity is not taken, so the FSM
// checks the id on every path (and, the id unknown, replays the identity itself and keeps
// that answer under it). All a retry leaves besides is the envelope it uploads before its
// command: inline up to Config.InlineMaxBytes, else a blob no record references, which the
// collector removes as an orphan (docs/architecture.md#blob-storage-and-garbage-collection).
func (s *Lifecycle) Commit(ctx context.Context, agent string, in CommitInput, requestID string) (Result, error) {
	if err := validateTarget(agent, in.ID, ""); err != nil {
		return nil, err
	}
	if err := ValidateContentDigestURI(in.ContentDigestURI); err != nil {
		return nil, err
	}
	if err := mayWholeWorkbench(ctx, s.base, agent); err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(in.Manifest); len(t) == 0 || t[0] != '{' {
		return nil, invalidArgument("manifest", "must be a JSON object")
	}
	canon, err := CanonicalManifest(in.Manifest)
	if err != nil {
		return nil, err
	}
	if err := s.base.mayCreate(ctx, agent, in.ID); err != nil {
		return nil, err
	}
	replace := deref(in.Replace)
	identity := CommitIdentity(in.ID, in.ContentDigestURI, ManifestDigestURI(canon))
	// The identity covers the workbench, the content digest and the manifest.
	h := meta.Header{RequestID: requestID, RequestHash: requestHash("commit", agent, identity, strconv.FormatBool(replace))}
	for attempt := 1; ; attempt++ {
		view, err := s.base.readView(ctx, agent)
		if err != nil {
			return nil, AsError(err)
		}
		var rev uint64
		var head string
		var members []TreeMember
		ws, werr := view.Workspace(agent, in.ID)
		switch {
		case werr == nil:
			if c, ok := view.Lifecycle().Commit(ws, identity); ok && requestID == "" {
				return s.commitFields(success(), agent, in.ID, c, c.Replace, true), nil
			}
			rev, head = ws.Revision, ws.HeadIdentity
			members = treeMembers(view, ws, func(p string) bool { return p == meta.RunManifestPath })
		case meta.CodeOf(werr) != meta.CodeNotFound:
			return nil, AsError(werr)
		}
		tree := TreeDigestURI(members)
		_, env, err := RunManifestEnvelope(in.ID, s.base.WorkbenchPath(agent, in.ID), in.ContentDigestURI, canon, time.Now().Unix())
		if err != nil {
			return nil, err
		}
		body, fence, err := s.uploadBody(ctx, agent, env)
		if err != nil {
			return nil, err
		}
		h.UploadFence = fence
		res, perr := s.base.propose(ctx, h, meta.Commit{Agent: agent, Workspace: in.ID, CreateWorkspace: true,
			ExpectRevision: rev, ExpectHead: head, Replace: replace, Identity: identity,
			ContentDigestURI: in.ContentDigestURI, ManifestDigestURI: ManifestDigestURI(canon), TreeDigestURI: tree, Envelope: body})
		if perr != nil {
			again, err := s.commitFailed(ctx, agent, in.ID, replace, attempt, res, perr)
			if again {
				continue
			}
			return nil, err
		}
		if res.Commit == nil || res.Commit.Identity != identity {
			// The core sealed another commit than the one asked for: fail closed.
			return nil, commitProtocolMismatch(identity, res.Commit)
		}
		return s.commitFields(success(), agent, in.ID, res.Commit, res.Commit.Replace, res.Replayed), nil
	}
}

// commitFailed decides on a commit command of workbench id that failed with perr (res, the
// core's answer) at the attempt'th try: true to try again (the envelope's blob was being
// collected, after a wait; or the tree changed under it), else the error to answer, a
// WorkbenchCommitConflict with its published details.
func (s *Lifecycle) commitFailed(ctx context.Context, agent, id string, replace bool, attempt int, res meta.Result, perr *Error) (bool, error) {
	if res.Err != nil && res.Err.Code == meta.CodeBlobDeleting && attempt < maxCommitAttempts {
		// The envelope's blob is being collected: wait, then upload it again.
		select {
		case <-time.After(blobDeletingBackoff):
			return true, nil
		case <-ctx.Done():
			return false, AsError(ctx.Err())
		}
	}
	if perr.Code == CodeConflict && attempt < maxCommitAttempts {
		return true, nil // the tree changed under us: recompute it
	}
	if perr.Code == CodeWorkbenchCommitConflict {
		// The published details: what the caller asked for, and the generation of
		// the run manifest the stored head commit wrote (0 when it has none).
		perr.Details["requested_replace"] = replace
		perr.Details["stored_generation"] = uint64(0)
		if g, ok := perr.Details["current_generation"]; ok {
			perr.Details["stored_generation"] = g
			delete(perr.Details, "current_generation")
		}
		if v, err := s.base.readView(ctx, agent); err == nil {
			if ws, err := v.Workspace(agent, id); err == nil && ws.HeadIdentity != "" {
				perr.Details["current_commit_identity"] = ws.HeadIdentity
			}
		}
		// A replace that lost to a concurrent head change may succeed when sent again;
		// a commit without replace against another head never will.
		perr.Retryable = replace
	}
	return false, perr
}

// commitProtocolMismatch is the contract's WorkbenchCommitProtocolMismatch: the core
// answered a commit with a record of another identity (details.expected_commit_id,
// details.actual_commit_id). Retryable: the request itself was sound.
func commitProtocolMismatch(want string, got *meta.CommitRecord) *Error {
	e := newError(CodeWorkbenchCommitProtocolMismatch, "the core returned a commit identity different from the canonical request")
	e.Retryable = true
	e.Details["expected_commit_id"] = want
	e.Details["actual_commit_id"] = nil
	if got != nil {
		e.Details["actual_commit_id"] = got.Identity
	}
	return e
}

// decodeIdentity checks an at_commit argument: exactly 64 lower-case hex characters.
func decodeIdentity(s string) *Error {
	if len(s) != 64 {
		return invalidArgument("at_commit", "must be exactly 64 hex characters (a commit_identity)")
	}
	if _, err := hex.DecodeString(s); err != nil || s != toLowerASCII(s) {
		return invalidArgument("at_commit", "must be exactly 64 lower-case hex characters (a commit_identity)")
	}
	return nil
}

func toLowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// MaxCommitPageLimit bounds a page of CommitListPage (as MaxSnapshotPageLimit a page of
// snapshots).
const MaxCommitPageLimit = 100

// CommitListPage lists the sealed commits of workbench id for REST (GET
// …/workbenches/{id}/commits; the contract's tools have no commit listing): up to limit
// (1..MaxCommitPageLimit) commits of the workbench's current incarnation, newest first
// (by the shard version that sealed each, meta LifecycleView.Commits), after the commit
// the cursor names ("" starts at the newest). Each entry is the commit as
// workbench_commit reported it (identity, digests, the run manifest's generation and
// size, the time and who sealed it) and head, true for the workbench's head commit; the
// result adds next_cursor (null after the last page) and truncated. A commit's tree reads
// back with a restore or a diff at commit:<identity>. InvalidArguments for a bad limit or
// a cursor issued for another workbench or an earlier incarnation of it; NotFound when
// the workbench does not exist.
func (s *Lifecycle) CommitListPage(ctx context.Context, agent, id, cursorText string, limit int) (Result, error) {
	view, ws, cur, err := s.openPage(ctx, agent, id, "commits", cursorText, limit, MaxCommitPageLimit)
	if err != nil {
		return nil, err
	}
	var after *meta.CommitRecord
	if cursorText != "" {
		if !cur.issuedFor(ws) {
			return nil, invalidArgument("cursor", "was issued for another incarnation of the workbench")
		}
		after = &meta.CommitRecord{Version: uint64(cur.Offset), Identity: cur.After}
	}
	page, more := view.Lifecycle().Commits(ws, after, limit)
	list := make([]Result, 0, len(page))
	for _, c := range page {
		list = append(list, commitEntry(c, c.Identity == ws.HeadIdentity))
	}
	r := success()
	r["workbench_id"] = id
	r["path"] = s.base.WorkbenchPath(agent, id)
	r["commit_count"] = len(list)
	r["commits"] = list
	r["truncated"] = more
	r["next_cursor"] = nil
	if more {
		last := page[len(page)-1]
		r["next_cursor"] = s.base.cursors.encode(ctx, cursor{Kind: "commits", Agent: agent, Workbench: id,
			Incarnation: ws.Incarnation, Created: ws.CreatedVersion, Offset: int64(last.Version), After: last.Identity})
	}
	return r, nil
}

// commitEntry is one commit as CommitListPage lists it: workbench_commit's fields of the
// commit itself (generation: the run manifest's, size_bytes: its envelope's), its time in
// RFC 3339 as well, and head.
func commitEntry(c *meta.CommitRecord, head bool) Result {
	return Result{
		"commit_identity": c.Identity, "generation": c.Version, "size_bytes": c.EnvelopeSize,
		"content_digest_uri": c.ContentDigestURI, "manifest_digest_uri": c.ManifestDigestURI,
		"envelope_digest_uri": DigestURI(c.EnvelopeDigest), "tree_digest_uri": c.TreeDigestURI,
		"committed_at_unix_seconds": c.CommittedAtMs / 1000,
		"committed_at":              time.UnixMilli(c.CommittedAtMs).UTC().Format(time.RFC3339Nano),
		"replace":                   c.Replace, "producer": c.Producer.String(), "head": head,
	}
}
