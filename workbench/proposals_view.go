package workbench

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/cairnstore/cairn/workbench/diff"

	"github.com/cairnstore/cairn/meta"
)

// Reading proposals and judgments: one proposal, paged listings, and the readback check
// of an accept (proposals.go has the rules).

// Proposals is cairn_proposals: one proposal (proposal_id given; with include_body its
// bytes and its diff against the base), the judgments of the workbench (judgments true),
// or a page of its proposals filtered by path and state, in creation order. Every
// proposal carries stale (its base is not the path's head) and head_generation.
func (s *Review) Proposals(ctx context.Context, agent string, in ProposalsInput) (Result, error) {
	if err := validateTarget(agent, in.ID, deref(in.Path)); err != nil {
		return nil, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return nil, err
	}
	view, ws, err := s.base.workspaceView(ctx, agent, in.ID)
	if err != nil {
		return nil, err
	}
	switch {
	case in.ProposalID != nil:
		return s.proposalGet(ctx, agent, view, ws, *in.ProposalID, deref(in.IncludeBody))
	case deref(in.Judgments):
		return s.judgmentPage(ctx, agent, view, ws, in)
	}
	return s.proposalPage(ctx, agent, view, ws, in)
}

func (s *Review) proposalGet(ctx context.Context, agent string, view *meta.View, ws *meta.Workspace, id string, body bool) (Result, error) {
	p, err := view.Proposals().Get(agent, ws.Name, id)
	if err != nil {
		return nil, AsError(err)
	}
	r := s.proposalResult(view, ws, p)
	if !body {
		return r, nil
	}
	data, werr := s.proposalBytes(ctx, agent, p)
	if werr != nil {
		return nil, werr
	}
	if utf8.Valid(data) {
		r["text"] = string(data)
	} else {
		r["base64"] = base64.StdEncoding.EncodeToString(data)
	}
	r["diff"] = s.proposalDiff(ctx, agent, view, ws, p, data)
	return r, nil
}

// proposalDiff is the diff of a proposal's body against its base (workbench/diff, as
// cairn_diff shows a file's): base generation 0 diffs against an empty file. nil when the
// base is no longer retained or cannot be read (the caller still shows the bytes).
func (s *Review) proposalDiff(ctx context.Context, agent string, view *meta.View, ws *meta.Workspace, p *meta.Proposal, _ []byte) any {
	var base *meta.Entry
	if p.BaseGeneration != 0 {
		e, err := fileAtGeneration(view, ws, p.Path, p.BaseGeneration)
		if err != nil {
			return nil
		}
		base = e
	}
	proposed := &meta.Entry{Size: p.Body.Size, Digest: p.Body.Digest, Segments: p.Body.Segments}
	res, err := s.diffBodies(ctx, agent, base, proposed, diff.DefaultOptions())
	if err != nil {
		return nil
	}
	return map[string]any{"identical": res.Identical, "text": res.Text, "unified": res.Unified, "hunks": res.Hunks,
		"hunk_count": res.HunkCount, "lines_deleted": res.LinesDeleted, "lines_inserted": res.LinesInserted,
		"truncated": res.Truncated, "approximate": res.Approximate, "reason": nilIfEmpty(res.Reason)}
}

// proposalBytes loads a proposal's stored body (bounded by the MCP payload cap), verified
// like every read.
func (s *Review) proposalBytes(ctx context.Context, agent string, p *meta.Proposal) ([]byte, *Error) {
	b := p.Body
	if b.Size > s.base.cfg.MCPMaxPayloadBytes {
		return nil, tooLargeToLoad(b.Size, s.base.cfg.MCPMaxPayloadBytes)
	}
	return s.loadEntry(ctx, agent, &meta.Entry{Size: b.Size, Digest: b.Digest, Segments: b.Segments})
}

// loadEntry reads a whole body under a load slot.
func (s *Review) loadEntry(ctx context.Context, agent string, e *meta.Entry) ([]byte, *Error) {
	release, err := admit(ctx, s.base.loads)
	if err != nil {
		return nil, AsError(err)
	}
	defer release()
	rd, err := s.base.openEntry(ctx, agent, e, 0, -1)
	if err != nil {
		return nil, AsError(err)
	}
	defer rd.Close()
	data, err := readExact(rd, e.Size)
	if err != nil {
		return nil, AsError(err)
	}
	return data, nil
}

func (s *Review) proposalPage(ctx context.Context, agent string, view *meta.View, ws *meta.Workspace, in ProposalsInput) (Result, error) {
	state := meta.ProposalState(deref(in.State))
	switch state {
	case "", meta.ProposalPending, meta.ProposalAccepted, meta.ProposalRejected, meta.ProposalSuperseded:
	default:
		return nil, invalidArgument("state", "must be pending, accepted, rejected or superseded, got %q", state)
	}
	after, limit, werr := s.pageArgs(ctx, "proposals", agent, ws, in, string(state))
	if werr != nil {
		return nil, werr
	}
	list, more, err := view.Proposals().List(agent, ws.Name, meta.ProposalFilter{Path: deref(in.Path), State: state}, after, limit)
	if err != nil {
		return nil, AsError(err)
	}
	list, more, cost := fitPage(list, more, s.base.listingPageMaxBytes(), proposalAnswerBytes)
	release, werr := s.base.admit(ctx, cost, "the proposal listing", -1)
	if werr != nil {
		return nil, werr
	}
	defer release()
	items := make([]Result, 0, len(list))
	for _, p := range list {
		items = append(items, s.proposalResult(view, ws, p))
	}
	var next any
	if more {
		next = s.base.cursors.encode(ctx, cursor{Kind: "proposals", Agent: agent, Workbench: ws.Name, Incarnation: ws.Incarnation, Created: ws.CreatedVersion,
			Path: deref(in.Path), Args: string(state), Offset: int64(list[len(list)-1].CreatedVersion)})
	}
	return Result{"status": "success", "workbench_id": ws.Name, "proposals": items, "next_cursor": next, "truncated": more}, nil
}

func (s *Review) judgmentPage(ctx context.Context, agent string, view *meta.View, ws *meta.Workspace, in ProposalsInput) (Result, error) {
	after, limit, werr := s.pageArgs(ctx, "judgments", agent, ws, in, "")
	if werr != nil {
		return nil, werr
	}
	list, more, err := view.Proposals().Judgments(agent, ws.Name, deref(in.Path), after, limit)
	if err != nil {
		return nil, AsError(err)
	}
	list, more, cost := fitPage(list, more, s.base.listingPageMaxBytes(), judgmentAnswerBytes)
	release, werr := s.base.admit(ctx, cost, "the judgment listing", -1)
	if werr != nil {
		return nil, werr
	}
	defer release()
	items := make([]map[string]any, 0, len(list))
	for _, j := range list {
		items = append(items, judgmentResult(j))
	}
	var next any
	if more {
		next = s.base.cursors.encode(ctx, cursor{Kind: "judgments", Agent: agent, Workbench: ws.Name, Incarnation: ws.Incarnation, Created: ws.CreatedVersion,
			Path: deref(in.Path), Offset: int64(list[len(list)-1].Version)})
	}
	return Result{"status": "success", "workbench_id": ws.Name, "judgments": items, "next_cursor": next, "truncated": more}, nil
}

// Memory of a listing page (admission.go). A page is cut, truncated with a next_cursor as
// at its limit, where its estimate would pass listingPageMaxBytes, so a listing of 1000
// proposals that each carry 64 KiB of metadata answers in several pages rather than
// holding one answer of hundreds of megabytes.
const (
	// listingBaseBytes is a page's fixed part.
	listingBaseBytes = 16 << 10
	// proposalRenderBytes is one proposal's rendered fields besides its texts (about 30
	// map entries and their strings), in the answer's map and its JSON.
	proposalRenderBytes = 4 << 10
	// evidenceRenderBytes is one evidence reference's map and JSON.
	evidenceRenderBytes = 1 << 10
	// textCopies is how many copies of a stored text (metadata, reason) an answer holds at
	// once: the rendered value, the JSON encoder's buffer (which grows by doubling) and
	// the surface's framing of it (api/rest WriteJSON).
	textCopies = 4
	// listingPageShare is the largest part of the budget one page may take, as a divisor.
	listingPageShare = 8
	// maxListingPageBytes bounds a page's estimate whatever the budget.
	maxListingPageBytes = 64 << 20
)

// proposalAnswerBytes estimates the memory of one proposal in a listing's answer.
func proposalAnswerBytes(p *meta.Proposal) int64 {
	n := int64(proposalRenderBytes) + int64(len(p.Evidence))*evidenceRenderBytes +
		textCopies*int64(len(p.Metadata)+len(p.Reason)+len(p.Path))
	if p.Decision != nil {
		n += judgmentAnswerBytes(p.Decision)
	}
	return n
}

// judgmentAnswerBytes estimates the memory of one judgment in a listing's answer.
func judgmentAnswerBytes(j *meta.Judgment) int64 {
	return proposalRenderBytes + textCopies*int64(len(j.Reason)+len(j.Path))
}

// fitPage cuts list where its estimate (listingBaseBytes plus cost of each item) would
// pass bound, keeping at least one item; more is set when it cut. It returns the kept items
// and their estimate.
func fitPage[T any](list []T, more bool, bound int64, cost func(T) int64) ([]T, bool, int64) {
	total := int64(listingBaseBytes)
	for i, it := range list {
		c := cost(it)
		if i > 0 && total+c > bound {
			return list[:i], true, total
		}
		total += c
	}
	return list, more, total
}

// pageArgs checks a listing's limit and cursor (signed for the same kind, workbench
// incarnation, path and filter) and returns the version to continue after.
func (s *Review) pageArgs(ctx context.Context, kind, agent string, ws *meta.Workspace, in ProposalsInput, args string) (uint64, int, *Error) {
	limit, werr := limitArg(in.Limit, DefaultProposalListLimit, meta.MaxProposalListLimit)
	if werr != nil {
		return 0, 0, werr
	}
	if in.Cursor == nil || *in.Cursor == "" {
		return 0, limit, nil
	}
	cur, werr := s.base.cursors.decode(ctx, *in.Cursor, kind, agent, ws.Name, deref(in.Path))
	if werr != nil {
		return 0, 0, werr
	}
	if !cur.issuedFor(ws) || cur.Args != args || cur.Offset < 0 {
		return 0, 0, invalidArgument("cursor", "was issued for other arguments")
	}
	return uint64(cur.Offset), limit, nil
}

// proposalResult renders a proposal with its computed staleness against view's head.
func (s *Review) proposalResult(view *meta.View, ws *meta.Workspace, p *meta.Proposal) Result {
	var head any
	stale := p.BaseGeneration != 0
	if e, err := view.File(ws, p.Path); err == nil {
		head = e.Generation
		stale = e.Generation != p.BaseGeneration
	}
	ev := make([]map[string]any, 0, len(p.Evidence))
	for _, e := range p.Evidence {
		m := map[string]any{"kind": string(e.Ref.Kind), "workbench": e.Ref.Workspace}
		switch e.Ref.Kind {
		case meta.EvidenceFile:
			m["path"], m["generation"], m["digest_uri"], m["size_bytes"] = e.Ref.Path, e.Ref.Generation, DigestURI(e.Digest), e.Size
		case meta.EvidenceSnapshot:
			m["snapshot_id"], m["read_version"] = e.Ref.SnapshotID, e.Version
		case meta.EvidenceCommit:
			m["commit"], m["version"], m["tree_digest_uri"] = e.Ref.Commit, e.Version, e.TreeDigestURI
			m["envelope_digest_uri"], m["envelope_size_bytes"] = DigestURI(e.Digest), e.Size
		case meta.EvidenceFeed:
			m["position"] = e.Ref.Position
		}
		ev = append(ev, m)
	}
	r := Result{"status": "success", "proposal_id": p.ID, "workbench_id": p.Workspace, "path": p.Path,
		"presentation": s.base.WorkbenchPath(p.Agent, p.Workspace) + "/" + p.Path, "kind": nilIfEmpty(p.Kind),
		"state": string(p.State), "base_generation": p.BaseGeneration, "head_generation": head, "stale": stale,
		"size_bytes": p.Body.Size, "digest_uri": DigestURI(p.Body.Digest), "content_type": p.Body.ContentType,
		"reason": p.Reason, "evidence": ev, "context_digest": DigestURI(p.ContextDigest),
		"proposer": p.Proposer.String(), "proposer_principal": p.Proposer.Principal, "proposer_surface": p.Proposer.Surface,
		"created_at": time.UnixMilli(p.CreatedAtMs).UTC().Format(time.RFC3339Nano), "created_version": p.CreatedVersion,
		"request_id": p.RequestID, "supersedes": nilIfEmpty(p.Supersedes), "superseded_by": nilIfEmpty(p.SupersededBy),
		"judgment": nil, "metadata": nil}
	if len(p.Metadata) > 0 {
		r["metadata"] = json.RawMessage(p.Metadata)
	}
	if p.Decision != nil {
		r["judgment"] = judgmentResult(p.Decision)
	}
	return r
}

// judgmentResult renders a judgment with every link: proposal, base, result, context,
// proposer and the deciding principal.
func judgmentResult(j *meta.Judgment) map[string]any {
	var result any
	if j.ResultGeneration != 0 {
		result = j.ResultGeneration
	}
	return map[string]any{"proposal_id": j.ProposalID, "workbench_id": j.Workspace, "path": j.Path,
		"disposition": j.Disposition, "reason": j.Reason, "principal": j.Principal.Principal, "decided_by": j.Principal.String(),
		"surface": j.Principal.Surface, "decided_at": time.UnixMilli(j.AtMs).UTC().Format(time.RFC3339Nano), "version": j.Version,
		"base_generation": j.BaseGeneration, "result_generation": result, "submission_id": j.SubmissionID,
		"context_digest": DigestURI(j.ContextDigest), "proposer": j.Proposer.String()}
}

// Readback checks an accept: the file at the published generation holds exactly the
// proposal's stored bytes (their SHA-256 are compared after both are read through the
// verified read path), and when both are JSON they are RFC 8785 equal (JCSEqual). Bodies
// above the MCP payload cap are checked by digest only ("loaded": false). The check runs
// on view (after the decision); a file already changed again is read at its version
// while retained, else reported "checked": false.
func (s *Review) Readback(ctx context.Context, agent string, view *meta.View, ws *meta.Workspace, p *meta.Proposal, generation uint64) (map[string]any, *Error) {
	out := map[string]any{"generation": generation, "checked": false, "loaded": false, "bytes_equal": nil, "jcs_equal": nil}
	at, err := view.At(generation)
	if err != nil {
		return out, nil
	}
	e, err := at.File(ws, p.Path)
	if err != nil || e.Generation != generation {
		return out, nil
	}
	out["checked"] = true
	out["bytes_equal"] = e.Digest == p.Body.Digest && e.Size == p.Body.Size
	if e.Size > s.base.cfg.MCPMaxPayloadBytes {
		return out, nil
	}
	file, werr := s.loadEntry(ctx, agent, e)
	if werr != nil {
		return nil, werr
	}
	stored, werr := s.proposalBytes(ctx, agent, p)
	if werr != nil {
		return nil, werr
	}
	out["loaded"] = true
	fd, sd := sha256.Sum256(file), sha256.Sum256(stored)
	out["bytes_equal"] = fd == sd && meta.Digest(fd) == p.Body.Digest
	out["digest_uri"] = "sha256:" + hex.EncodeToString(fd[:])
	if eq, isJSON := JCSEqual(file, stored); isJSON {
		out["jcs_equal"] = eq
	}
	return out, nil
}
