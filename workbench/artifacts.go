package workbench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Artifact proposals: the typed form of Propose and Decide for a surface that judges the
// artifacts it proposes itself (the OpenWOP facade's proposals of agent and chain packs).
// The rules, inertness, idempotency and scopes are those of proposals (proposals.go); the
// differences are only of form: the body is bytes stored exactly as given (after the
// redaction every write gets), the answers are the meta records, and an accept may require
// the whole workbench unchanged since a revision the surface judged it at
// (meta.ProposalDecide.ExpectRevision).

// ArtifactProposal is one artifact proposal (or a revision of one).
type ArtifactProposal struct {
	Workbench string
	// Path is where an accept publishes the body.
	Path string
	// RequestID (meta.ValidateName syntax) derives the proposal's id with the root,
	// workbench and path: a retry with the same one converges.
	RequestID   string
	Kind        string
	Metadata    json.RawMessage
	Body        []byte
	ContentType string
	// BaseGeneration is the generation of Path the proposal is against (0: Path must not
	// exist when it is accepted).
	BaseGeneration uint64
	// Supersedes names a pending proposal of the workbench this one revises.
	Supersedes string
}

// ProposeArtifact makes in (the rules of Propose): the record, and whether it answered a
// converged retry (replayed). A retry with other content is Conflict (details.reason
// "request_reused"); a superseded proposal that is no longer pending is Conflict
// ("already_decided").
func (s *Review) ProposeArtifact(ctx context.Context, agent string, in ArtifactProposal) (*meta.Proposal, bool, error) {
	if err := validateTarget(agent, in.Workbench, in.Path); err != nil {
		return nil, false, err
	}
	if err := checkWritable(in.Path); err != nil {
		return nil, false, err
	}
	if err := meta.ValidateName("request_id", in.RequestID); err != nil {
		return nil, false, AsError(err)
	}
	if err := mayWrite(ctx, agent); err != nil {
		return nil, false, err
	}
	if len(in.Metadata) > 0 && !json.Valid(in.Metadata) {
		return nil, false, invalidArgument("metadata", "must be a JSON value")
	}
	ct, werr := normalizeContentType(in.ContentType)
	if werr != nil {
		return nil, false, werr
	}
	if int64(len(in.Body)) > s.base.cfg.MCPMaxPayloadBytes {
		return nil, false, payloadTooLarge(int64(len(in.Body)), s.base.cfg.MCPMaxPayloadBytes)
	}
	d := sha256.Sum256(in.Body)
	hash := requestHash("propose-artifact", agent, in.Workbench, in.Path, strconv.FormatUint(in.BaseGeneration, 10),
		string(d[:]), ct, in.Kind, string(in.Metadata), in.Supersedes)
	view, err := s.base.readView(ctx, agent)
	if err != nil {
		return nil, false, AsError(err)
	}
	if old, err := view.Proposals().Get(agent, in.Workbench, meta.ProposalID(agent, in.Workbench, in.Path, in.RequestID)); err == nil {
		if old.ContentHash != hash {
			return nil, false, proposalConflict(AsError(&meta.Error{Code: meta.CodeConflict, Field: "request_id", Reason: meta.ReasonRequestReused,
				Message: "request id " + strconv.Quote(in.RequestID) + " was already used for another proposal"}))
		}
		return old, true, nil
	}
	done, werr := s.base.admitUpload(ctx)
	if werr != nil {
		return nil, false, werr
	}
	defer done()
	body, err := s.base.ingestBody(ctx, agent, bytes.NewReader(in.Body), int64(len(in.Body)), nil)
	if err != nil {
		return nil, false, err
	}
	defer body.release()
	cmd := meta.ProposalCreate{Agent: agent, Workspace: in.Workbench, Path: in.Path, RequestID: in.RequestID, ContentHash: hash,
		Kind: in.Kind, Metadata: in.Metadata, BaseGeneration: in.BaseGeneration, Supersedes: in.Supersedes,
		Body: meta.FileBody{Size: body.size, Digest: body.digest, ContentType: ct, Segments: body.segments, HashState: body.hashState}}
	res, werr := s.base.proposeBlobs(ctx, meta.Header{}, cmd, body)
	if werr != nil {
		return nil, false, proposalConflict(werr)
	}
	return res.Proposal, res.Replayed, nil
}

// ArtifactDecision is a decision on an artifact proposal.
type ArtifactDecision struct {
	Workbench, ProposalID string
	// Disposition is meta.DispositionAccept or meta.DispositionReject.
	Disposition  string
	Reason       string
	SubmissionID string
	// ExpectRevision, when non-zero, makes an accept require the workbench's Revision to
	// be exactly this: otherwise Conflict, details.reason "stale", nothing written.
	ExpectRevision uint64
	// Authors are the principal ids that authored the proposal, whom
	// Config.RequireDistinctReviewer refuses as its decider, when the surface knows them
	// better than the record (a chain of revisions); nil: the proposer the record names.
	Authors []string
}

// DecideArtifact decides a pending proposal (the rules and scopes of Decide: review and
// workspace:write; with Config.RequireDistinctReviewer, not by one of its authors). The answer is the FSM's: the proposal after the decision, its judgment,
// the published generation, and Replayed for a converged retry.
func (s *Review) DecideArtifact(ctx context.Context, agent string, in ArtifactDecision) (meta.Result, error) {
	if err := validateTarget(agent, in.Workbench, ""); err != nil {
		return meta.Result{}, err
	}
	if err := mayWrite(ctx, agent); err != nil {
		return meta.Result{}, err
	}
	if err := mayDo(ctx, agent, auth.ScopeReview, "review proposals of"); err != nil {
		return meta.Result{}, err
	}
	if err := meta.ValidateName("submission_id", in.SubmissionID); err != nil {
		return meta.Result{}, AsError(err)
	}
	if err := s.mayDecideOwn(ctx, agent, in.Workbench, in.ProposalID, in.Authors); err != nil {
		return meta.Result{}, err
	}
	h := requestHash("decide-artifact", agent, in.Workbench, in.ProposalID, in.Disposition, in.Reason)
	res, werr := s.base.propose(ctx, meta.Header{}, meta.ProposalDecide{Agent: agent, Workspace: in.Workbench, ID: in.ProposalID,
		Disposition: in.Disposition, Reason: in.Reason, SubmissionID: in.SubmissionID, ContentHash: h, ExpectRevision: in.ExpectRevision})
	if werr != nil {
		return meta.Result{}, proposalConflict(werr)
	}
	return res, nil
}

// ProposalBody returns proposal p's body (at most MCPMaxPayloadBytes), verified.
func (s *Review) ProposalBody(ctx context.Context, agent string, p *meta.Proposal) ([]byte, error) {
	b, werr := s.proposalBytes(ctx, agent, p)
	if werr != nil {
		return nil, werr
	}
	return b, nil
}

// MayReview checks that the request's principal may decide proposals of agent's root
// (review and workspace:write), so a surface can refuse before it judges anything.
func (s *Review) MayReview(ctx context.Context, agent string) error {
	if err := mayWrite(ctx, agent); err != nil {
		return err
	}
	if err := mayDo(ctx, agent, auth.ScopeReview, "review proposals of"); err != nil {
		return err
	}
	return nil
}
