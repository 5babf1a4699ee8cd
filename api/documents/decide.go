package documents

import (
	"context"
	"errors"
)

type decisionAnswer struct {
	DocumentID      string `json:"documentId"`
	ProposalEventID string `json:"proposalEventId"`
	Disposition     string `json:"disposition"`
	DecisionEventID string `json:"decisionEventId"`
	ResultVersionID string `json:"resultVersionId,omitempty"`
	JudgmentID      string `json:"judgmentId"`
}

// decide is decideProposal: {disposition: accept|reject, submissionId}. Under the
// document's lock (mutate.go), in the design's write order: version row, version event
// (accept only; reason proposal-accepted, parent = the proposal event), decision event
// (parent = the proposal event), head, judgment. Accept requires the head to be the
// proposal's base (StaleBaseError naming the head otherwise, nothing appended); reject is
// allowed on a stale proposal and leaves the document unchanged. One decision per
// proposal: the same submission replays (settling an unfinished head or judgment), a
// different submission on a decided proposal is a ConflictError ("already has a human
// decision"), a submission id reused with other content is one too ("submission id
// conflicts").
func (h *Handler) decide(ctx context.Context, o owner, proposalID string, b body) (any, *Error) {
	if e := b.only("disposition", "submissionId"); e != nil {
		return nil, e
	}
	disposition, e := b.str("disposition", true, 16)
	if e != nil {
		return nil, e
	}
	if disposition != "accept" && disposition != "reject" {
		return nil, invalid("disposition", RuleEnum, "must be accept or reject")
	}
	submissionID, e := b.id("submissionId")
	if e != nil {
		return nil, e
	}
	rec := records{h.store, o}
	var idx proposalIndex
	if _, err := rec.get(ctx, o.proposalPath(proposalID), &idx); errors.Is(err, ErrNotFound) {
		return nil, notFound("proposal")
	} else if err != nil {
		return nil, fromStore(err)
	}
	docID := idx.DocumentID
	proposedEv, err := rec.event(ctx, docID, proposalID)
	if err != nil {
		return nil, fromStore(err)
	}
	p := decodePayload[proposedPayload](proposedEv)
	var sub submission
	if _, err := rec.get(ctx, o.submissionPath(submissionID), &sub); err == nil {
		if sub.ProposalEventID != proposalID || sub.Disposition != disposition {
			return nil, conflict("submission id conflicts: %q was submitted with other content", submissionID)
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, fromStore(err)
	}
	decisionID := EventID(TypeDecision, proposalID)
	answer := decisionAnswer{DocumentID: docID, ProposalEventID: proposalID, Disposition: disposition, DecisionEventID: decisionID,
		JudgmentID: JudgmentID(decisionID)}
	return h.mutate(ctx, o, docID, func(hd head) (*intent, any, *Error) {
		prior, err := rec.event(ctx, docID, decisionID)
		switch {
		case err == nil:
			d := decodePayload[decisionPayload](prior)
			switch {
			case d.SubmissionID == submissionID && d.Disposition == disposition:
			case d.SubmissionID == submissionID:
				return nil, nil, conflict("submission id conflicts: %q was submitted with other content", submissionID)
			default:
				return nil, nil, conflict("proposal %s already has a human decision", proposalID)
			}
			// A replay: the judgment may be all that a crash left unwritten.
			j := h.judgmentOf(docID, p, prior, d)
			if _, err := rec.create(ctx, o.judgmentPath(docID, j.ID), j); err != nil {
				return nil, nil, fromStore(err)
			}
			answer.ResultVersionID = d.ResultVersionID
			return nil, answer, nil
		case !errors.Is(err, ErrNotFound):
			return nil, nil, fromStore(err)
		}
		if disposition == "accept" && hd.VersionID != p.Target.BaseVersionID {
			return nil, nil, staleBase(hd.VersionID)
		}
		now := h.opt.Now()
		in := &intent{Title: hd.Title, VersionID: hd.VersionID, Sha256: hd.Sha256, SizeBytes: hd.SizeBytes, Versions: hd.Versions, UpdatedAt: hd.UpdatedAt}
		d := decisionPayload{ProposalEventID: proposalID, Disposition: disposition, SubmissionID: submissionID, Authority: "human"}
		if disposition == "accept" {
			content := Content(hd.Title, p.ProposedText)
			d.ResultVersionID = VersionID(docID, content)
			if d.ResultVersionID != hd.VersionID {
				base := p.Target.BaseVersionID
				sha := sha256Hex(content)
				ev := h.newEvent(TypeVersion, hd.OriginEventID, proposalID, []string{docID, ReasonProposalAccepted, submissionID},
					versionPayload{DocumentID: docID, VersionID: d.ResultVersionID, BaseVersionID: &base, Sha256: sha, SizeBytes: len(content),
						Reason: ReasonProposalAccepted, ProposalEventID: proposalID, DecisionEventID: decisionID, RequestID: submissionID}, now)
				in.Version = &pendingVersion{Content: content, Event: ev}
				in.VersionID, in.Sha256, in.SizeBytes, in.Versions, in.UpdatedAt = d.ResultVersionID, sha, len(content), hd.Versions+1, timestamp(now)
			}
		}
		ev := h.newEvent(TypeDecision, hd.OriginEventID, proposalID, []string{proposalID}, d, now)
		in.Decision = &pendingDecision{Submission: submission{SubmissionID: submissionID, ProposalEventID: proposalID, Disposition: disposition},
			Event: ev, Judgment: h.judgmentOf(docID, p, ev, d)}
		answer.ResultVersionID = d.ResultVersionID
		return in, answer, nil
	})
}

// judgmentOf is the judgment of decision event ev (payload d) on proposal p: a
// function of the events, so a replay writes the same record.
func (h *Handler) judgmentOf(docID string, p proposedPayload, ev Event, d decisionPayload) judgment {
	return judgment{ID: JudgmentID(ev.ID), Criterion: JudgmentCriterion, Kind: d.Disposition, FeedbackSourceEventID: ev.ID,
		Source: JudgmentSource, DocumentID: docID, ProposalEventID: d.ProposalEventID, BaseVersionID: p.Target.BaseVersionID,
		ResultVersionID: d.ResultVersionID, ContextSnapshotID: p.Proposer.ContextSnapshotID, RunID: p.Proposer.RunID, RecordedAt: ev.OccurredAt}
}
