package meta

import (
	"crypto/sha256"
	"strconv"
	"unicode/utf8"
)

// Applying proposal commands: create (with frozen evidence and supersede), decide (accept
// as a compare-and-swap publish, reject), and retention (proposal.go has the rules).

// feedPositionExists reports whether pos ("<shard version>.<index>") names a change-feed
// event agent's root still retains.
func (s *state) feedPositionExists(agent, pos string) bool {
	p, err := ParseFeedPosition("position", pos)
	if err != nil {
		return false
	}
	_, ok := s.feed.events.Get(feedKey(agent, p))
	return ok
}

// feedPositionShown is feedPositionExists for the events its view shows (FeedView.shows).
func (pv ProposalView) feedPositionShown(agent, pos string) bool {
	p, err := ParseFeedPosition("position", pos)
	if err != nil {
		return false
	}
	e, ok := pv.v.st.feed.events.Get(feedKey(agent, p))
	return ok && pv.v.Feed().shows(agent, e)
}

// contextDigest hashes the frozen evidence: the deterministic CBOR of the list, domain
// separated.
func contextDigest(ev []Evidence) Digest {
	raw, _ := encMode.Marshal(ev) // plain values: encoding cannot fail
	return sha256.Sum256(append([]byte("cairn-proposal-context-v1\x00"), raw...))
}

func validateProposalText(field, r string, max int) *Error {
	if n := utf8.RuneCountInString(r); !utf8.ValidString(r) || n > max {
		return invalidArg(field, "must be valid UTF-8 of at most %d characters", max)
	}
	return nil
}

// proposalApplier applies proposals: create (with frozen evidence and supersede), decide,
// and their retention steps. Nothing of a proposal reaches the files until an accept
// publishes it through files.publish, as one compare-and-swap at its base generation;
// while a proposal is kept its body's blobs hold references and its evidence holds pin
// history (files.ref, files.addHold), both released once when it is retired.
type proposalApplier struct {
	*applyCtx
	files *fileApplier
	feed  *feedApplier
}

func (a *proposalApplier) proposalCreate(c ProposalCreate) Result {
	if err := ValidateName("request_id", c.RequestID); err != nil {
		return Result{Err: err}
	}
	if len(c.RequestID) > MaxProposalRequestID {
		return Result{Err: invalidArg("request_id", "must be at most %d bytes", MaxProposalRequestID)}
	}
	if err := validateProposalFields(c); err != nil {
		return Result{Err: err}
	}
	ws, err := a.files.target(c.Agent, c.Workspace, c.Path, false)
	if err != nil {
		return Result{Err: err}
	}
	s := a.st
	id := ProposalID(c.Agent, c.Workspace, c.Path, c.RequestID)
	if old, ok := s.props.byID.Get(proposalKey(c.Agent, id)); ok {
		if old.ContentHash != c.ContentHash || old.Incarnation != ws.Incarnation {
			return Result{Err: &Error{Code: CodeConflict, Field: "request_id", Reason: ReasonRequestReused,
				Message: "request id " + strconv.Quote(c.RequestID) + " was already used for another proposal of this path"}}
		}
		return Result{Proposal: old, Replayed: true}
	}
	if IsReservedPath(c.Path) {
		return Result{Err: invalidArg("path", "%s is written only by commit and restore", c.Path)}
	}
	if err := a.files.checkPublishable(c.Agent, c.Body.Segments); err != nil {
		return Result{Err: err}
	}
	var sup *Proposal
	if c.Supersedes != "" {
		old, ok := s.props.byID.Get(proposalKey(c.Agent, c.Supersedes))
		if !ok || old.Incarnation != ws.Incarnation {
			return Result{Err: &Error{Code: CodeNotFound, Field: "supersedes", Message: "no proposal " + strconv.Quote(c.Supersedes) + " of this workbench exists"}}
		}
		if old.State != ProposalPending {
			return Result{Err: alreadyDecided(old)}
		}
		sup = old
	}
	if n, _ := s.props.count.Get(c.Agent); n >= int64(a.opts.ProposalsMaxPerRoot) {
		return Result{Err: &Error{Code: CodeResourceExhausted, Quota: QuotaProposals, Limit: int64(a.opts.ProposalsMaxPerRoot), Used: n, Requested: 1,
			Message: "the agent root keeps " + strconv.FormatInt(n, 10) + " proposals already: decide or let some expire first"}}
	}
	ev, eerr := freezeEvidence(a.st, nil, c.Agent, ws, c.Evidence)
	if eerr != nil {
		return Result{Err: eerr}
	}
	// Every check passed: from here on the command applies whole.
	root, _ := s.roots.Get(c.Agent)
	for i := range ev {
		if ev[i].HoldIncarnation != 0 {
			a.files.addHold(ev[i].HoldIncarnation, ev[i].Version)
		}
	}
	a.files.ref(root.UID, c.Body.Segments, +1)
	p := &Proposal{ID: id, Agent: c.Agent, Workspace: c.Workspace, Incarnation: ws.Incarnation, Path: c.Path,
		Kind: c.Kind, Metadata: c.Metadata, BaseGeneration: c.BaseGeneration, Body: c.Body, Reason: c.Reason,
		Evidence: ev, ContextDigest: contextDigest(ev), Proposer: a.prod, CreatedVersion: s.version,
		CreatedAtMs: s.nowMs, State: ProposalPending, RequestID: c.RequestID, ContentHash: c.ContentHash, Supersedes: c.Supersedes}
	s.props.set(p)
	n, _ := s.props.count.Get(c.Agent)
	s.props.count.Set(c.Agent, n+1)
	a.scheduleProposal(p, s.nowMs+a.opts.ProposalPendingTTL.Milliseconds())
	res := Result{Proposal: p}
	if sup != nil {
		ns := *sup
		ns.State, ns.SupersededBy, ns.ClosedAtMs = ProposalSuperseded, id, s.nowMs
		s.props.set(&ns)
		a.scheduleProposal(&ns, s.nowMs+a.closedRetentionMs(ns.Agent))
		res.Superseded = sup.ID
	}
	return res
}

func validateProposalFields(c ProposalCreate) *Error {
	if err := validateFileBody("body", c.Body); err != nil {
		return err
	}
	if len(c.Kind) > MaxProposalKindBytes {
		return invalidArg("kind", "must be at most %d bytes", MaxProposalKindBytes)
	}
	if len(c.Metadata) > MaxProposalMetadataBytes {
		return invalidArg("metadata", "must be at most %d bytes", MaxProposalMetadataBytes)
	}
	if err := validateProposalText("reason", c.Reason, MaxProposalReasonChars); err != nil {
		return err
	}
	if len(c.Evidence) > MaxProposalEvidence {
		return invalidArg("evidence", "has %d references, more than %d", len(c.Evidence), MaxProposalEvidence)
	}
	return nil
}

// ResolveEvidence answers what a ProposalCreate of workbench own carrying refs would answer
// for them if the state held only what v shows (Only, OnlyPaths): nil when every
// reference resolves, else the error the FSM gives the first one that does not. A
// reference to a workbench, path or change-feed event v hides answers exactly as one to
// a missing workbench, path or event, by the same code: a surface checks a restricted
// caller's evidence with it before proposing (workbench/proposals.go), since the FSM,
// which resolves evidence again when it applies, knows no principal. NotFound when own is
// not a workbench v shows.
func (pv ProposalView) ResolveEvidence(agent, own string, refs []EvidenceRef) error {
	ws, err := pv.v.Workspace(agent, own)
	if err != nil {
		return err
	}
	if _, err := freezeEvidence(pv.v.st, pv.v, agent, ws, refs); err != nil {
		return err
	}
	return nil
}

// freezeEvidence resolves every reference (each must exist now) and records what it names.
// With a view (ResolveEvidence), what the view hides is missing.
func freezeEvidence(s *state, v *View, agent string, own *Workspace, refs []EvidenceRef) ([]Evidence, *Error) {
	out := make([]Evidence, 0, len(refs))
	for i, r := range refs {
		field := "evidence[" + strconv.Itoa(i) + "]"
		wsName := r.Workspace
		if wsName == "" {
			wsName = own.Name
			r.Workspace = own.Name
		}
		ws, ok := s.workspaces.Get(workspaceKey(agent, wsName))
		if v != nil && !v.shows(agent, wsName) {
			ok = false
		}
		if r.Kind != EvidenceFeed && (!ok || ws.State != WorkspaceVisible) {
			return nil, &Error{Code: CodeNotFound, Field: field + ".workbench", Message: "workbench " + strconv.Quote(wsName) + " does not exist"}
		}
		ev := Evidence{Ref: r}
		switch r.Kind {
		case EvidenceFile:
			if err := ValidatePath(field+".path", r.Path); err != nil {
				return nil, err
			}
			el, found := fileAtGeneration(s, ws.Incarnation, r.Path, r.Generation)
			if !found || v != nil && !v.ShowsPath(agent, r.Path) {
				return nil, &Error{Code: CodeNotFound, Field: field + ".generation", Message: "no retained version of " + strconv.Quote(r.Path) + " has generation " + strconv.FormatUint(r.Generation, 10)}
			}
			ev.Digest, ev.Size, ev.Version, ev.HoldIncarnation = el.Entry.Digest, el.Entry.Size, el.Version, ws.Incarnation
		case EvidenceSnapshot:
			snap, ok := s.snapshots.Get(snapshotKey(agent, r.SnapshotID))
			if !ok || snap.Incarnation != ws.Incarnation || snap.StateAt(s.nowMs) != SnapshotAlive {
				return nil, &Error{Code: CodeSnapshotNotFound, Field: field + ".snapshot_id", Message: "workbench " + strconv.Quote(wsName) + " has no alive snapshot " + strconv.FormatUint(r.SnapshotID, 10)}
			}
			ev.Version, ev.HoldIncarnation = snap.ReadVersion, ws.Incarnation
		case EvidenceCommit:
			cm, ok := s.commits.Get(commitKey(ws.Incarnation, r.Commit))
			if !ok || r.Commit == "" {
				return nil, &Error{Code: CodeNotFound, Field: field + ".commit", Message: "workbench " + strconv.Quote(wsName) + " has no commit " + strconv.Quote(r.Commit)}
			}
			ev.Digest, ev.Size, ev.Version, ev.TreeDigestURI = cm.EnvelopeDigest, cm.EnvelopeSize, cm.Version, cm.TreeDigestURI
		case EvidenceFeed:
			if v == nil && !s.feedPositionExists(agent, r.Position) || v != nil && !v.Proposals().feedPositionShown(agent, r.Position) {
				return nil, invalidArg(field+".position", "change-feed position %q is not retained (or the change feed is not available)", r.Position)
			}
		default:
			return nil, invalidArg(field+".kind", "must be file, snapshot, commit or feed, got %q", r.Kind)
		}
		out = append(out, ev)
	}
	return out, nil
}

// fileAtGeneration returns the retained chain element of path whose body has generation g.
func fileAtGeneration(s *state, inc uint64, path string, g uint64) (version, bool) {
	rec, ok := s.paths.Get(pathKey(inc, path))
	if !ok || g == 0 {
		return version{}, false
	}
	for _, el := range rec.Chain {
		if el.Entry != nil && el.Entry.Generation == g {
			return el, true
		}
	}
	return version{}, false
}

func alreadyDecided(p *Proposal) *Error {
	return &Error{Code: CodeConflict, Reason: ReasonAlreadyDecided, State: string(p.State),
		Message: "proposal " + p.ID + " is already " + string(p.State)}
}

func (a *proposalApplier) proposalDecide(c ProposalDecide) Result {
	if err := ValidateName("agent", c.Agent); err != nil {
		return Result{Err: err}
	}
	if err := ValidateName("id", c.Workspace); err != nil {
		return Result{Err: err}
	}
	if err := ValidateName("submission_id", c.SubmissionID); err != nil {
		return Result{Err: err}
	}
	if c.Disposition != DispositionAccept && c.Disposition != DispositionReject {
		return Result{Err: invalidArg("disposition", "must be %q or %q, got %q", DispositionAccept, DispositionReject, c.Disposition)}
	}
	if err := validateProposalText("reason", c.Reason, MaxProposalReasonChars); err != nil {
		return Result{Err: err}
	}
	s := a.st
	p, perr := liveProposal(s, c.Agent, c.Workspace, c.ID)
	if perr != nil {
		return Result{Err: perr}
	}
	if p.State != ProposalPending {
		if j := p.Decision; j != nil && j.SubmissionID == c.SubmissionID {
			if j.ContentHash != c.ContentHash {
				return Result{Err: &Error{Code: CodeConflict, Field: "submission_id", Reason: ReasonSubmissionReused, State: string(p.State),
					Message: "submission id " + strconv.Quote(c.SubmissionID) + " was already used for another decision"}}
			}
			return Result{Proposal: p, Judgment: j, Generation: j.ResultGeneration, Replayed: true}
		}
		return Result{Err: alreadyDecided(p)}
	}
	ws, _ := s.workspaces.Get(workspaceKey(c.Agent, c.Workspace))
	j := &Judgment{ProposalID: p.ID, Workspace: p.Workspace, Path: p.Path, Principal: a.prod, AtMs: s.nowMs,
		Version: s.version, Disposition: c.Disposition, Reason: c.Reason, BaseGeneration: p.BaseGeneration,
		SubmissionID: c.SubmissionID, ContentHash: c.ContentHash, ContextDigest: p.ContextDigest, Proposer: p.Proposer}
	res := Result{}
	if c.Disposition == DispositionAccept {
		if c.ExpectRevision != 0 && ws.Revision != c.ExpectRevision {
			return Result{Err: &Error{Code: CodeConflict, Reason: ReasonStale,
				Message: "the workbench changed since revision " + strconv.FormatUint(c.ExpectRevision, 10) + " (now " + strconv.FormatUint(ws.Revision, 10) + ")"}}
		}
		r := a.acceptProposal(ws, p)
		if r.Err != nil {
			return r
		}
		j.ResultGeneration = r.Generation
		res = r
	}
	np := *p
	np.Decision, np.ClosedAtMs = j, s.nowMs
	np.State = ProposalRejected
	if c.Disposition == DispositionAccept {
		np.State = ProposalAccepted
	}
	s.props.set(&np)
	a.scheduleProposal(&np, s.nowMs+a.closedRetentionMs(np.Agent))
	a.feed.emit(c.Agent, Event{Kind: EventProposalDecide, Workbench: np.Workspace, Path: np.Path, Generation: j.ResultGeneration,
		Proposal: np.ID, Disposition: string(c.Disposition), Producer: a.prod})
	res.Proposal, res.Judgment = &np, j
	return res
}

// acceptProposal publishes p's body at its path if the path is still at p's base.
func (a *proposalApplier) acceptProposal(ws *Workspace, p *Proposal) Result {
	rec, cur := a.files.current(ws, p.Path)
	switch {
	case p.BaseGeneration == 0 && cur != nil:
		return Result{Err: &Error{Code: CodeConflict, Reason: ReasonStale, CurrentGeneration: cur.Generation,
			Message: "the file exists now (generation " + strconv.FormatUint(cur.Generation, 10) + "); the proposal expected none"}}
	case p.BaseGeneration != 0 && cur == nil:
		return Result{Err: &Error{Code: CodeConflict, Reason: ReasonStale,
			Message: "the file does not exist (the proposal's base is generation " + strconv.FormatUint(p.BaseGeneration, 10) + ")"}}
	case cur != nil && cur.Generation != p.BaseGeneration:
		return Result{Err: &Error{Code: CodeConflict, Reason: ReasonStale, CurrentGeneration: cur.Generation,
			Message: "the file changed: generation " + strconv.FormatUint(cur.Generation, 10) + ", the proposal's base is " + strconv.FormatUint(p.BaseGeneration, 10)}}
	}
	if cur == nil {
		if err := a.files.checkShape(ws.Incarnation, p.Path); err != nil {
			return Result{Err: err}
		}
	}
	if err := a.files.checkQuota(p.Agent, fileGrowth(false, cur, &Entry{Size: p.Body.Size})); err != nil {
		return Result{Err: err}
	}
	root, _ := a.st.roots.Get(p.Agent)
	b := p.Body
	e := &Entry{Generation: a.st.version, Size: b.Size, Digest: b.Digest, ContentType: b.ContentType,
		Segments: b.Segments, HashState: b.HashState, ModifiedAtMs: a.st.nowMs, ListID: a.st.newListID(),
		Producer: a.prod, Proposal: p.ID}
	ord := a.files.publish(root, ws, pathKey(ws.Incarnation, p.Path), p.Path, rec, e)
	return Result{Generation: e.Generation, Created: cur == nil, Size: e.Size, Digest: e.Digest,
		ContentType: e.ContentType, RootUID: root.UID, Ordinal: ord}
}

// liveProposal returns proposal id of the live incarnation of workbench ws.
func liveProposal(s *state, agent, wsName, id string) (*Proposal, *Error) {
	p, ok := s.props.byID.Get(proposalKey(agent, id))
	if !ok || p.Workspace != wsName || !liveIncarnation(s, agent, wsName, p.Incarnation) {
		return nil, &Error{Code: CodeNotFound, Field: "proposal_id", Message: "workbench " + strconv.Quote(wsName) + " has no proposal " + strconv.Quote(id)}
	}
	return p, nil
}

func (a *proposalApplier) scheduleProposal(p *Proposal, dueMs int64) {
	s := a.st
	s.seq++
	s.retention.Set(retentionKey(dueMs, s.seq), string(rune(retainProposal))+proposalKey(p.Agent, p.ID))
}

// closedRetentionMs is how long (command time) a decided or superseded proposal of agent
// and its judgment are kept: they count against the root's history retention (its Age,
// when the root's policy keeps history by age), and at least Options.ProposalRetention.
func (a *proposalApplier) closedRetentionMs(agent string) int64 {
	ms := a.opts.ProposalRetention.Milliseconds()
	if root, ok := a.st.roots.Get(agent); ok {
		ms = max(ms, a.files.retentionOf(root.UID).Age.Milliseconds())
	}
	return ms
}

// retireProposal runs a proposal's retention item: a pending proposal past its TTL, or a
// closed one past retention, goes with its blob references and history holds. An item
// that is not due for the record's current state (a pending one's TTL item after it was
// decided) changes nothing: the decision scheduled its own.
func (a *proposalApplier) retireProposal(key string) {
	s := a.st
	p, ok := s.props.byID.Get(key)
	if !ok {
		return
	}
	due := p.CreatedAtMs + a.opts.ProposalPendingTTL.Milliseconds()
	if p.State != ProposalPending {
		due = p.ClosedAtMs + a.closedRetentionMs(p.Agent)
		if due > s.nowMs {
			// The root's retention grew since the decision: keep it that much longer.
			a.scheduleProposal(p, due)
			return
		}
	}
	if due > s.nowMs {
		return
	}
	if root, ok := s.roots.Get(p.Agent); ok { // roots are never removed (purge.go)
		a.files.ref(root.UID, p.Body.Segments, -1)
		for _, ev := range p.Evidence {
			if ev.HoldIncarnation != 0 {
				a.files.releaseHold(root.UID, ev.HoldIncarnation, ev.Version)
			}
		}
	}
	s.props.byID.Delete(key)
	s.props.unindex(p)
}
