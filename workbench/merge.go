package workbench

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/meta"
)

// MergeRequest asks to merge fork Fork back into the parent it was made from (fork.go).
type MergeRequest struct {
	Agent, Fork string
	// DryRun previews: the answer lists the changes and conflicts and carries the token an
	// apply needs; nothing changes.
	DryRun bool
	// Token is a preview's token; an apply needs one (InvalidArguments naming "token").
	Token string
	// ProposeConflicts makes an apply turn each conflict whose fork side is a file into a
	// proposal against the parent's head (proposals.go), carrying both sides as evidence.
	ProposeConflicts bool
	// RequestID makes the apply idempotent (the proposals it makes converge without it:
	// proposeConflict).
	RequestID string
}

// MergeInput is cairn_merge's input and the REST body of POST …/workbenches/{fork}/merge.
type MergeInput struct {
	ID               string  `json:"id"`
	DryRun           *bool   `json:"dry_run"`
	Token            *string `json:"token"`
	ProposeConflicts *bool   `json:"propose_conflicts"`
}

// Request returns the MergeRequest in asks for in agent's root under requestID ("" for
// none). It never fails: its error is there so every attempt's input reads alike.
func (in MergeInput) Request(agent, requestID string) (MergeRequest, *Error) {
	req := MergeRequest{Agent: agent, Fork: in.ID, DryRun: in.DryRun != nil && *in.DryRun,
		ProposeConflicts: in.ProposeConflicts != nil && *in.ProposeConflicts, RequestID: requestID}
	if in.Token != nil {
		req.Token = *in.Token
	}
	return req, nil
}

// mergePlan is what a merge would do, planned at one live view: the embedded rewindPlan
// holds the parent (ws) and the changes it would get from the fork (rows: cur the
// parent's file, to the fork's), conflicts the paths both sides changed differently.
type mergePlan struct {
	rewindPlan
	fork      *meta.Workspace
	rec       forkRecord
	conflicts []mergeConflict
	bases     []*meta.Entry // each change's base side, by the index of rewindPlan.changes
}

// mergeConflict is a path both sides changed since the base, to different bodies.
type mergeConflict struct {
	path               string
	base, fork, parent *meta.Entry
	// clashWith is the other path of a file/directory clash (mergePlan.clashes): the
	// fork's side of path cannot live beside the parent's clashWith.
	clashWith string
}

// mergeOutcome is what a three-way merge does with one path.
type mergeOutcome int

const (
	mergeKeep  mergeOutcome = iota // the parent keeps its file (the fork did not change it, or changed it the same way)
	mergeTake                      // the parent takes the fork's file (only the fork changed it)
	mergeClash                     // both changed it differently: reported, never overwritten
)

// decideMerge is the three-way rule for one path, each side nil where it holds no file
// (sameBody compares digest, content type, executable bit and fields).
func decideMerge(base, fork, parent *meta.Entry) mergeOutcome {
	switch {
	case sameBody(fork, base), sameBody(fork, parent):
		return mergeKeep
	case sameBody(parent, base):
		return mergeTake
	}
	return mergeClash
}

// Merge previews or applies the merge of a fork into its parent.
//
// The walk: read a linearizable live view; read the fork's record (its restore manifest,
// fork.go) and check the parent is the incarnation it was made from; resolve the base
// (the snapshot or commit of the parent the fork was made at); walk the three trees in
// path order and decide each path (decideMerge): changed on the fork only, it is set on
// the parent to the fork's body (zero-copy) or deleted; changed on both sides
// differently, it is a conflict. A preview answers the changes, the conflicts and a token
// (rewind_token.go, kind "merge": the parent's incarnation, the version read, the digest
// of the changes and conflicts). An apply plans again, refuses (Conflict, details.reason
// "stale", details.paths) when anything of the parent changed after the preview or the
// plan is not the preview's, then proposes one meta.ChangeSet into the parent, its source
// the fork, guarded by each path's generation and by the whole parent being unchanged
// since the preview; then, on request, one proposal per conflict.
//
// The answer: fork_id, parent_id, base, dry_run, changes (as a rewind's, from the
// parent's file to the fork's), conflicts ([{path, reason (the Conflict* constants), base,
// fork, parent} sides, clash_with for a file/directory clash (mergePlan.clashes), and on
// an apply with propose_conflicts proposal_id, proposal_error, or not_proposed: why no
// proposal can carry it (a fork side that deleted the path, a clash)]), counts {added, removed,
// changed, conflicts}, token (a preview), applied, generation (an apply that changed
// something), replayed.
//
// Errors: NotFound (the fork or its parent; a root the caller may not see), InvalidArguments
// naming id, fork (details.rule "not_a_fork") or token (details.rule "too_many_changes"
// past MaxRewindChanges changes or conflicts), SnapshotNotFound or SnapshotExpired (the
// base snapshot is gone), Conflict (stale, or details.reason "parent_replaced"),
// PermissionDenied without the write scope or for a key bound to path prefixes (a merge
// reads the whole fork and writes the parent).
func (s *Attempts) Merge(ctx context.Context, req MergeRequest) (Result, error) {
	if err := validateTarget(req.Agent, req.Fork, ""); err != nil {
		return nil, err
	}
	if err := mayWrite(ctx, req.Agent); err != nil {
		return nil, err
	}
	// A merge reads the whole fork, its restore manifest included, and writes the parent
	// wherever the fork changed it: for a key bound to prefixes an operation on a whole
	// workbench, as a fork or a discard is (not a "not a fork" its hidden manifest gave).
	if err := mayWholeWorkbench(ctx, s.base, req.Agent); err != nil {
		return nil, err
	}
	var tok rewindToken
	switch {
	case req.DryRun && req.Token != "":
		return nil, invalidArgument("token", "applies a merge; a preview issues one")
	case !req.DryRun && req.Token == "":
		return nil, invalidArgument("token", "is required to apply a merge: preview it first (dry_run) and pass its token")
	case !req.DryRun:
		var err *Error
		if tok, err = s.decodeToken(ctx, req.Agent, tokenMerge, req.Fork, req.Token); err != nil {
			return nil, err
		}
	}
	plan, err := s.planMerge(ctx, req.Agent, req.Fork)
	if err != nil {
		return nil, err
	}
	if req.DryRun {
		r := s.mergeAnswer(req, plan)
		r["token"] = s.encodeToken(ctx, req.Agent, tokenMerge, rewindToken{Workbench: req.Fork, Incarnation: plan.ws.Incarnation,
			Created: plan.ws.CreatedVersion, Since: plan.since, Plan: plan.digest(), IssuedAtMs: s.base.now().UnixMilli()})
		r["applied"] = false
		return r, nil
	}
	return s.applyMerge(ctx, req, plan, tok)
}

// planMerge reads the fork, its parent and its base, and decides every path.
func (s *Attempts) planMerge(ctx context.Context, agent, fork string) (*mergePlan, error) {
	view, fws, err := s.base.workspaceView(ctx, agent, fork)
	if err != nil {
		return nil, err
	}
	rec, err := s.forkOf(ctx, agent, fork, view, fws)
	if err != nil {
		return nil, err
	}
	pws, err := parentOf(view, agent, fork, rec)
	if err != nil {
		return nil, err
	}
	base, err := s.mergeBase(ctx, agent, view, pws, rec)
	if err != nil {
		return nil, err
	}
	p := &mergePlan{rewindPlan: rewindPlan{view: view, ws: pws, since: view.Version(), target: rec.point()}, fork: fws, rec: rec}
	if err := p.walk(base, viewSide(view, fws, fork), liveSide(view, pws)); err != nil {
		return nil, err
	}
	return p, p.clashes()
}

// clashes moves out of the changes every one the change set's shape rule (meta
// View.CheckChangeSetShape, as a rewind's plan checks) finds in a file/directory clash
// with the parent — the fork sets a file where the parent holds one below it, or below a
// file the parent holds — into the conflicts, each naming the other path, so the rest
// still merges and the apply never meets the clash.
func (p *mergePlan) clashes() error {
	for len(p.changes) > 0 {
		err := p.view.CheckChangeSetShape(p.ws, p.changes)
		var me *meta.Error
		if err == nil {
			break
		}
		if !errors.As(err, &me) || len(me.Paths) != 2 || !p.clash(me.Paths) {
			return AsError(err)
		}
	}
	slices.SortFunc(p.conflicts, func(a, b mergeConflict) int { return meta.ComparePaths(a.path, b.path) })
	return nil
}

// clash moves the changes of a clashing pair of paths to the conflicts; false when
// neither is a change.
func (p *mergePlan) clash(pair []string) bool {
	moved := false
	for i := 0; i < len(p.changes); i++ {
		at := slices.Index(pair, p.changes[i].Path)
		if at < 0 {
			continue
		}
		if len(p.conflicts) == MaxRewindChanges {
			return false
		}
		row := p.rows[i]
		p.conflicts = append(p.conflicts, mergeConflict{path: row.path, base: p.bases[i], fork: row.to, parent: row.cur, clashWith: pair[1-at]})
		p.changes = slices.Delete(p.changes, i, i+1)
		p.rows = slices.Delete(p.rows, i, i+1)
		p.bases = slices.Delete(p.bases, i, i+1)
		i--
		moved = true
	}
	return moved
}

// mergeBase is the side the fork's base reads: the parent at the snapshot or commit the
// fork was made at.
func (s *Attempts) mergeBase(ctx context.Context, agent string, view *meta.View, pws *meta.Workspace, rec forkRecord) (rewindSide, error) {
	if rec.Commit != "" {
		c, ok := view.Lifecycle().Commit(pws, rec.Commit)
		if !ok {
			e := newError(CodeNotFound, "workbench %q no longer has commit %s, the base of the fork", rec.Parent, rec.Commit)
			e.Details["commit"] = rec.Commit
			return rewindSide{}, e
		}
		cv, cws, err := view.Lifecycle().VersionView(pws, c.Version)
		if err != nil {
			return rewindSide{}, AsError(err)
		}
		return viewSide(cv, cws, rec.point()), nil
	}
	sv, sws, _, err := s.base.resolve(ctx, agent, rec.Parent, AtSnapshotID(rec.SnapshotID))
	if err != nil {
		return rewindSide{}, err
	}
	return viewSide(sv, sws, rec.point()), nil
}

// walk merges the three trees (path order; commit and restore manifests are in none) and
// decides each path.
func (p *mergePlan) walk(sides ...rewindSide) error {
	type head struct {
		path string
		e    *meta.Entry
		ok   bool
	}
	nexts := make([]func() (string, *meta.Entry, bool), len(sides))
	heads := make([]head, len(sides))
	for i, sd := range sides {
		next, stop := pull(sd, RewindScope{})
		defer stop()
		nexts[i] = next
		heads[i].path, heads[i].e, heads[i].ok = next()
	}
	for {
		least, found := "", false
		for _, h := range heads {
			if h.ok && (!found || meta.ComparePaths(h.path, least) < 0) {
				least, found = h.path, true
			}
		}
		if !found {
			return nil
		}
		es := make([]*meta.Entry, len(sides))
		for i := range heads {
			if heads[i].ok && heads[i].path == least {
				es[i] = heads[i].e
				heads[i].path, heads[i].e, heads[i].ok = nexts[i]()
			}
		}
		if err := p.decide(least, es[0], es[1], es[2]); err != nil {
			return err
		}
	}
}

// decide records one path's outcome.
func (p *mergePlan) decide(path string, base, fork, parent *meta.Entry) error {
	switch decideMerge(base, fork, parent) {
	case mergeTake:
		if len(p.changes) == MaxRewindChanges { // checked here, so the refusal names the merge, not rewindPlan.add's rewind
			return tooLargeMerge("would change more than %d paths, the most one atomic merge changes")
		}
		if err := p.add(path, parent, fork); err != nil {
			return err
		}
		p.bases = append(p.bases, base)
		return nil
	case mergeClash:
		if len(p.conflicts) == MaxRewindChanges {
			return tooLargeMerge("has more than %d conflicts")
		}
		p.conflicts = append(p.conflicts, mergeConflict{path: path, base: base, fork: fork, parent: parent})
	}
	return nil
}

// tooLargeMerge is the refusal of a merge past MaxRewindChanges changes or conflicts
// (InvalidArguments naming "fork", details.rule "too_many_changes"); what says which, with
// one %d for the bound.
func tooLargeMerge(what string) *Error {
	e := invalidArgument("fork", "the merge "+what+"; rewind or discard part of the fork first", MaxRewindChanges)
	e.Details["rule"] = "too_many_changes"
	e.Details["max_changes"] = MaxRewindChanges
	return e
}

// digest is the plan's digest for the token: the base, the fork's incarnation, every
// change and every conflict (its sides' generations).
func (p *mergePlan) digest() string {
	all := append([]meta.PathChange(nil), p.changes...)
	gen := func(e *meta.Entry) uint64 {
		if e == nil {
			return 0
		}
		return e.Generation
	}
	for _, c := range p.conflicts {
		all = append(all, meta.PathChange{Path: "conflict:" + c.path, ExpectGeneration: gen(c.parent), SourceGeneration: gen(c.fork)})
	}
	return planDigest("merge:"+p.target+"#"+strconv.FormatUint(p.fork.Incarnation, 10), RewindScope{}, all)
}

// applyMerge checks a plan against its preview's token, proposes its changes as one
// change set into the parent, and makes the conflicts' proposals on request.
func (s *Attempts) applyMerge(ctx context.Context, req MergeRequest, plan *mergePlan, tok rewindToken) (Result, error) {
	if err := incarnationChanged(plan.ws, tok, plan.rec.Parent); err != nil {
		return nil, err
	}
	whole := RewindRequest{Scope: RewindScope{}}
	if err := unchangedSince(whole, &plan.rewindPlan, tok.Since); err != nil && req.RequestID == "" {
		return nil, err
	} else if err == nil && plan.digest() != tok.Plan {
		e := newError(CodeConflict, "the fork or its parent changed since the preview; preview again")
		e.Details["reason"] = "stale"
		return nil, e
	}
	r := s.mergeAnswer(req, plan)
	r["applied"] = true
	r["replayed"] = false
	if len(plan.changes) > 0 || req.RequestID != "" {
		// The request is the intent (the fork, its parent, its base), not the token: a retry
		// that previews again (a new token, as `cairn merge --yes` sends) replays the first
		// apply, and the key with another fork is refused.
		h := meta.Header{RequestID: req.RequestID, RequestHash: requestHash("merge", req.Agent, req.Fork, plan.rec.Parent, plan.target)}
		res, err := s.applyChangeSet(ctx, h, r, meta.ChangeSet{Agent: req.Agent, Workspace: plan.rec.Parent,
			Incarnation: plan.ws.Incarnation, SourceWorkspace: req.Fork, SourceIncarnation: plan.fork.Incarnation,
			Changes: plan.changes, Unchanged: whole.Scope.guard(tok.Since)})
		if err != nil {
			return nil, err
		}
		if res.Replayed {
			// The retry's plan sees the first apply's changes done: answer them from history.
			first, err := s.firstApply(ctx, req.Agent, &plan.rewindPlan, whole.Scope, res.Generation)
			if err != nil {
				return nil, err
			}
			// A path the first apply changed was no conflict of it: it took the fork's side.
			// The retry's plan finds one there when the parent wrote it since; that is a
			// conflict of a later merge, not of the one answered, and is neither reported
			// nor proposed.
			took := make(map[string]bool, len(first.rows))
			for _, row := range first.rows {
				took[row.path] = true
			}
			plan.conflicts = slices.DeleteFunc(plan.conflicts, func(c mergeConflict) bool { return took[c.path] })
			r = s.mergeAnswer(req, &mergePlan{rewindPlan: *first, rec: plan.rec, conflicts: plan.conflicts})
			r["applied"], r["replayed"], r["generation"] = true, true, res.Generation
		} else {
			stampGeneration(r, res.Generation)
		}
	}
	if req.ProposeConflicts {
		rows := r["conflicts"].([]map[string]any)
		for i, c := range plan.conflicts {
			if why := c.unproposable(); why != "" {
				rows[i]["not_proposed"] = why
				continue
			}
			res, err := s.proposeConflict(ctx, req, plan, c)
			if err != nil {
				rows[i]["proposal_error"] = AsError(err).Code
				continue
			}
			rows[i]["proposal_id"] = res["proposal_id"]
		}
	}
	return r, nil
}

// Conflict reasons (a conflict row's reason): how the two sides differ from the base.
const (
	ConflictBothChanged     = "both_changed"      // both changed the file, to different bodies
	ConflictBothAdded       = "both_added"        // both added it (the base has none), with different bodies
	ConflictDeletedOnFork   = "deleted_on_fork"   // the fork deleted it, the parent changed it
	ConflictDeletedOnParent = "deleted_on_parent" // the parent deleted it, the fork changed it
	ConflictClash           = "clash"             // a file/directory clash with clash_with
)

// reason says how the conflict's sides differ from its base (the Conflict* constants).
func (c mergeConflict) reason() string {
	switch {
	case c.clashWith != "":
		return ConflictClash
	case c.fork == nil:
		return ConflictDeletedOnFork
	case c.parent == nil:
		return ConflictDeletedOnParent
	case c.base == nil:
		return ConflictBothAdded
	}
	return ConflictBothChanged
}

// unproposable says why no proposal can carry the conflict's fork side ("" when one can):
// a proposal carries a body, and the review flow has no delete proposal; a clash's body
// could never be accepted beside the parent's path.
func (c mergeConflict) unproposable() string {
	switch c.reason() {
	case ConflictDeletedOnFork:
		return "the fork deleted the path and a proposal carries a body (the review flow has no delete proposal): delete it on the parent to take the fork's side"
	case ConflictClash:
		return "the fork's file cannot live beside the parent's " + c.clashWith + " (a file/directory clash): no proposal could be accepted"
	}
	return ""
}

// proposeConflict proposes the fork's body of a conflicting path against the parent's
// head, with the fork's file, the parent's file and the base as evidence; only for a
// conflict a proposal can carry (mergeConflict.unproposable). The proposal's request id
// derives from the conflict (fork, parent, path, both sides' versions), so a retried
// apply and a later merge of the same fork state converge on the same proposal.
func (s *Attempts) proposeConflict(ctx context.Context, req MergeRequest, plan *mergePlan, c mergeConflict) (Result, error) {
	if c.fork.Size > s.base.cfg.MCPMaxPayloadBytes {
		return nil, tooLargeToLoad(c.fork.Size, s.base.cfg.MCPMaxPayloadBytes)
	}
	body, err := s.review.loadBody(ctx, req.Agent, c.fork)
	if err != nil {
		return nil, err
	}
	b64 := base64.StdEncoding.EncodeToString(body)
	var head uint64
	evidence := []EvidenceInput{{Kind: string(meta.EvidenceFile), Workbench: req.Fork, Path: c.path, Generation: c.fork.Generation}}
	if c.parent != nil {
		head = c.parent.Generation
		evidence = append(evidence, EvidenceInput{Kind: string(meta.EvidenceFile), Workbench: plan.rec.Parent, Path: c.path, Generation: head})
	}
	if plan.rec.Commit != "" {
		evidence = append(evidence, EvidenceInput{Kind: string(meta.EvidenceCommit), Workbench: plan.rec.Parent, Commit: plan.rec.Commit})
	} else {
		evidence = append(evidence, EvidenceInput{Kind: string(meta.EvidenceSnapshot), Workbench: plan.rec.Parent, SnapshotID: plan.rec.SnapshotID})
	}
	what := "changed on both sides"
	switch c.reason() {
	case ConflictDeletedOnParent:
		what = "changed on the fork and deleted on the parent"
	case ConflictBothAdded:
		what = "added on both sides"
	}
	reason := fmt.Sprintf("merge of fork %q: %s %s since the base %s", req.Fork, c.path, what, plan.target)
	// The request id is the conflict, not the merge: the fork, the parent (both
	// incarnations), the path and both sides' versions. A retried apply and a later merge
	// of the same fork state converge on one proposal; a new side is a new proposal.
	sum := sha256.Sum256([]byte(strings.Join([]string{req.Fork, strconv.FormatUint(plan.fork.Incarnation, 10),
		plan.rec.Parent, strconv.FormatUint(plan.ws.Incarnation, 10), c.path,
		strconv.FormatUint(c.fork.Generation, 10), strconv.FormatUint(head, 10)}, "\x00")))
	ct := c.fork.ContentType
	return s.review.Propose(ctx, req.Agent, ProposeInput{ID: plan.rec.Parent, Path: c.path, BaseGeneration: &head,
		Base64: &b64, ContentType: &ct, Reason: &reason, Evidence: evidence, RequestID: "merge-" + hex.EncodeToString(sum[:20])})
}

// mergeAnswer renders a plan.
func (s *Attempts) mergeAnswer(req MergeRequest, plan *mergePlan) Result {
	rows, counts := changeRows(plan.rows)
	conflicts := make([]map[string]any, len(plan.conflicts))
	for i, c := range plan.conflicts {
		conflicts[i] = map[string]any{"path": c.path, "reason": c.reason(), "base": sideInfo(c.base), "fork": sideInfo(c.fork), "parent": sideInfo(c.parent)}
		if c.clashWith != "" {
			conflicts[i]["clash_with"] = c.clashWith
		}
	}
	counts["conflicts"] = len(conflicts)
	r := success()
	r["fork_id"] = req.Fork
	r["parent_id"] = plan.rec.Parent
	r["base"] = plan.target
	r["dry_run"] = req.DryRun
	r["changes"] = rows
	r["conflicts"] = conflicts
	r["counts"] = counts
	return r
}
