package documents

import (
	"context"
	"errors"
	"net/http"
	"slices"
)

type proposalAnswer struct {
	DocumentID       string `json:"documentId"`
	ProposalEventID  string `json:"proposalEventId"`
	RequestedEventID string `json:"requestedEventId"`
	RunID            string `json:"runId"`
}

// MaxReasonChars bounds a runner's reason.
const MaxReasonChars = 2_000

// requestProposal is requestProposal: {selectionId, runnerId, baseVersionId, requestId}.
// The walk: the runner from the registry, the selection of this document, the base
// version (it must be the head: a proposal on any other base would be stale at birth,
// StaleBaseError); then the requested event (parent = the selected event), a running run
// record, the runner with the head and the snapshot, the result's validation (length,
// evidence admitted by the selection; the hash is computed here), the proposed event
// (parent = the requested event), the proposal's index, and the run completed with
// outputEventIds = [proposalEventId]. A runner failure completes the run as failed with a
// classified, bounded errorText, appends no proposal and answers RunnerError (502). A
// replayed requestId answers the existing proposal or failure (a run left running by a
// crash is run again: the proposed event is create-only).
//
// On one node, requests of one run (the same owner, document, requestId and arguments)
// share one walk (Handler.proposals), so concurrent replays call the runner once and
// answer alike; the walk goes on when the request that started it leaves, as the others
// wait for it. Across nodes a replay racing a run may call the runner again: the proposed
// event is create-only, so one proposal is stored (docs/documents.md#runners).
func (h *Handler) requestProposal(ctx context.Context, o owner, docID string, b body) (any, *Error) {
	args, e := proposalArgsOf(b)
	if e != nil {
		return nil, e
	}
	runner, ok := h.runners[args.runnerID]
	if !ok {
		return nil, invalid("runnerId", RuleExists, "no runner %q is registered", args.runnerID)
	}
	type outcome struct {
		answer any
		e      *Error
	}
	key := StableKey(o.Tenant, o.Workspace, RunID(docID, args.requestID), args.selectionID, args.runnerID, args.base)
	h.proposing.Add(1)
	defer h.proposing.Add(-1)
	v, _, _ := h.proposals.Do(key, func() (any, error) {
		answer, e := h.propose(context.WithoutCancel(ctx), o, docID, args, runner)
		return outcome{answer, e}, nil
	})
	out := v.(outcome)
	return out.answer, out.e
}

// propose is requestProposal's walk, once its arguments are read.
func (h *Handler) propose(ctx context.Context, o owner, docID string, args proposalArgs, runner Runner) (any, *Error) {
	selectionID, runnerID, base, requestID := args.selectionID, args.runnerID, args.base, args.requestID
	hd, e := h.settleHead(ctx, o, docID)
	if e != nil {
		return nil, e
	}
	rec := records{h.store, o}
	selected, err := rec.event(ctx, docID, EventID(TypeSelected, selectionID))
	if errors.Is(err, ErrNotFound) {
		return nil, invalid("selectionId", RuleExists, "%s is not a selection of this document", selectionID)
	}
	if err != nil {
		return nil, fromStore(err)
	}
	sel := decodePayload[selectedPayload](selected)
	requestedID := EventID(TypeRequested, docID, requestID)
	runID := RunID(docID, requestID)
	answer := proposalAnswer{DocumentID: docID, ProposalEventID: EventID(TypeProposed, docID, requestID), RequestedEventID: requestedID, RunID: runID}

	if done, e := replayedProposal(ctx, rec, o, docID, requestedID, runID, args, hd); done || e != nil {
		if e != nil {
			return nil, e
		}
		return answer, nil
	}
	now := h.opt.Now()
	baseContent, _, err := h.store.ReadFile(ctx, o.Tenant, Workbench, o.versionPath(docID, base), maxRecordBytes)
	if errors.Is(err, ErrNotFound) {
		return nil, invalid("baseVersionId", RuleExists, "%s is not a version of this document", base)
	}
	if err != nil {
		return nil, fromStore(err)
	}
	baseSha := sha256Hex(string(baseContent))
	requested := h.newEvent(TypeRequested, hd.OriginEventID, selected.ID, []string{docID, requestID},
		requestedPayload{DocumentID: docID, BaseVersionID: base, BaseSha256: baseSha, SelectionID: selectionID,
			SnapshotVersionID: sel.SnapshotVersionID, RunnerID: runnerID, RequestID: requestID}, now)
	if _, same, err := rec.appendEvent(ctx, docID, requested); err != nil {
		return nil, fromStore(err)
	} else if !same {
		return nil, conflict("requestId %q was used for another proposal request of this document", requestID)
	}
	rn := run{ID: runID, DocumentID: docID, RunnerID: runnerID, RunnerRevision: runner.Revision(), Status: RunRunning,
		TriggerEventID: requested.ID, OutputEventIDs: []string{}, ContextManifest: contextManifest{ContextSnapshot: sel.SnapshotVersionID},
		StartedAt: timestamp(now)}
	if _, err := rec.create(ctx, o.runPath(docID, runID), rn); err != nil {
		return nil, fromStore(err)
	}
	snap, err := rec.snapshot(ctx, docID, sel.SnapshotVersionID)
	if err != nil {
		return nil, fromStore(err)
	}
	title, baseText, _ := splitContent(string(baseContent))
	result, rerr := runner.Propose(ctx, RunRequest{DocumentID: docID, BaseVersionID: base, BaseSha256: baseSha, Title: title,
		BaseText: baseText, Snapshot: snap, MaxProposedChars: MaxBodyChars})
	if rerr == nil {
		rerr = validResult(result, sel)
	}
	if rerr != nil {
		return h.failRun(ctx, rec, docID, runID, rerr, answer)
	}
	evidence := result.EvidenceEventIDs
	if evidence == nil {
		evidence = []string{}
	}
	proposed := h.newEvent(TypeProposed, hd.OriginEventID, requested.ID, []string{docID, requestID}, proposedPayload{
		ProposalState: "runner-proposed",
		Proposer:      proposer{RunnerID: runnerID, RunnerRevision: runner.Revision(), RequestID: requestID, RunID: runID, ContextSnapshotID: sel.SnapshotVersionID},
		Target:        target{DocumentID: docID, BaseVersionID: base, BaseSha256: baseSha},
		Operation:     "replace-document", ProposedText: result.ProposedText, ProposedTextChars: Chars(result.ProposedText),
		ProposedTextSha256: sha256Hex(result.ProposedText), Reason: result.Reason, EvidenceEventIDs: evidence}, h.opt.Now())
	if _, _, err := rec.appendEvent(ctx, docID, proposed); err != nil {
		return nil, fromStore(err)
	}
	if _, err := rec.create(ctx, o.proposalPath(proposed.ID), proposalIndex{DocumentID: docID}); err != nil {
		return nil, fromStore(err)
	}
	done, e := h.finishRun(ctx, rec, docID, runID, func(r *run) { r.Status, r.OutputEventIDs = RunCompleted, []string{proposed.ID} })
	if e != nil {
		return nil, e
	}
	if done.Status == RunFailed {
		return nil, runnerError(done)
	}
	return answer, nil
}

// failRun completes a run whose runner failed, with its classified, bounded errorText,
// and answers its RunnerError; a run another attempt completed meanwhile answers answer.
func (h *Handler) failRun(ctx context.Context, rec records, docID, runID string, rerr error, answer proposalAnswer) (any, *Error) {
	class, text := errorText(rerr)
	failed, e := h.finishRun(ctx, rec, docID, runID, func(r *run) { r.Status, r.ErrorClass, r.ErrorText = RunFailed, class, text })
	if e != nil {
		return nil, e
	}
	if failed.Status == RunCompleted {
		return answer, nil
	}
	return nil, runnerError(failed)
}

// proposalArgs are a proposal request's fields.
type proposalArgs struct{ selectionID, runnerID, base, requestID string }

// proposalArgsOf reads a proposal request's body: only its four fields, each valid.
func proposalArgsOf(b body) (proposalArgs, *Error) {
	var a proposalArgs
	if e := b.only("selectionId", "runnerId", "baseVersionId", "requestId"); e != nil {
		return a, e
	}
	var e *Error
	if a.selectionID, e = b.recordID("selectionId", "selection"); e != nil {
		return a, e
	}
	if a.runnerID, e = b.str("runnerId", true, 200); e != nil {
		return a, e
	}
	if a.base, e = b.recordID("baseVersionId", "version"); e != nil {
		return a, e
	}
	a.requestID, e = b.id("requestId")
	return a, e
}

// replayedProposal settles a proposal request whose requestId was seen before: done when
// its run completed (the answer stands), the run's failure when it failed, a conflict when
// the requestId was used for another request; a request left running goes on (false). A
// new request must be based on the head.
func replayedProposal(ctx context.Context, rec records, o owner, docID, requestedID, runID string, a proposalArgs, hd head) (bool, *Error) {
	prior, err := rec.event(ctx, docID, requestedID)
	switch {
	case errors.Is(err, ErrNotFound):
		if a.base != hd.VersionID {
			return false, staleBase(hd.VersionID)
		}
		return false, nil
	case err != nil:
		return false, fromStore(err)
	}
	p := decodePayload[requestedPayload](prior)
	if p.SelectionID != a.selectionID || p.RunnerID != a.runnerID || p.BaseVersionID != a.base {
		return false, conflict("requestId %q was used for another proposal request of this document", a.requestID)
	}
	var rn run
	if _, err := rec.get(ctx, o.runPath(docID, runID), &rn); err == nil {
		switch rn.Status {
		case RunCompleted:
			return true, nil
		case RunFailed:
			return false, runnerError(rn)
		}
	}
	return false, nil
}

// validResult checks a runner's result before it becomes an event.
func validResult(r RunResult, sel selectedPayload) error {
	switch {
	case Chars(r.ProposedText) > MaxBodyChars:
		return &RunnerFailure{FailResult, "proposedText is longer than the body limit"}
	case r.Reason == "" || Chars(r.Reason) > MaxReasonChars:
		return &RunnerFailure{FailResult, "reason must be 1 to 2000 characters"}
	case len(r.EvidenceEventIDs) > MaxEvidenceIDs:
		return &RunnerFailure{FailResult, "evidenceEventIds holds more than 16 ids"}
	}
	for _, id := range r.EvidenceEventIDs {
		if !slices.Contains(sel.SelectedEventIDs, id) {
			return &RunnerFailure{FailResult, "evidenceEventIds names an event the selection does not hold"}
		}
	}
	return nil
}

// finishRun moves run id from running to what f makes it (compare-and-swap); a run
// already finished is returned as it is.
func (h *Handler) finishRun(ctx context.Context, rec records, doc, id string, f func(*run)) (run, *Error) {
	for range maxMutateAttempts {
		var rn run
		gen, err := rec.get(ctx, rec.o.runPath(doc, id), &rn)
		if err != nil {
			return run{}, fromStore(err)
		}
		if rn.Status != RunRunning {
			return rn, nil
		}
		f(&rn)
		rn.EndedAt = timestamp(h.opt.Now())
		if _, err := rec.swap(ctx, rec.o.runPath(doc, id), gen, rn); err == nil {
			return rn, nil
		} else if !errors.Is(err, ErrConflict) {
			return run{}, fromStore(err)
		}
	}
	return run{}, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "the run record changed too often"}
}

func runnerError(rn run) *Error {
	return &Error{Status: http.StatusBadGateway, Code: CodeRunner, RunID: rn.ID, ErrorText: rn.ErrorText,
		Message: "the runner failed; the run is recorded as failed and no proposal was appended"}
}
