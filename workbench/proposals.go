package workbench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Review-gated changes (issue 16 items 3-5): proposals of a body for a path of a
// workbench at an exact base generation, and decisions on them (meta/proposal.go holds
// the rules). A proposal is inert: it is a record of its own, invisible to every read,
// listing, grep, search, find and export of the workbench until it is accepted.
//
// Who may do what: proposing needs workspace:write (like any write); deciding needs the
// review scope as well (auth.ScopeReview; an accept writes the file, so workspace:write
// too): an agent key with only workspace:read and workspace:write can propose, not decide
// (PermissionDenied, details.scope "review"). A root the caller may not use answers as a
// missing one (NotFound).
//
// Four eyes: with Config.RequireDistinctReviewer (cairn serve --require-distinct-reviewer)
// a decision by the principal that made the proposal is PermissionDenied (403) with
// details.reason "self_review" (ReasonSelfReview), whatever its scopes, and changes
// nothing; the check compares the request's principal id with the proposer the record
// names, which never changes, so no race can slip a self-review past it.
//
// Idempotency: a proposal's id derives from (root, workbench, path, request_id), so a
// retried create converges on the first answer; the same request_id with other content is
// Conflict (details.reason "request_reused"). A decision's submission_id replays the first
// answer for the same content; any other decision on a decided proposal is Conflict with
// details.reason "already_decided" (details.state names the state), a reused submission_id
// with other content Conflict with "submission_reused". A stale accept (the path's head is
// not the base) is Conflict with details.reason "stale" and details.head_generation (0:
// the path does not exist), and changes nothing. None of these conflicts is retryable.

// ProposalEdit is an edit a proposal may carry instead of a body: the service resolves it
// against the file at the base generation (old_string must occur once unless
// replace_all) and proposes the resulting bytes.
type ProposalEdit struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll *bool  `json:"replace_all"`
}

// EvidenceInput is one evidence reference as a caller gives it: kind "file" (path,
// generation), "snapshot" (snapshot_id), "commit" (commit) or "feed" (position); workbench
// defaults to the proposal's.
type EvidenceInput struct {
	Kind       string `json:"kind"`
	Workbench  string `json:"workbench,omitempty"`
	Path       string `json:"path,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
	SnapshotID uint64 `json:"snapshot_id,omitempty"`
	Commit     string `json:"commit,omitempty"`
	Position   string `json:"position,omitempty"`
}

// ProposeInput is cairn_propose's input and REST's POST …/proposals body.
type ProposeInput struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	// BaseGeneration is the generation the proposal is against; 0: the path must not
	// exist; absent: the path's head now (0 when it does not exist).
	BaseGeneration *uint64 `json:"base_generation"`
	// Exactly one of Text, Base64 and Edit.
	Text        *string         `json:"text"`
	Base64      *string         `json:"base64"`
	Edit        *ProposalEdit   `json:"edit"`
	ContentType *string         `json:"content_type"`
	Reason      *string         `json:"reason"`
	Evidence    []EvidenceInput `json:"evidence"`
	RequestID   string          `json:"request_id"`
	// Supersedes names a pending proposal of the same workbench this one replaces (at
	// this path or another).
	Supersedes *string `json:"supersedes"`
	// Kind and Metadata annotate artifact proposals (issue 18); stored, not judged.
	Kind     *string         `json:"kind"`
	Metadata json.RawMessage `json:"metadata"`
}

// DecideInput is cairn_decide's input and REST's POST …/proposals/{id}/decision body.
type DecideInput struct {
	ID           string  `json:"id"`
	ProposalID   string  `json:"proposal_id"`
	Disposition  string  `json:"disposition"`
	Reason       *string `json:"reason"`
	SubmissionID string  `json:"submission_id"`
}

// ProposalsInput is cairn_proposals' input: a listing (proposal_id absent) or one
// proposal (proposal_id given, with its body and diff when include_body).
type ProposalsInput struct {
	ID          string  `json:"id"`
	ProposalID  *string `json:"proposal_id"`
	Path        *string `json:"path"`
	State       *string `json:"state"`
	Judgments   *bool   `json:"judgments"`
	IncludeBody *bool   `json:"include_body"`
	Cursor      *string `json:"cursor"`
	Limit       *int    `json:"limit"`
}

// DefaultProposalListLimit is a proposal or judgment page's default size.
const DefaultProposalListLimit = 100

// Propose makes a proposal (the rules at the top of this file). Its result is the
// proposal as ProposalResult renders it, with "replayed" for a converged retry.
func (s *Review) Propose(ctx context.Context, agent string, in ProposeInput) (Result, error) {
	if err := validateTarget(agent, in.ID, in.Path); err != nil {
		return nil, err
	}
	if in.Path == "" {
		return nil, invalidArgument("path", "must not be empty")
	}
	if err := checkWritable(in.Path); err != nil {
		return nil, err
	}
	if err := meta.ValidateName("request_id", in.RequestID); err != nil {
		return nil, AsError(err)
	}
	if err := mayWrite(ctx, agent); err != nil {
		return nil, err
	}
	if len(in.Metadata) > 0 && !json.Valid(in.Metadata) {
		return nil, invalidArgument("metadata", "must be a JSON value")
	}
	refs, werr := evidenceRefs(in.Evidence)
	if werr != nil {
		return nil, werr
	}
	hash, werr := s.proposeHash(agent, in, refs)
	if werr != nil {
		return nil, werr
	}
	id := meta.ProposalID(agent, in.ID, in.Path, in.RequestID)
	view, ws, err := s.base.workspaceView(ctx, agent, in.ID)
	if err != nil {
		return nil, err
	}
	if old, err := view.Proposals().Get(agent, in.ID, id); err == nil {
		// A retry: answered before anything is uploaded (and an edit resolved again).
		if old.ContentHash != hash {
			return nil, proposalConflict(AsError(&meta.Error{Code: meta.CodeConflict, Field: "request_id", Reason: meta.ReasonRequestReused,
				Message: "request id " + strconv.Quote(in.RequestID) + " was already used for another proposal of this path"}))
		}
		r := s.proposalResult(view, ws, old)
		r["replayed"] = true
		return r, nil
	}
	if !s.base.reach(ctx, agent).rootWide() {
		// The FSM resolves evidence in the whole root; a caller that reaches part of it
		// has each reference resolved in its own view first, so a hidden workbench or
		// path answers exactly as a missing one (meta.ProposalView.ResolveEvidence).
		if err := view.Proposals().ResolveEvidence(agent, in.ID, refs); err != nil {
			return nil, AsError(err)
		}
	}
	data, ct, base, werr := s.proposedBytes(ctx, agent, view, ws, in)
	if werr != nil {
		return nil, werr
	}
	done, werr := s.base.admitUpload(ctx)
	if werr != nil {
		return nil, werr
	}
	defer done()
	// Redacted as every write is (redact.go): the stored proposal is what an accept publishes.
	body, err := s.base.ingestBody(ctx, agent, bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		return nil, err
	}
	defer body.release()
	cmd := meta.ProposalCreate{Agent: agent, Workspace: in.ID, Path: in.Path, RequestID: in.RequestID, ContentHash: hash,
		Kind: deref(in.Kind), Metadata: in.Metadata, BaseGeneration: base, Reason: deref(in.Reason), Evidence: refs,
		Supersedes: deref(in.Supersedes),
		Body:       meta.FileBody{Size: body.size, Digest: body.digest, ContentType: ct, Segments: body.segments, HashState: body.hashState}}
	res, werr := s.base.proposeBlobs(ctx, meta.Header{}, cmd, body)
	if werr != nil {
		return nil, proposalConflict(werr)
	}
	after, err := s.base.readView(ctx, agent)
	if err != nil {
		return nil, AsError(err)
	}
	r := s.proposalResult(after, ws, res.Proposal)
	r["replayed"] = res.Replayed
	if res.Superseded != "" {
		r["superseded"] = res.Superseded
	}
	return r, nil
}

// proposeHash identifies a create's content for convergence: every input but the request
// id, with the body as its digest (an edit as its strings).
func (s *Review) proposeHash(agent string, in ProposeInput, refs []meta.EvidenceRef) (meta.Digest, *Error) {
	n := 0
	for _, set := range []bool{in.Text != nil, in.Base64 != nil, in.Edit != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return meta.Digest{}, invalidArgument("text", "give exactly one of text, base64 and edit")
	}
	var body string
	switch {
	case in.Edit != nil:
		body = fmt.Sprintf("edit\x00%s\x00%s\x00%v", in.Edit.OldString, in.Edit.NewString, deref(in.Edit.ReplaceAll))
	default:
		data, _, err := payload(s.base.cfg.MCPMaxPayloadBytes, in.Text, in.Base64)
		if err != nil {
			return meta.Digest{}, err
		}
		d := sha256.Sum256(data)
		body = "body\x00" + string(d[:])
	}
	base := "head"
	if in.BaseGeneration != nil {
		base = strconv.FormatUint(*in.BaseGeneration, 10)
	}
	ev, _ := json.Marshal(refs) // plain values
	return requestHash("propose", agent, in.ID, in.Path, base, body, deref(in.ContentType), deref(in.Reason),
		string(ev), deref(in.Supersedes), deref(in.Kind), string(in.Metadata)), nil
}

// proposedBytes resolves a create's body (text, base64, or an edit of the file at the
// base) and its base generation.
func (s *Review) proposedBytes(ctx context.Context, agent string, view *meta.View, ws *meta.Workspace, in ProposeInput) ([]byte, string, uint64, *Error) {
	var head *meta.Entry
	if e, err := view.File(ws, in.Path); err == nil {
		head = e
	} else if meta.CodeOf(err) != meta.CodeNotFound {
		return nil, "", 0, AsError(err)
	}
	base := uint64(0)
	if in.BaseGeneration != nil {
		base = *in.BaseGeneration
	} else if head != nil {
		base = head.Generation
	}
	if in.Edit == nil {
		data, ct, err := writePayload(s.base.cfg.MCPMaxPayloadBytes, in.Text, in.Base64, in.ContentType)
		if err != nil {
			return nil, "", 0, err
		}
		ct, err = normalizeContentType(ct)
		return data, ct, base, err
	}
	ed := in.Edit
	if ed.OldString == "" {
		return nil, "", 0, invalidArgument("edit.old_string", "must not be empty")
	}
	if !utf8.ValidString(ed.OldString) || !utf8.ValidString(ed.NewString) {
		return nil, "", 0, newError(CodeInvalidUTF8, "edit.old_string and edit.new_string must be valid UTF-8")
	}
	// An edit applies to the file at its base: the head (the only version every node can
	// read without history); a base that is not the head is stale.
	if head == nil || head.Generation != base {
		var hg uint64
		msg := "an edit applies to an existing file: the path has no file"
		if head != nil {
			hg = head.Generation
			msg = fmt.Sprintf("an edit applies to the file's head (generation %d), not generation %d", hg, base)
		}
		e := newError(CodeConflict, "%s", msg)
		e.Details["reason"], e.Details["head_generation"] = meta.ReasonStale, hg
		return nil, "", 0, e
	}
	if head.Size > s.base.cfg.MCPMaxPayloadBytes {
		return nil, "", 0, tooLargeToLoad(head.Size, s.base.cfg.MCPMaxPayloadBytes)
	}
	release, err := admit(ctx, s.base.loads)
	if err != nil {
		return nil, "", 0, AsError(err)
	}
	defer release()
	rd, err := s.base.openEntry(ctx, agent, head, 0, -1)
	if err != nil {
		return nil, "", 0, AsError(err)
	}
	defer rd.Close()
	old, err := readExact(rd, head.Size)
	if err != nil {
		return nil, "", 0, AsError(err)
	}
	if !utf8.Valid(old) {
		return nil, "", 0, newError(CodeInvalidUTF8, "the file is not valid UTF-8; an edit works on text only")
	}
	n := strings.Count(string(old), ed.OldString)
	switch {
	case n == 0:
		return nil, "", 0, newError(CodeNoMatch, "edit.old_string does not occur in the file")
	case n > 1 && !deref(ed.ReplaceAll):
		e := newError(CodeAmbiguousEdit, "edit.old_string occurs %d times; make it unique or set replace_all", n)
		e.Details["matches"] = n
		return nil, "", 0, e
	}
	if !deref(ed.ReplaceAll) {
		n = 1
	}
	if size := editedSize(len(old), n, len(ed.OldString), len(ed.NewString)); size > s.base.cfg.MCPMaxPayloadBytes {
		return nil, "", 0, payloadTooLarge(size, s.base.cfg.MCPMaxPayloadBytes)
	}
	ct := head.ContentType
	if in.ContentType != nil {
		var werr *Error
		if ct, werr = normalizeContentType(*in.ContentType); werr != nil {
			return nil, "", 0, werr
		}
	}
	return []byte(strings.Replace(string(old), ed.OldString, ed.NewString, n)), ct, base, nil
}

func evidenceRefs(in []EvidenceInput) ([]meta.EvidenceRef, *Error) {
	if len(in) > meta.MaxProposalEvidence {
		return nil, invalidArgument("evidence", "has %d references, more than %d", len(in), meta.MaxProposalEvidence)
	}
	out := make([]meta.EvidenceRef, 0, len(in))
	for _, e := range in {
		out = append(out, meta.EvidenceRef{Kind: meta.EvidenceKind(e.Kind), Workspace: e.Workbench, Path: e.Path,
			Generation: e.Generation, SnapshotID: e.SnapshotID, Commit: e.Commit, Position: e.Position})
	}
	return out, nil
}

// Decide accepts or rejects a pending proposal (the rules at the top of this file). The
// result: the proposal after the decision, its judgment, for an accept the published
// generation and the readback check (Readback), and "replayed".
func (s *Review) Decide(ctx context.Context, agent string, in DecideInput) (Result, error) {
	if err := validateTarget(agent, in.ID, ""); err != nil {
		return nil, err
	}
	if err := mayWrite(ctx, agent); err != nil { // an accept writes the file
		return nil, err
	}
	if err := mayDo(ctx, agent, auth.ScopeReview, "review proposals of"); err != nil {
		return nil, err
	}
	if err := meta.ValidateName("submission_id", in.SubmissionID); err != nil {
		return nil, AsError(err)
	}
	if err := s.mayDecideOwn(ctx, agent, in.ID, in.ProposalID, nil); err != nil {
		return nil, err
	}
	h := requestHash("decide", agent, in.ID, in.ProposalID, in.Disposition, deref(in.Reason))
	res, werr := s.base.propose(ctx, meta.Header{}, meta.ProposalDecide{Agent: agent, Workspace: in.ID, ID: in.ProposalID,
		Disposition: in.Disposition, Reason: deref(in.Reason), SubmissionID: in.SubmissionID, ContentHash: h})
	if werr != nil {
		return nil, proposalConflict(werr)
	}
	view, ws, err := s.base.workspaceView(ctx, agent, in.ID)
	if err != nil {
		return nil, err
	}
	r := s.proposalResult(view, ws, res.Proposal)
	r["judgment"] = judgmentResult(res.Judgment)
	r["replayed"] = res.Replayed
	if res.Judgment.Disposition == meta.DispositionAccept {
		r["result_generation"] = res.Judgment.ResultGeneration
		rb, werr := s.Readback(ctx, agent, view, ws, res.Proposal, res.Judgment.ResultGeneration)
		if werr != nil {
			return nil, werr
		}
		r["readback"] = rb
	}
	return r, nil
}

// ReasonSelfReview is details.reason of the PermissionDenied that refuses a decision by
// the proposal's own proposer under Config.RequireDistinctReviewer.
const ReasonSelfReview = "self_review"

// MayDecide answers the PermissionDenied of Config.RequireDistinctReviewer when the
// request's principal is one of authors (principal ids; "" is the principal-less work of
// a node without one), so a surface that judges before it decides can refuse first. nil
// when the setting is off or the caller is none of them.
func (s *Review) MayDecide(ctx context.Context, authors []string) error {
	if err := s.selfReview(ctx, authors); err != nil {
		return err
	}
	return nil
}

func (s *Review) selfReview(ctx context.Context, authors []string) *Error {
	if !s.cfg.RequireDistinctReviewer {
		return nil
	}
	me := PrincipalID(ctx)
	if !slices.Contains(authors, me) {
		return nil
	}
	e := newError(CodePermissionDenied, "principal %q proposed this change and may not decide it: this node requires a reviewer other than the proposer", me)
	e.Details["reason"] = ReasonSelfReview
	return e
}

// mayDecideOwn applies Config.RequireDistinctReviewer to a decision on proposal id of
// workbench ws: authors, or when nil the proposer its record names. A proposal that
// cannot be read passes: the decision itself answers for it (NotFound), the same way
// for a missing and a hidden one.
func (s *Review) mayDecideOwn(ctx context.Context, agent, ws, id string, authors []string) *Error {
	if !s.cfg.RequireDistinctReviewer {
		return nil
	}
	if authors == nil {
		view, err := s.base.readView(ctx, agent)
		if err != nil {
			return AsError(err)
		}
		p, err := view.Proposals().Get(agent, ws, id)
		if err != nil {
			return nil
		}
		authors = []string{p.Proposer.Principal}
	}
	return s.selfReview(ctx, authors)
}

// proposalConflict gives the conflicts of proposals and decisions (AsError copied their
// details.reason) details.head_generation for a stale one and makes them not retryable:
// none succeeds by trying again.
func proposalConflict(e *Error) *Error {
	if e == nil || e.Code != CodeConflict {
		return e
	}
	switch e.Details["reason"] {
	case meta.ReasonStale:
		hg, _ := e.Details["current_generation"].(uint64)
		e.Details["head_generation"] = hg
	case meta.ReasonAlreadyDecided, meta.ReasonSubmissionReused, meta.ReasonRequestReused:
	default:
		return e
	}
	e.Retryable = false
	return e
}
