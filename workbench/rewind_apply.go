package workbench

import (
	"context"
	"strconv"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/diff"
)

// preview answers a plan with its token and, on request, its file diffs.
func (s *Attempts) preview(ctx context.Context, req RewindRequest, plan *rewindPlan) (Result, error) {
	diffs := 0
	if req.FileDiffs {
		diffs = min(len(plan.rows), MaxRewindFileDiffs)
	}
	release, aerr := s.admitAnswer(ctx, plan, diffs)
	if aerr != nil {
		return nil, aerr
	}
	defer release()
	r := s.answer(req, plan)
	if req.FileDiffs {
		rows := r["changes"].([]map[string]any)
		for i := range diffs {
			d, err := s.fileDiff(ctx, req, plan, plan.rows[i])
			if err != nil {
				return nil, err
			}
			rows[i]["diff"] = d
		}
		r["diffs_truncated"] = len(plan.rows) > diffs
	}
	r["token"] = s.encodeToken(ctx, req.Agent, tokenRewind, rewindToken{Workbench: req.Workbench, Incarnation: plan.ws.Incarnation,
		Created: plan.ws.CreatedVersion, Since: plan.since, Plan: planDigest(plan.target, req.Scope, plan.changes), IssuedAtMs: s.base.now().UnixMilli()})
	r["applied"] = false
	return r, nil
}

// fileDiff is one row's file diff, from the body now to the body at the target, in
// Review.Diff's file shape.
func (s *Attempts) fileDiff(ctx context.Context, req RewindRequest, plan *rewindPlan, row rewindRow) (map[string]any, error) {
	opts := diff.DefaultOptions()
	opts.OldLabel, opts.NewLabel = row.path+"@"+SideLive, row.path+"@"+trimTarget(plan.target)
	res, err := s.review.diffBodies(ctx, req.Agent, row.cur, row.to, opts)
	if err != nil {
		return nil, err
	}
	return map[string]any{"text": res.Text, "reason": nilIfEmpty(string(res.Reason)), "hunks": res.Hunks,
		"unified": res.Unified, "lines_deleted": res.LinesDeleted, "lines_inserted": res.LinesInserted,
		"truncated": res.Truncated}, nil
}

// apply checks a plan against its preview's token and proposes it as one change set.
func (s *Attempts) apply(ctx context.Context, req RewindRequest, plan *rewindPlan, tok rewindToken) (Result, error) {
	if err := incarnationChanged(plan.ws, tok, req.Workbench); err != nil {
		return nil, err
	}
	// A retry under the same request id after an apply that landed sees its own changes
	// in the scope: it goes to the core, which answers the first apply's result (or
	// refuses the stale guard, whole, if none landed).
	if err := unchangedSince(req, plan, tok.Since); err != nil && req.RequestID == "" {
		return nil, err
	} else if err == nil && planDigest(plan.target, req.Scope, plan.changes) != tok.Plan {
		e := newError(CodeConflict, "the rewind's target or scope resolves otherwise than at the preview; preview again")
		e.Details["reason"] = "stale"
		return nil, e
	}
	r, release, aerr := s.appliedAnswer(ctx, req, plan)
	if aerr != nil {
		return nil, aerr
	}
	defer release()
	r["replayed"] = false
	if len(plan.changes) == 0 && req.RequestID == "" {
		return r, nil // nothing differs, as the preview said: no command
	}
	// The request is the intent, not the token: a retry that previews again (a new token)
	// replays the first apply, and the key with another target or scope is refused.
	h := meta.Header{RequestID: req.RequestID,
		RequestHash: requestHash("rewind", req.Agent, req.Workbench, plan.target, req.Scope.String())}
	res, err := s.applyChangeSet(ctx, h, r, meta.ChangeSet{Agent: req.Agent, Workspace: req.Workbench,
		Incarnation: plan.ws.Incarnation, SourceWorkspace: req.Workbench, SourceIncarnation: plan.ws.Incarnation,
		Changes: plan.changes, Unchanged: req.Scope.guard(tok.Since)})
	if err != nil {
		return nil, err
	}
	if res.Replayed {
		return s.replayed(ctx, req, plan, res.Generation)
	}
	stampGeneration(r, res.Generation)
	return r, nil
}

// stampGeneration sets the to side of each change of an apply's answer r to the version
// gen the apply made (a replay, firstApply, names the same).
func stampGeneration(r Result, gen uint64) {
	for _, row := range r["changes"].([]map[string]any) {
		if to, _ := row["to"].(map[string]any); to != nil {
			to["generation"] = gen
		}
	}
}

// applyChangeSet proposes a planned change set and records its generation and replay in
// the answer r; a refusal is a failed precondition (the preview's).
func (s *Attempts) applyChangeSet(ctx context.Context, h meta.Header, r Result, cs meta.ChangeSet) (meta.Result, error) {
	res, werr := s.base.propose(ctx, h, cs)
	if werr != nil {
		if werr.Code == CodeConflict {
			return res, PreconditionFailed(werr)
		}
		return res, werr
	}
	r["generation"] = res.Generation
	r["replayed"] = res.Replayed
	return res, nil
}

// replayed answers an apply the FSM replayed (its request id had landed at version gen)
// as the first apply answered (firstApply).
func (s *Attempts) replayed(ctx context.Context, req RewindRequest, plan *rewindPlan, gen uint64) (Result, error) {
	first, err := s.firstApply(ctx, req.Agent, plan, req.Scope, gen)
	if err != nil {
		return nil, err
	}
	r, release, aerr := s.appliedAnswer(ctx, req, first)
	if aerr != nil {
		return nil, aerr
	}
	defer release()
	r["replayed"], r["generation"] = true, gen
	return r, nil
}

// replayWithoutTarget answers an apply under req.RequestID whose plan failed (its target
// no longer resolves: a snapshot retired or reaped, a commit gone, a time past retention)
// when that request id already applied a rewind: the replay needs no target, only the
// history of the first apply (firstApply). It asks the core with a change set under the
// id that can never apply (workbench incarnation 0, which none has), as Discard and Fork
// probe: the FSM answers it from the id's dedupe record (replayed), refuses it when the
// id was used for another request (InvalidArguments naming idempotency_key), or refuses
// it as a missing workbench: nil, nil, and the plan's own error stands. The request hash
// is the apply's (the target as resolved: a snapshot's record outlives its retirement).
func (s *Attempts) replayWithoutTarget(ctx context.Context, req RewindRequest) (Result, error) {
	view, ws, err := s.base.workspaceView(ctx, req.Agent, req.Workbench)
	if err != nil {
		return nil, nil
	}
	target := req.Target.String()
	if req.Target.Kind == SideSnapshot {
		snap, serr := view.Lifecycle().Snapshot(req.Agent, req.Workbench, req.Target.Snapshot.SnapshotID, req.Target.Snapshot.SnapshotName)
		if serr != nil || snap.Incarnation != ws.Incarnation {
			return nil, nil
		}
		target = SideSnapshot + ":" + strconv.FormatUint(snap.ID, 10) + "@" + strconv.FormatUint(snap.ReadVersion, 10)
	}
	h := meta.Header{RequestID: req.RequestID, RequestHash: requestHash("rewind", req.Agent, req.Workbench, target, req.Scope.String())}
	res, werr := s.base.propose(ctx, h, meta.ChangeSet{Agent: req.Agent, Workspace: req.Workbench, SourceWorkspace: req.Workbench,
		Unchanged: req.Scope.guard(0)})
	switch {
	case werr != nil && werr.Code == CodeInvalidArguments && werr.Details["field"] == "idempotency_key":
		return nil, werr // the id was used for another request
	case werr != nil || !res.Replayed:
		return nil, nil
	}
	return s.replayed(ctx, req, &rewindPlan{view: view, ws: ws, target: target}, res.Generation)
}

// appliedAnswer renders an apply's plan under its memory estimate (admitAnswer), which
// the caller releases once the answer is built.
func (s *Attempts) appliedAnswer(ctx context.Context, req RewindRequest, plan *rewindPlan) (Result, func(), *Error) {
	release, aerr := s.admitAnswer(ctx, plan, 0)
	if aerr != nil {
		return nil, nil, aerr
	}
	r := s.answer(req, plan)
	r["applied"] = true
	return r, release, nil
}

// firstApply is the plan of a change set the FSM replayed (its request id had landed at
// version gen) into plan's workbench: its rows are what history holds at gen in scope sc
// (meta HistoryView.ChangesAt), not what this retry planned, which sees them done. Rewind
// and merge answer a replay with it.
func (s *Attempts) firstApply(ctx context.Context, agent string, plan *rewindPlan, sc RewindScope, gen uint64) (*rewindPlan, error) {
	view := plan.view
	if view.Version() < gen { // the first apply landed after this retry's plan read
		v, _, err := s.base.workspaceView(ctx, agent, plan.ws.Name)
		if err != nil {
			return nil, err
		}
		view = v
	}
	changes, err := view.History().ChangesAt(plan.ws, *sc.guard(0), gen)
	if err != nil {
		return nil, AsError(err)
	}
	first := &rewindPlan{ws: plan.ws, target: plan.target, rows: make([]rewindRow, len(changes))}
	for i, c := range changes {
		first.rows[i] = rewindRow{path: c.Path, cur: c.Before, to: c.After}
	}
	return first, nil
}

// unchangedSince answers Conflict (a failed precondition: the preview's) naming the paths
// of the scope that changed after version since, as the plan's view holds them.
func unchangedSince(req RewindRequest, plan *rewindPlan, since uint64) error {
	changed, err := plan.view.History().ChangedSince(plan.ws, *req.Scope.guard(since))
	if err != nil {
		return AsError(err)
	}
	if len(changed) == 0 {
		return nil
	}
	return PreconditionFailed(AsError(&meta.Error{Code: meta.CodeConflict, Reason: "stale", Paths: changed,
		Message: strconv.Itoa(len(changed)) + " path(s) of the scope changed since the preview; preview again"}))
}

// answer renders a plan's changes.
func (s *Attempts) answer(req RewindRequest, plan *rewindPlan) Result {
	rows, counts := changeRows(plan.rows)
	r := success()
	r["workbench_id"] = req.Workbench
	r["target"] = trimTarget(plan.target)
	r["scope"] = scopeInfo(req.Scope)
	r["dry_run"] = req.DryRun
	r["changes"] = rows
	r["counts"] = counts
	return r
}

// changeRows renders a plan's rows (path, change, from, to) and counts them by change.
func changeRows(plan []rewindRow) ([]map[string]any, map[string]int) {
	rows := make([]map[string]any, len(plan))
	counts := map[string]int{"added": 0, "removed": 0, "changed": 0}
	for i, row := range plan {
		kind := row.changeKind()
		counts[string(kind)]++
		rows[i] = map[string]any{"path": row.path, "change": kind, "from": sideInfo(row.cur), "to": sideInfo(row.to)}
	}
	return rows, counts
}
