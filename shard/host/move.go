package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// Moving a root between shards, the host's half (docs/architecture.md, "Moving a root"):
// the elected controller hands every unfinished move to DriveMove, which proposes the
// move's commands on the source's and the target's leaders and writes each step it
// reaches to the move's etcd record. Before the placement switch a failure rolls the move
// back (the import aborted on the target, the fence lifted on the source); after it, the
// move only goes forward, resumed by whichever controller leads.

// Mover moves agent roots between the shards of a cluster: it records an operator's move
// (StartMove) and lists the moves, drives each move for the elected controller
// (control.MoveDriver and control.MoveSweeper: DriveMove, SweepMove), and reads and sets
// the switch of the rebalancer, which starts moves by itself. On the embedded default,
// which has one shard, StartMove, Moves and the switch answer ErrNotCluster.
//
// Invariants: a move's commands go to the source's and the target's leaders, each
// idempotent under the move's id; its copy reads one view of the source, which the
// source's leader keeps (exportViews), and a copy whose view is lost rolls back. Before
// the placement switch a move only rolls back; after it, it only goes forward. A moved
// root leaves this node's roots known assigned: its new shard assigned it at the import.
type Mover struct {
	log     *slog.Logger
	cluster *clusterState // nil on the embedded default
	leaders *leaderCalls
	peers   *peerClient
	// exports are the views this node keeps as a source's leader: a copy driven here
	// reads them directly.
	exports *exportViews
	// assigned are the host's roots known assigned on their shard.
	assigned *sync.Map
}

// Mover returns the host's root mover.
func (h *Host) Mover() *Mover { return h.mover }

// moveStepTimeout bounds one step of a move (a command on a shard's leader, with its
// retries across an election).
const moveStepTimeout = 30 * time.Second

// movePause is the pause between attempts of a move step that met no leader.
const movePause = 100 * time.Millisecond

// moveWalkWait bounds how long a move's first step on a shard waits for an earlier move's
// walk of the root there to end (proposeMoveAfterWalks).
const moveWalkWait = 2 * time.Minute

// DriveMove carries out run's move from the step its record names (control.MoveDriver).
func (mv *Mover) DriveMove(ctx context.Context, run *control.MoveRun) error {
	m := run.Move()
	if m.Step == control.MoveRollingBack || run.Resumed && !m.Step.Committed() {
		reason := m.Reason
		if reason == "" {
			reason = "the move was interrupted before its switch (its driver stopped); nothing changed: start it again"
		}
		return mv.rollbackMove(ctx, run, reason, false)
	}
	if !m.Step.Committed() {
		if err := mv.copyMove(ctx, run); err != nil {
			if errors.Is(err, control.ErrDeposed) || ctx.Err() != nil {
				return err // the next controller resumes it
			}
			mv.log.Warn("root move failed before its switch; rolling back", "move", m.ID, "root", m.Root, "err", err)
			return mv.rollbackMove(ctx, run, moveFailure(err), lastingFailure(err))
		}
		if err := run.Switch(ctx); err != nil {
			if errors.Is(err, control.ErrConflict) {
				return mv.rollbackMove(ctx, run, "the root's placement changed during the move", false)
			}
			return err // unknown: the record says whether the switch happened; resumed from it
		}
	}
	ref := meta.MoveRef{Agent: m.Root, MoveID: m.ID}
	if run.Move().Step == control.MoveSwitched {
		if _, err := mv.proposeMove(ctx, m.Target, meta.MoveImportConfirm{MoveRef: ref}); err != nil {
			return err
		}
		if err := run.Step(ctx, control.MoveConfirmed, nil); err != nil {
			return err
		}
	}
	if _, err := mv.proposeMove(ctx, m.Source, meta.MoveRelease{MoveRef: ref}); err != nil {
		return err
	}
	mv.assigned.Delete(m.Root) // its new shard assigned it at the import
	return run.Step(ctx, control.MoveDone, nil)
}

// copyMove runs steps 2 to 5: the target begins the import, the source fences the root,
// the records are copied from one view of the source, the target finishes the import.
func (mv *Mover) copyMove(ctx context.Context, run *control.MoveRun) error {
	m := run.Move()
	ref := meta.MoveRef{Agent: m.Root, MoveID: m.ID}
	if err := run.Step(ctx, control.MoveRequested, nil); err != nil { // claim it for this term
		return err
	}
	uid, err := mv.exportStep(ctx, m.Source, exportRequest{Agent: m.Root, MoveID: m.ID, UIDOnly: true})
	if err != nil {
		return err
	}
	if err := run.Check(ctx); err != nil {
		return err
	}
	if _, err := mv.proposeMoveAfterWalks(ctx, m.Target, ref, meta.MoveImportBegin{MoveRef: ref, RootUID: uid.RootUID}); err != nil {
		return err
	}
	if err := run.Step(ctx, control.MoveImporting, nil); err != nil {
		return err
	}
	// The pre-copy: the records as they are now, while the root still takes writes; after
	// the fence only what changed since is shipped (meta/move_delta.go), so the writes
	// pause for the difference, not for the root. Only once every node applies a delta.
	pre := mv.cluster.everyNodeAtLeast(meta.MoveDeltaVersion)
	// A record larger than a chunk goes in parts only once every node imports them
	// (meta/move_parts.go); until then the export refuses it, and the move rolls back.
	parts := mv.cluster.everyNodeAtLeast(meta.MovePartsVersion)
	var cp chunkCopy
	if pre {
		if err := mv.copyChunks(ctx, run, &cp, exportRequest{Agent: m.Root, MoveID: m.ID, PreCopy: true, Parts: parts}); err != nil {
			return err
		}
		if err := cp.report(ctx, run); err != nil { // the pre-copy's counts, for cairn admin root moves
			return err
		}
	}
	if err := run.Check(ctx); err != nil {
		return err
	}
	if _, err := mv.proposeMoveAfterWalks(ctx, m.Source, ref, meta.MoveFence{MoveRef: ref}); err != nil {
		return err
	}
	if err := run.Step(ctx, control.MoveFenced, nil); err != nil {
		return err
	}
	if err := mv.copyChunks(ctx, run, &cp, exportRequest{Agent: m.Root, MoveID: m.ID, Delta: pre, Parts: parts, Base: cp.last.Version}); err != nil {
		return err
	}
	chunks, records, last := cp.chunks, cp.records, cp.last
	if err := run.Step(ctx, control.MoveCopied, func(r *control.RootMove) { r.Chunks, r.Records = chunks, records }); err != nil {
		return err
	}
	if err := run.Check(ctx); err != nil {
		return err
	}
	if _, err := mv.proposeMove(ctx, m.Target, meta.MoveImportFinish{MoveRef: ref, Chunks: chunks, Records: records,
		SourceVersion: last.Version, SourceNextListID: last.NextListID, SourceSeq: last.Seq}); err != nil {
		return err
	}
	return run.Step(ctx, control.MoveFinished, nil)
}

// chunkCopy is how far a move's copy got: the chunks and records the target imported, and
// the source's last answer (its counters are the finish's).
type chunkCopy struct {
	chunks   uint64
	records  int64
	last     exportReply
	reported time.Time // when the counts were last written to the record
}

// moveProgressEvery is how often a long copy writes its counts to the move's record.
const moveProgressEvery = time.Second

// report writes the copy's counts to the move's record, at the step it is at.
func (cp *chunkCopy) report(ctx context.Context, run *control.MoveRun) error {
	cp.reported = time.Now()
	return run.Step(ctx, run.Move().Step, func(r *control.RootMove) { r.Chunks, r.Records = cp.chunks, cp.records })
}

// copyChunks pulls the export req names from the source chunk by chunk and imports each on
// the target (as a delta when req is one), counting into cp; a pre-copy writes its counts
// to the move's record every moveProgressEvery.
func (mv *Mover) copyChunks(ctx context.Context, run *control.MoveRun, cp *chunkCopy, req exportRequest) error {
	m := run.Move()
	ref := meta.MoveRef{Agent: m.Root, MoveID: m.ID}
	for {
		rep, err := mv.exportStep(ctx, m.Source, req)
		if err != nil {
			return err
		}
		if p := rep.Chunk.Part; p != nil && p.Offset != req.From.Sent {
			// The export resumes a record where the position says; anything else is a
			// source of another release or a bug, and the target would refuse the part.
			return fmt.Errorf("host: move %s: the source answered bytes from %d of a record for a position after %d", m.ID, p.Offset, req.From.Sent)
		}
		if rep.Chunk.Records > 0 || rep.Chunk.Part != nil {
			if err := run.Check(ctx); err != nil {
				return err
			}
			chunk := meta.MoveImportChunk{MoveRef: ref, Seq: cp.chunks, Data: rep.Chunk.Data, Delta: req.Delta, Part: rep.Chunk.Part}
			if _, err := mv.proposeMove(ctx, m.Target, chunk); err != nil {
				return err
			}
			cp.chunks++
			cp.records += rep.Chunk.Records
			if req.PreCopy && time.Since(cp.reported) >= moveProgressEvery {
				if err := cp.report(ctx, run); err != nil {
					return err
				}
			}
		}
		cp.last = rep
		if rep.Chunk.Done {
			return nil
		}
		req.From, req.View = rep.Chunk.Next, rep.Version
	}
}

// rollbackMove undoes a move that did not reach its switch: the import is aborted on the
// target, the fence lifted on the source (both succeed when there is nothing to undo).
// Lasting records that trying again soon fails the same way (control.RootMove.Lasting).
func (mv *Mover) rollbackMove(ctx context.Context, run *control.MoveRun, reason string, lasting bool) error {
	m := run.Move()
	if m.Step.Committed() {
		return fmt.Errorf("host: move %s switched its placement already; it cannot roll back", m.ID)
	}
	if m.Step != control.MoveRollingBack {
		if err := run.Step(ctx, control.MoveRollingBack, func(r *control.RootMove) { r.Reason, r.Lasting = reason, lasting }); err != nil {
			return err
		}
	}
	ref := meta.MoveRef{Agent: m.Root, MoveID: m.ID}
	if _, err := mv.proposeMove(ctx, m.Target, meta.MoveImportAbort{MoveRef: ref}); err != nil && !anotherMove(err, m.ID) {
		return err
	}
	if _, err := mv.proposeMove(ctx, m.Source, meta.MoveLift{MoveRef: ref}); err != nil && !anotherMove(err, m.ID) {
		return err
	}
	return run.Step(ctx, control.MoveRolledBack, nil)
}

// SweepMove undoes rolled-back move m once more (control.MoveSweeper): a deposed
// controller's command in flight may have fenced the root, or begun an import, after the
// rollback. Only this move's records are touched.
func (mv *Mover) SweepMove(ctx context.Context, m control.RootMove) error {
	ref := meta.MoveRef{Agent: m.Root, MoveID: m.ID}
	if _, err := mv.proposeMove(ctx, m.Target, meta.MoveImportAbort{MoveRef: ref}); err != nil && !anotherMove(err, m.ID) && !isState(err) {
		return err
	}
	if _, err := mv.proposeMove(ctx, m.Source, meta.MoveLift{MoveRef: ref}); err != nil && !anotherMove(err, m.ID) && !isState(err) {
		return err
	}
	return nil
}

// isState reports whether err is a shard's InvalidState: a record the undo must leave (a
// root a later move brought and confirmed, or released).
func isState(err error) bool {
	var me *meta.Error
	return errors.As(err, &me) && me.Code == meta.CodeInvalidState
}

// anotherMove reports whether err is a shard's answer that another move than id holds the
// root there: this move left nothing on that shard to undo.
func anotherMove(err error, id string) bool {
	var me *meta.Error
	return errors.As(err, &me) && me.Code == meta.CodeConflict && me.OperationID != "" && me.OperationID != id
}

// shardStepError is a move step's failure on one shard.
type shardStepError struct {
	shard int
	err   error
}

func (e *shardStepError) Error() string { return fmt.Sprintf("shard %d: %v", e.shard, e.err) }
func (e *shardStepError) Unwrap() error { return e.err }

// lastingFailure reports whether err, which stopped a move before its switch, is a
// shard's refusal that trying again soon meets too: ResourceExhausted (a record larger
// than a move chunk while a node cannot import it in parts).
func lastingFailure(err error) bool {
	var me *meta.Error
	return errors.As(err, &me) && me.Code == meta.CodeResourceExhausted
}

// moveFailure is the reason a move rolled back, for its record (an operator reads it).
func moveFailure(err error) string {
	var me *meta.Error
	on := "a shard"
	if se := (*shardStepError)(nil); errors.As(err, &se) {
		on = fmt.Sprintf("shard %d", se.shard)
	}
	switch {
	case errors.As(err, &me):
		return on + " refused the move: " + me.Message
	case errors.Is(err, errExportViewLost):
		return "the source's leader changed during the copy; nothing changed: start the move again"
	case errors.Is(err, shard.ErrNotLeader), errors.Is(err, shard.ErrTimeout):
		return on + " had no leader during the move; nothing changed: start it again"
	case control.IsRetryable(err):
		return "the control plane was unavailable during the move; nothing changed: start it again"
	}
	return "the move failed with an internal error (the controller node's log has the cause); nothing changed: start it again"
}

// proposeMove proposes a move command on shard id's leader, trying again while the shard
// has no leader or the outcome is unknown (every move command is idempotent under its
// move id), for at most moveStepTimeout. A refusal of the FSM comes back as its
// *meta.Error.
func (mv *Mover) proposeMove(ctx context.Context, id int, b meta.Body) (meta.Result, error) {
	var res meta.Result
	err := retryMoveStep(ctx, func(ctx context.Context) (err error) {
		if mv.leaders.replicas.get(id) != nil {
			res, err = mv.leaders.propose(ctx, id, meta.Header{}, b)
			return err
		}
		// The cluster version was checked on every node when the move was recorded; a node
		// without a replica of the shard has no configuration to gate on.
		return mv.leaders.onLeader(ctx, id, func(r *shard.Shard) (err error) {
			res, err = r.Propose(ctx, meta.Header{}, b)
			return err
		}, func(addr string) (err error) {
			res, err = mv.peers.propose(ctx, addr, id, meta.Header{}, b)
			return err
		})
	})
	if err != nil {
		return res, &shardStepError{shard: id, err: err}
	}
	if res.Err != nil {
		return res, &shardStepError{shard: id, err: res.Err}
	}
	return res, nil
}

// proposeMoveAfterWalks is proposeMove of a step that starts a move's hold on a shard (the
// target's import, the source's fence), waiting up to moveWalkWait while an earlier move's
// bounded walk of the root still holds it there: a release on the shard the root left, an
// abort of a rolled-back import, the rescheduling of a confirmed import. Each walk ends by
// itself, one retention step per command the shard applies; the wait drives it with
// MoveWalk commands (32 steps each) once every node applies them, else with the refused
// step's own tries. So a root moved back soon after a move does not roll back for it.
func (mv *Mover) proposeMoveAfterWalks(ctx context.Context, id int, ref meta.MoveRef, b meta.Body) (meta.Result, error) {
	deadline := time.Now().Add(moveWalkWait)
	var walked *meta.MoveRecord // the walking record as the last MoveWalk left it
	for {
		res, err := mv.proposeMove(ctx, id, b)
		other, ok := walking(err, ref.MoveID)
		if err == nil || !ok || time.Now().After(deadline) {
			return res, err
		}
		if mv.cluster.everyNodeAtLeast(meta.OpVersion(meta.OpMoveWalk)) {
			w, werr := mv.proposeMove(ctx, id, meta.MoveWalk{MoveRef: meta.MoveRef{Agent: ref.Agent, MoveID: other}})
			progressed := werr == nil && (w.Move == nil || walked == nil || *w.Move != *walked)
			walked = w.Move
			if progressed {
				continue // at once: the walk moved on
			}
		}
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(movePause):
		}
	}
}

// walking reports whether err is a shard's answer that another move than id holds the root
// there in a walk that ends by itself, and that move's id.
func walking(err error, id string) (string, bool) {
	var me *meta.Error
	if !anotherMove(err, id) || !errors.As(err, &me) {
		return "", false
	}
	switch me.State {
	case meta.MoveReleasing.String(), meta.MoveAborting.String(), meta.MoveConfirmed.String():
		return me.OperationID, true
	}
	return "", false
}

// exportStep is export with the retries of a move step; a refusal of the source comes back
// as its *meta.Error.
func (mv *Mover) exportStep(ctx context.Context, source int, req exportRequest) (exportReply, error) {
	var rep exportReply
	err := retryMoveStep(ctx, func(ctx context.Context) (err error) {
		rep, err = mv.export(ctx, source, req)
		return err
	})
	switch {
	case err == nil && rep.Err != nil:
		return rep, &shardStepError{shard: source, err: rep.Err}
	case err != nil:
		return rep, &shardStepError{shard: source, err: err}
	}
	return rep, nil
}

// retryMoveStep runs f until it succeeds or fails with something other than "no leader
// now" or "outcome unknown", for at most moveStepTimeout.
func retryMoveStep(ctx context.Context, f func(context.Context) error) error {
	sctx, cancel := context.WithTimeout(ctx, moveStepTimeout)
	defer cancel()
	for {
		err := f(sctx)
		if err == nil || !(errors.Is(err, shard.ErrNotLeader) || errors.Is(err, shard.ErrTimeout)) || sctx.Err() != nil {
			return err
		}
		select {
		case <-sctx.Done():
			return err
		case <-time.After(movePause):
		}
	}
}

// StartMove records a move of root to shard target (control.Plane.StartMove); the elected
// controller drives it. Errors: ErrNotCluster, and those of control.Plane.StartMove.
func (mv *Mover) StartMove(ctx context.Context, root string, target int) (control.RootMove, error) {
	if mv.cluster == nil {
		return control.RootMove{}, ErrNotCluster
	}
	return mv.cluster.cfg.Plane.StartMove(ctx, root, target, time.Now())
}

// Moves lists the cluster's root moves, oldest first. Errors: ErrNotCluster,
// control.ErrControlPlaneUnavailable.
func (mv *Mover) Moves(ctx context.Context) ([]control.RootMove, error) {
	if mv.cluster == nil {
		return nil, ErrNotCluster
	}
	return mv.cluster.cfg.Plane.Moves(ctx)
}
