package workbench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// RestoreInput is workbench_restore's input.
type RestoreInput struct {
	ID            string          `json:"id"`
	DestinationID string          `json:"destination_id"`
	AtSnapshot    json.RawMessage `json:"at_snapshot"`
	AtCommit      *string         `json:"at_commit"`
}

// RestoreManifestSchema names the restore manifest format restores write (NoKV 0.11):
// restored_from.source names the snapshot or the commit restored. Restores made before it
// wrote RestoreManifestSchemaV1, which stays readable where it is stored: nothing reads a
// restore manifest back to drive a restore (results and replays come from the operation
// record), and find and read treat it as the JSON it is.
const (
	RestoreManifestSchema   = "nokv.workbench.restore_manifest.v2"
	RestoreManifestSchemaV1 = "nokv.workbench.restore_manifest.v1"
)

// RestoreOperationID derives the deterministic id of a restore (docs/workbench.md, workbench_restore):
// hex SHA-256 over a domain string, the agent root, the source incarnation, the source
// point ("snapshot:<id>" or "commit:<identity>") and the destination name, each
// length-prefixed. An exact retry derives the same id and so converges.
func RestoreOperationID(agent string, sourceIncarnation uint64, source, destination string) string {
	h := sha256.New()
	h.Write([]byte("cairn.restore.operation.v1\x00"))
	lengthPrefixed(h, agent)
	lengthPrefixed(h, strconv.FormatUint(sourceIncarnation, 10))
	lengthPrefixed(h, source)
	lengthPrefixed(h, destination)
	return hex.EncodeToString(h.Sum(nil))
}

// Restore implements workbench_restore: a new workbench of the same root from a
// snapshot or a commit, without copying a byte of file data. The destination stays
// invisible until one final command publishes it; a retry after success replays while the
// workbench it made lives, a retry while it runs is a retryable Conflict naming the
// operation.
//
// Begun again. The operation id is the request's identity (root, source
// incarnation, point, destination name), and a completed operation's record outlives its
// destination for the retention window; so a request identical to one whose destination
// was deleted since (a fork discarded and made again at the same base) would replay the
// old answer and create nothing. When the linearizable view holds the operation complete,
// the begin is proposed with Again, and the FSM decides in its own state, in the one
// command: while the workbench the operation made (its name and incarnation) lives it
// replays, as before (a retry whose first answer was lost creates nothing twice); once
// it is gone it begins the operation again under the same id (a name now held by another
// workbench is AlreadyExists), replacing the record. Being one command, there is no step
// to crash between: a crash after it leaves a copying operation the resumer finishes,
// which an exact retry meets as a retryable Conflict and then replays. Two identical
// requests racing both propose Again: the first begins, the second meets the copying
// record (Conflict, retryable) or, once it completed, replays it. Under an idempotency
// key (a fork's, or requestID below) the key is on that begin, so a retry under it
// answers the restore begun again. Again needs cluster version 7
// (meta.RestoreAgainVersion); while an older replica holds it back (UpgradeInProgress)
// and the destination lived at the view, the plain begin answers (its replay), else the
// retryable refusal stands. A view without a
// completed record proposes the plain begin (no version needed for a first restore); only
// an operation that a racer completes and someone deletes the destination of between that
// view and the command replays stale, as every such replay did before Again.
//
// requestID (REST Idempotency-Key; "" for none) makes the request idempotent as a
// request, whatever became of its source since: first a probe under it (restoreReplay)
// asks the FSM whether it landed, before anything is read; then the begin carries it.
// A retry of a restore that landed answers that restore (idempotent_replay true, as an
// exact retry without the id answers), also after its source or snapshot went; the id
// with another source, point or destination is InvalidArguments naming idempotency_key.
func (s *Lifecycle) Restore(ctx context.Context, agent string, in RestoreInput, requestID string) (Result, error) {
	at, err := restoreArgs(ctx, s.base, agent, in)
	if err != nil {
		return nil, err
	}
	var h meta.Header
	if requestID != "" {
		h = meta.Header{RequestID: requestID, RequestHash: requestHash("restore", agent, in.ID, in.DestinationID, at.String(), deref(in.AtCommit))}
		if r, err := s.restoreReplay(ctx, agent, in, h); r != nil || err != nil {
			return r, err
		}
	}
	return s.restoreAt(ctx, agent, in, at, h)
}

// restore is Restore whose first command (the restore begin) carries h: Attempts.Fork's
// request id (the fork probes for it itself, forkReplay).
func (s *Lifecycle) restore(ctx context.Context, agent string, in RestoreInput, h meta.Header) (Result, error) {
	at, err := restoreArgs(ctx, s.base, agent, in)
	if err != nil {
		return nil, err
	}
	return s.restoreAt(ctx, agent, in, at, h)
}

// restoreArgs checks a restore's arguments and that the caller may make its destination
// from its source, before anything is read: the snapshot selector (live when the restore
// is from a commit).
func restoreArgs(ctx context.Context, b *base, agent string, in RestoreInput) (At, error) {
	if err := validateTarget(agent, in.ID, ""); err != nil {
		return At{}, err
	}
	if err := meta.ValidateName("destination_id", in.DestinationID); err != nil {
		return At{}, AsError(err)
	}
	at, aerr := ParseAtSnapshot(in.AtSnapshot)
	if aerr != nil {
		return At{}, aerr
	}
	if at.Live() == (in.AtCommit == nil) {
		return At{}, invalidArgument("at_snapshot", "give exactly one of at_snapshot and at_commit")
	}
	if in.AtCommit != nil {
		if err := decodeIdentity(*in.AtCommit); err != nil {
			return At{}, err
		}
	}
	if err := mayWrite(ctx, agent); err != nil {
		return At{}, err
	}
	if err := mayMake(ctx, b, agent, in.ID, in.DestinationID); err != nil {
		return At{}, err
	}
	return at, nil
}

// restoreReplay asks the core whether request id h made a restore already, as forkReplay
// does for a fork: it proposes, under h, a restore begin that can never apply (source
// incarnation 0, which no workbench has). The FSM answers it from the id's dedupe record
// when the id landed: the restore the id began, answered from its record now (driven to
// completion if a crash cut it off; the record the id stored when it is gone). It refuses
// it as used for another request (InvalidArguments naming idempotency_key), which is the
// answer; any other refusal (Conflict, AlreadyExists, NotFound) says the id made nothing:
// nil, nil, and the restore goes ahead.
func (s *Lifecycle) restoreReplay(ctx context.Context, agent string, in RestoreInput, h meta.Header) (Result, error) {
	probe := meta.RestoreBegin{Agent: agent, Source: in.ID, Destination: in.DestinationID, SnapshotID: math.MaxUint64,
		OpID: RestoreOperationID(agent, 0, "probe", in.DestinationID)}
	res, werr := s.base.propose(ctx, h, probe)
	switch {
	case werr == nil && (!res.Replayed || res.Restore == nil):
		return nil, newError(CodeInternal, "a restore's probe under its request id applied")
	case werr == nil:
	case res.Err == nil, res.Err.Code == meta.CodeInvalidArguments && res.Err.Field == "idempotency_key":
		return nil, werr // not answered by the FSM (the outcome unknown, a refused caller), or the id's refusal
	default:
		return nil, nil
	}
	op, err := s.reloadRestore(ctx, res.Restore)
	if err != nil {
		op = res.Restore // the record outlived by its dedupe record: the one the id stored
	}
	if op.State != meta.RestoreComplete {
		if op, err = s.driveRestore(ctx, op); err != nil {
			return nil, err
		}
	}
	return s.restoreResult(op, true), nil
}

// restoreAt is restore once its arguments passed restoreArgs (at: the snapshot selector).
func (s *Lifecycle) restoreAt(ctx context.Context, agent string, in RestoreInput, at At, h meta.Header) (Result, error) {
	commitID := deref(in.AtCommit)
	view, src, err := s.base.workspaceView(ctx, agent, in.ID)
	if err != nil {
		return nil, err
	}
	begin := meta.RestoreBegin{Agent: agent, Source: in.ID, SourceIncarnation: src.Incarnation, Destination: in.DestinationID}
	var point string
	if !at.Live() {
		if at.SnapshotName == "" && at.SnapshotID == 0 {
			return nil, newError(CodeSnapshotNotFound, "snapshot 0 does not exist (snapshot ids start at 1)")
		}
		snap, err := view.Lifecycle().Snapshot(agent, in.ID, at.SnapshotID, at.SnapshotName)
		if err != nil {
			return nil, AsError(err)
		}
		begin.SnapshotID = snap.ID
		point = "snapshot:" + strconv.FormatUint(snap.ID, 10)
	} else {
		begin.CommitIdentity = commitID
		point = "commit:" + commitID
	}
	begin.OpID = RestoreOperationID(agent, src.Incarnation, point, in.DestinationID)
	// An operation that completed before may begin again (Restore's comment, "Begun again").
	var lives bool
	if op, ok := view.Lifecycle().Restore(agent, begin.OpID); ok && op.State == meta.RestoreComplete {
		begin.Again = true
		dst, derr := view.Workspace(agent, op.Destination)
		lives = derr == nil && dst.Incarnation == op.DestIncarnation
	}
	res, err := s.base.proposeRaw(ctx, h, begin)
	var me *meta.Error
	if begin.Again && lives && errors.As(err, &me) && me.Code == meta.CodeUpgradeInProgress {
		// A replica cannot apply Again yet (the gate refused it unproposed); the
		// destination lived a moment ago, so the plain begin's replay is the answer.
		begin.Again = false
		res, err = s.base.proposeRaw(ctx, h, begin)
	}
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		return nil, AsError(err)
	}
	op := res.Restore
	if perr := checkRestoreOp(begin, op); perr != nil {
		return nil, perr
	}
	replay := res.Replayed
	if op.State != meta.RestoreComplete {
		if op, err = s.driveRestore(ctx, op); err != nil {
			return nil, err
		}
	}
	return s.restoreResult(op, replay), nil
}

// driveRestore runs a copying restore to completion: bounded copy commands from the
// recorded position, then the finishing command. It is safe to run after a crash and
// from several places at once: every step is conditional on the operation's recorded
// position, and a lost race re-reads the operation. Concurrent drives of one operation in
// this process share one driver.
func (s *Lifecycle) driveRestore(ctx context.Context, op *meta.RestoreOp) (*meta.RestoreOp, error) {
	ch := make(chan struct{})
	if prev, loaded := s.restoring.LoadOrStore(op.ID, ch); loaded {
		select {
		case <-prev.(chan struct{}):
		case <-ctx.Done():
			return nil, AsError(ctx.Err())
		}
		return s.reloadRestore(ctx, op)
	}
	defer func() {
		s.restoring.Delete(op.ID)
		close(ch)
	}()
	for op.State == meta.RestoreCopying {
		var body meta.Body
		var h meta.Header
		if !op.CopyDone {
			body = meta.RestoreCopy{Agent: op.Agent, OpID: op.ID, After: op.After, Limit: s.cfg.RestoreBatch}
		} else {
			fin, fence, err := s.restoreFinish(ctx, op)
			if err != nil {
				return nil, err
			}
			body, h.UploadFence = fin, fence
		}
		res, werr := s.base.propose(ctx, h, body)
		if werr != nil {
			if res.Err != nil && res.Err.Code == meta.CodeBlobDeleting {
				// A manifest's blob is being collected: wait, then build and upload it again.
				select {
				case <-time.After(blobDeletingBackoff):
				case <-ctx.Done():
					return nil, AsError(ctx.Err())
				}
				continue
			}
			if werr.Code != CodeConflict {
				return nil, werr
			}
			// Someone else moved the operation on (a driver elsewhere): continue from it.
			cur, err := s.reloadRestore(ctx, op)
			if err != nil {
				return nil, err
			}
			op = cur
			continue
		}
		op = res.Restore
	}
	return op, nil
}

func (s *Lifecycle) reloadRestore(ctx context.Context, op *meta.RestoreOp) (*meta.RestoreOp, error) {
	view, err := s.base.readView(ctx, op.Agent)
	if err != nil {
		return nil, AsError(err)
	}
	cur, ok := view.Lifecycle().Restore(op.Agent, op.ID)
	if !ok {
		return nil, newError(CodeInternal, "the restore operation record is gone")
	}
	return cur, nil
}

// checkRestoreOp fails closed when the core answered a restore begin with an operation
// other than the one asked for (RestoreProtocolMismatch, retryable, with the snapshot
// ids or commit ids the request expected and the record holds).
func checkRestoreOp(begin meta.RestoreBegin, op *meta.RestoreOp) *Error {
	if op != nil && op.ID == begin.OpID && op.Source == begin.Source && op.Destination == begin.Destination &&
		op.SourceIncarnation == begin.SourceIncarnation && op.SnapshotID == begin.SnapshotID && op.CommitIdentity == begin.CommitIdentity {
		return nil
	}
	e := newError(CodeRestoreProtocolMismatch, "restore operation identity did not match the durable request")
	e.Retryable = true
	e.Details["expected_snapshot_id"] = nilIfZero(begin.SnapshotID)
	e.Details["actual_snapshot_id"] = nil
	if begin.CommitIdentity != "" {
		e.Details["expected_commit_id"] = begin.CommitIdentity
		e.Details["actual_commit_id"] = nil
	}
	if op != nil {
		e.Details["actual_snapshot_id"] = nilIfZero(op.SnapshotID)
		if begin.CommitIdentity != "" {
			e.Details["actual_commit_id"] = nilIfEmpty(op.CommitIdentity)
		}
	}
	return e
}

func nilIfZero(n uint64) any {
	if n == 0 {
		return nil
	}
	return n
}

// restoreManifest is the body of metadata/restore_manifest.json, schema
// RestoreManifestSchema: the operation, the source and destination workbenches with their
// presentation paths, and under restored_from the source again with the frozen state read,
// {"kind":"snapshot","snapshot_id":N} or {"kind":"commit","commit_id":"<64 hex>"}.
func (s *Lifecycle) restoreManifest(op *meta.RestoreOp) map[string]any {
	source := map[string]any{"kind": "snapshot", "snapshot_id": op.SnapshotID}
	if op.SnapshotID == 0 {
		source = map[string]any{"kind": "commit", "commit_id": op.CommitIdentity}
	}
	srcPath := s.base.WorkbenchPath(op.Agent, op.Source)
	return map[string]any{
		"schema":                   RestoreManifestSchema,
		"operation_id":             op.ID,
		"restored_from":            map[string]any{"workbench_id": op.Source, "path": srcPath, "source": source},
		"source_workbench_id":      op.Source,
		"source_path":              srcPath,
		"destination_workbench_id": op.Destination,
		"destination_path":         s.base.WorkbenchPath(op.Agent, op.Destination),
	}
}

// restoreFinish builds the finishing command: the restore manifest, and the destination's
// commit whose content digest is the tree digest of the restored members.
func (s *Lifecycle) restoreFinish(ctx context.Context, op *meta.RestoreOp) (meta.RestoreFinish, uint64, error) {
	view, err := s.base.readView(ctx, op.Agent)
	if err != nil {
		return meta.RestoreFinish{}, 0, AsError(err)
	}
	sv, sws, err := view.Lifecycle().VersionView(&meta.Workspace{Agent: op.Agent, Name: op.Source, Incarnation: op.SourceIncarnation}, op.ReadVersion)
	if err != nil {
		return meta.RestoreFinish{}, 0, AsError(err)
	}
	members := treeMembers(sv, sws, meta.IsReservedPath)
	content := TreeDigestURI(members)
	raw, _ := json.Marshal(s.restoreManifest(op))
	canon, err := CanonicalManifest(raw)
	if err != nil {
		return meta.RestoreFinish{}, 0, err
	}
	manifestBody, fence1, err := s.uploadBody(ctx, op.Agent, canon)
	if err != nil {
		return meta.RestoreFinish{}, 0, err
	}
	env, envBytes, err := RunManifestEnvelope(op.Destination, s.base.WorkbenchPath(op.Agent, op.Destination), content, canon, time.Now().Unix())
	if err != nil {
		return meta.RestoreFinish{}, 0, err
	}
	envBody, fence2, err := s.uploadBody(ctx, op.Agent, envBytes)
	if err != nil {
		return meta.RestoreFinish{}, 0, err
	}
	sealed := append(members, TreeMember{Path: meta.RestoreManifestPath, DigestURI: DigestURI(manifestBody.Digest)})
	return meta.RestoreFinish{Agent: op.Agent, OpID: op.ID, Manifest: manifestBody, Identity: env.CommitIdentity,
		ContentDigestURI: content, ManifestDigestURI: env.ManifestDigestURI, TreeDigestURI: TreeDigestURI(sealed),
		Envelope: envBody}, minFence(fence1, fence2), nil
}

// restoreResult renders a completed restore. snapshot_id is null for a restore from a
// commit, commit_id null for one from a snapshot; read_version is the source version
// restored either way. restore_manifest is the presentation path of the destination's
// metadata/restore_manifest.json. cleanup_pending is always false: a restore holds nothing
// once it completes (the destination's files hold their own blob references).
func (s *Lifecycle) restoreResult(op *meta.RestoreOp, replay bool) Result {
	r := success()
	r["state"] = "complete"
	r["operation_id"] = op.ID
	r["source_workbench_id"] = op.Source
	r["destination_workbench_id"] = op.Destination
	r["destination_path"] = s.base.WorkbenchPath(op.Agent, op.Destination)
	r["snapshot_id"] = nilIfZero(op.SnapshotID)
	r["commit_id"] = nilIfEmpty(op.CommitIdentity)
	r["read_version"] = op.ReadVersion
	r["destination_generation"] = op.DestinationGeneration
	r["restored_files"] = op.Copied
	r["producer"] = op.Producer.String() // who began it ("" when unknown)
	r["idempotent_replay"] = replay
	r["cleanup_pending"] = false
	r["restore_manifest"] = s.base.WorkbenchPath(op.Agent, op.Destination) + "/" + meta.RestoreManifestPath
	return r
}

// ResumeRestores drives every restore of c still copying to completion (after a restart
// or a leader change; shard/worker calls it on every shard this node leads, as its
// Restorer). Restores already driven by this process are left to their driver. It returns
// the first error (ErrCoreUnavailable when c does not lead); callers retry on their next
// tick.
func (s *Lifecycle) ResumeRestores(ctx context.Context, c LeaderCore) error {
	view, err := c.ReadView(ctx)
	if err != nil {
		return err
	}
	for _, op := range view.Lifecycle().RestoresInProgress() {
		if _, busy := s.restoring.Load(op.ID); busy {
			continue
		}
		if _, err := s.driveRestore(ctx, op); err != nil {
			return err
		}
	}
	return nil
}

// RestoreStatus reports a restore operation: its state ("copying" or "complete"), files
// staged so far, and whether staging finished. NotFound for an unknown operation.
func (s *Lifecycle) RestoreStatus(ctx context.Context, agent, opID string) (Result, error) {
	view, err := s.base.agentView(ctx, agent)
	if err != nil {
		return nil, err
	}
	op, ok := view.Lifecycle().Restore(agent, opID)
	if !ok {
		return nil, newError(CodeNotFound, "restore operation %q does not exist", opID)
	}
	r := success()
	r["operation_id"] = op.ID
	r["state"] = map[meta.RestoreState]string{meta.RestoreCopying: "copying", meta.RestoreComplete: "complete"}[op.State]
	r["source_workbench_id"] = op.Source
	r["destination_workbench_id"] = op.Destination
	r["copied_files"] = op.Copied
	r["copy_done"] = op.CopyDone
	r["producer"] = op.Producer.String()
	r["destination_generation"] = op.DestinationGeneration
	return r, nil
}
