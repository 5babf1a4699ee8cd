package meta

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/btree"
)

// Proposals and decisions (review-gated changes, issue 16 items 3, 4 and 7).
//
// A proposal is a body proposed for one path of one workbench incarnation against an exact
// base generation (0: the path must not exist), with the reason and the evidence it used.
// It is a record of its own (s.props): nothing of it reaches the path chains, the
// directory counters or the secondary index, so no read, listing, grep, search, find or
// export of the workbench sees its bytes until it is accepted (inertness).
//
// Identity and retries: the id is derived from (agent root, workbench, path, request id)
// (ProposalID). A create whose id exists converges: with the same ContentHash it answers
// the record (Result.Replayed), with another it is Conflict and changes nothing.
//
// Evidence is resolved and frozen by the FSM when the proposal is made: each reference must
// exist then (a file at a retained generation, an alive snapshot, a commit of the root);
// the record keeps its digest and size, and the ContextDigest hashes the frozen list. A
// file or snapshot reference pins what it names with a history hold (lifecycle.go) while
// the proposal is retained, so the referenced version stays readable; commits are
// permanent. Change-feed positions are checked by feedPositionExists, the seam the change
// feed fills in (until then a feed reference is InvalidArguments).
//
// Decisions: exactly one per proposal (Judgment). Accept publishes the body at the path
// with a compare-and-swap at the base generation in the same command: a path whose live
// generation is not the base (or that exists when the base is 0) is Conflict with
// CurrentGeneration, nothing is written and the proposal stays pending. Reject records
// only (a stale proposal may be rejected). A decision on a decided proposal with the same
// SubmissionID and ContentHash answers the first decision again (Replayed); with another
// submission id it is Conflict with Reason "already_decided" (and State, the proposal's
// state); the same submission id with other content is Conflict with Reason
// "submission_reused". The published revision names the proposal (Entry.Proposal).
//
// Supersede: a create may name a pending proposal of the same workbench and path it
// replaces (ProposalCreate.Supersedes, a revision): that one becomes superseded in the same
// command and can no longer be decided (already_decided). Accepting a proposal supersedes
// nothing: other pending proposals of its path become stale (their base is not the head)
// and are reported so; they can still be rejected, and expire.
//
// Retention and memory: a pending proposal is kept until it is decided or superseded, or
// for Options.ProposalPendingTTL of command time (then it expires and goes, as if it never
// was: NotFound); a decided or superseded one is kept for Options.ProposalRetention of
// command time after its decision, then goes with its judgment. While a proposal is kept
// its non-inline body segments hold one blob reference each (so the collector never takes
// them, gc.go) and its evidence holds pin history; its removal releases both. A root keeps
// at most Options.ProposalsMaxPerRoot proposals (pending and decided); a create beyond it is
// ResourceExhausted naming quota "proposals". Proposal bodies do not count against the
// root's byte quota (they are bounded by that count and the segment bounds).
// A deleted workbench's proposals stay unreachable (views resolve the live incarnation)
// until their retention removes them.

// Command operations of proposals (never renumber).
const (
	OpProposalCreate Op = 22
	OpProposalDecide Op = 23
)

// Snapshot record tag of a proposal (never renumber). Tag 36 is reserved for proposals too.
const recProposal uint8 = 35

// Limits of proposals.
const (
	MaxProposalEvidence      = 64
	MaxProposalReasonChars   = 4096
	MaxProposalMetadataBytes = 64 << 10
	MaxProposalKindBytes     = 64
	MaxProposalRequestID     = 128
	MaxProposalListLimit     = 1000
	// QuotaProposals names the per-root bound of kept proposals in ResourceExhausted.
	QuotaProposals = "proposals"
)

// retainProposal is the retention item kind of a proposal: value 'q' agent \x00 id —
// expire it when pending past its TTL, drop it when decided past retention.
const retainProposal = 'q'

// ProposalState is the lifecycle state of a proposal.
type ProposalState string

// Proposal states.
const (
	ProposalPending    ProposalState = "pending"
	ProposalAccepted   ProposalState = "accepted"
	ProposalRejected   ProposalState = "rejected"
	ProposalSuperseded ProposalState = "superseded"
)

// Dispositions of a decision.
const (
	DispositionAccept = "accept"
	DispositionReject = "reject"
)

// Conflict reasons of decisions (Error.Reason).
const (
	ReasonAlreadyDecided   = "already_decided"
	ReasonSubmissionReused = "submission_reused"
	ReasonStale            = "stale"
	ReasonRequestReused    = "request_reused"
)

// EvidenceKind says what an evidence reference names.
type EvidenceKind string

// Evidence kinds.
const (
	EvidenceFile     EvidenceKind = "file"
	EvidenceSnapshot EvidenceKind = "snapshot"
	EvidenceCommit   EvidenceKind = "commit"
	EvidenceFeed     EvidenceKind = "feed"
)

// EvidenceRef is a reference a proposal's evidence names, as the proposer gives it. The
// workbench is one of the proposal's root ("" = the proposal's own).
type EvidenceRef struct {
	Kind      EvidenceKind `cbor:"1,keyasint"`
	Workspace string       `cbor:"2,keyasint,omitempty"`
	// Path and Generation name a file at a retained generation (Kind file).
	Path       string `cbor:"3,keyasint,omitempty"`
	Generation uint64 `cbor:"4,keyasint,omitempty"`
	// SnapshotID names a snapshot of Workspace (Kind snapshot).
	SnapshotID uint64 `cbor:"5,keyasint,omitempty"`
	// Commit is a commit identity of Workspace (Kind commit).
	Commit string `cbor:"6,keyasint,omitempty"`
	// Position is a change-feed position of the root (Kind feed).
	Position string `cbor:"7,keyasint,omitempty"`
}

// Evidence is a reference frozen when the proposal was made.
type Evidence struct {
	Ref EvidenceRef `cbor:"1,keyasint"`
	// Digest and Size: the file's body (file), the commit's envelope (commit); zero for
	// snapshots and feed positions.
	Digest Digest `cbor:"2,keyasint,omitempty"`
	Size   int64  `cbor:"3,keyasint,omitempty"`
	// Version is the shard version the reference reads at: the file version's, the
	// snapshot's read version, the commit's sealing version.
	Version uint64 `cbor:"4,keyasint,omitempty"`
	// TreeDigestURI is a commit's tree digest.
	TreeDigestURI string `cbor:"5,keyasint,omitempty"`
	// HoldIncarnation, when non-zero, is the incarnation of the history hold the reference
	// placed at Version (released with the proposal).
	HoldIncarnation uint64 `cbor:"6,keyasint,omitempty"`
}

// Judgment is the decision on a proposal: who decided what, when, against which base and
// with which result, linking the proposal, its context and its proposer.
type Judgment struct {
	ProposalID  string   `cbor:"1,keyasint"`
	Workspace   string   `cbor:"2,keyasint"`
	Path        string   `cbor:"3,keyasint"`
	Principal   Producer `cbor:"4,keyasint,omitempty"`
	AtMs        int64    `cbor:"5,keyasint"`
	Version     uint64   `cbor:"6,keyasint"`
	Disposition string   `cbor:"7,keyasint"`
	Reason      string   `cbor:"8,keyasint,omitempty"`
	// BaseGeneration is the proposal's base; ResultGeneration the generation the accept
	// published (0 for a reject).
	BaseGeneration   uint64 `cbor:"9,keyasint,omitempty"`
	ResultGeneration uint64 `cbor:"10,keyasint,omitempty"`
	SubmissionID     string `cbor:"11,keyasint,omitempty"`
	// ContentHash identifies the submission's content (its replay check).
	ContentHash   Digest   `cbor:"12,keyasint,omitempty"`
	ContextDigest Digest   `cbor:"13,keyasint"`
	Proposer      Producer `cbor:"14,keyasint,omitempty"`
}

// Proposal is the record of one proposal. Records reachable from a View are never mutated.
type Proposal struct {
	ID          string `cbor:"1,keyasint"`
	Agent       string `cbor:"2,keyasint"`
	Workspace   string `cbor:"3,keyasint"`
	Incarnation uint64 `cbor:"4,keyasint"`
	Path        string `cbor:"5,keyasint"`
	// Kind classifies the proposal for surfaces that propose artifacts ("" = a file body;
	// e.g. "agent-pack"); Metadata is their annotation as JSON bytes. The FSM stores both
	// and judges neither.
	Kind     string `cbor:"6,keyasint,omitempty"`
	Metadata []byte `cbor:"7,keyasint,omitempty"`
	// BaseGeneration is the generation the proposal is against; 0: the path must not exist.
	BaseGeneration uint64     `cbor:"8,keyasint,omitempty"`
	Body           FileBody   `cbor:"9,keyasint"`
	Reason         string     `cbor:"10,keyasint,omitempty"`
	Evidence       []Evidence `cbor:"11,keyasint,omitempty"`
	// ContextDigest is the SHA-256 of the frozen evidence (contextDigest).
	ContextDigest  Digest        `cbor:"12,keyasint"`
	Proposer       Producer      `cbor:"13,keyasint,omitempty"`
	CreatedVersion uint64        `cbor:"14,keyasint"`
	CreatedAtMs    int64         `cbor:"15,keyasint"`
	State          ProposalState `cbor:"16,keyasint"`
	RequestID      string        `cbor:"17,keyasint"`
	ContentHash    Digest        `cbor:"18,keyasint"`
	Decision       *Judgment     `cbor:"19,keyasint,omitempty"`
	// Supersedes is the proposal this one replaced; SupersededBy the one that replaced it.
	Supersedes   string `cbor:"20,keyasint,omitempty"`
	SupersededBy string `cbor:"21,keyasint,omitempty"`
	// ClosedAtMs is the command time it was decided or superseded (0: pending).
	ClosedAtMs int64 `cbor:"22,keyasint,omitempty"`
}

// ProposalCreate makes a proposal. Non-inline body segments must have been uploaded first.
// Result.Proposal is the record; Result.Superseded names the proposal it superseded.
type ProposalCreate struct {
	Agent     string `cbor:"1,keyasint"`
	Workspace string `cbor:"2,keyasint"`
	Path      string `cbor:"3,keyasint"`
	// RequestID (1..MaxProposalRequestID bytes, ValidateName syntax) derives the id.
	RequestID string `cbor:"4,keyasint"`
	// ContentHash identifies everything else the proposer asked for (the surface computes
	// it): a retry with the same request id and another hash is Conflict.
	ContentHash    Digest        `cbor:"5,keyasint"`
	Kind           string        `cbor:"6,keyasint,omitempty"`
	Metadata       []byte        `cbor:"7,keyasint,omitempty"`
	BaseGeneration uint64        `cbor:"8,keyasint,omitempty"`
	Body           FileBody      `cbor:"9,keyasint"`
	Reason         string        `cbor:"10,keyasint,omitempty"`
	Evidence       []EvidenceRef `cbor:"11,keyasint,omitempty"`
	Supersedes     string        `cbor:"12,keyasint,omitempty"`
}

// ProposalDecide decides a pending proposal of Workspace. Result.Proposal is the record
// after the command, Result.Judgment the decision, Result.Generation (accept) the
// generation published.
type ProposalDecide struct {
	Agent     string `cbor:"1,keyasint"`
	Workspace string `cbor:"2,keyasint"`
	ID        string `cbor:"3,keyasint"`
	// Disposition is DispositionAccept or DispositionReject.
	Disposition string `cbor:"4,keyasint"`
	Reason      string `cbor:"5,keyasint,omitempty"`
	// SubmissionID (ValidateName syntax) identifies the decision for replays.
	SubmissionID string `cbor:"6,keyasint"`
	ContentHash  Digest `cbor:"7,keyasint"`
}

func (ProposalCreate) Op() Op { return OpProposalCreate }
func (ProposalDecide) Op() Op { return OpProposalDecide }

func decodeProposalCommand(op Op, raw []byte) (Body, error) {
	if op == OpProposalCreate {
		var c ProposalCreate
		err := decMode.Unmarshal(raw, &c)
		return c, err
	}
	var c ProposalDecide
	err := decMode.Unmarshal(raw, &c)
	return c, err
}

// ProposalID derives a proposal's id from (agent root, workbench, path, request id): 32
// lower-case hex digits.
func ProposalID(agent, workspace, path, requestID string) string {
	h := sha256.New()
	for _, p := range []string{"cairn-proposal-v1", agent, workspace, path, requestID} {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// proposalTrees are the proposal records of a shard and what is derived from them.
type proposalTrees struct {
	// byID holds every kept proposal: agent \x00 id (snapshot record recProposal).
	byID *btree.Map[string, *Proposal]
	// order lists them per incarnation by creation: u64(incarnation) u64(created version)
	// → id (derived, rebuilt on restore).
	order *btree.Map[string, string]
	// decided lists the decided ones per incarnation by decision: u64(incarnation)
	// u64(decision version) → id (derived).
	decided *btree.Map[string, string]
	// count is the number of kept proposals per agent root (derived).
	count *btree.Map[string, int64]
}

func newProposalTrees() proposalTrees {
	return proposalTrees{byID: new(btree.Map[string, *Proposal]), order: new(btree.Map[string, string]),
		decided: new(btree.Map[string, string]), count: new(btree.Map[string, int64])}
}

func (p proposalTrees) copy() proposalTrees {
	return proposalTrees{byID: p.byID.Copy(), order: p.order.Copy(), decided: p.decided.Copy(), count: p.count.Copy()}
}

func proposalKey(agent, id string) string { return agent + "\x00" + id }

// index adds p to the derived trees.
func (p proposalTrees) index(pr *Proposal) {
	p.order.Set(u64(pr.Incarnation)+u64(pr.CreatedVersion), pr.ID)
	if pr.Decision != nil {
		p.decided.Set(u64(pr.Incarnation)+u64(pr.Decision.Version), pr.ID)
	}
}

// rebuild derives order, decided and count from byID (after a restore).
func (p *proposalTrees) rebuild() {
	byID := p.byID
	*p = newProposalTrees()
	p.byID = byID
	byID.Scan(func(_ string, pr *Proposal) bool {
		p.index(pr)
		n, _ := p.count.Get(pr.Agent)
		p.count.Set(pr.Agent, n+1)
		return true
	})
}

// set stores an updated record (its key fields unchanged) and its decision index.
func (p proposalTrees) set(pr *Proposal) {
	p.byID.Set(proposalKey(pr.Agent, pr.ID), pr)
	p.index(pr)
}

// feedPositionExists reports whether pos is a retained change-feed position of agent's
// root. The change feed fills this seam in; until it exists no position does.
func (s *state) feedPositionExists(agent, pos string) bool { return false }

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

func (a *applier) proposalCreate(c ProposalCreate) Result {
	if err := ValidateName("request_id", c.RequestID); err != nil {
		return Result{Err: err}
	}
	if len(c.RequestID) > MaxProposalRequestID {
		return Result{Err: invalidArg("request_id", "must be at most %d bytes", MaxProposalRequestID)}
	}
	if err := validateProposalFields(c); err != nil {
		return Result{Err: err}
	}
	ws, err := a.target(c.Agent, c.Workspace, c.Path, false)
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
	if err := a.checkPublishable(c.Agent, c.Body.Segments); err != nil {
		return Result{Err: err}
	}
	var sup *Proposal
	if c.Supersedes != "" {
		old, ok := s.props.byID.Get(proposalKey(c.Agent, c.Supersedes))
		if !ok || old.Incarnation != ws.Incarnation || old.Path != c.Path {
			return Result{Err: &Error{Code: CodeNotFound, Field: "supersedes", Message: "no proposal " + strconv.Quote(c.Supersedes) + " of this path exists"}}
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
	ev, eerr := a.freezeEvidence(c.Agent, ws, c.Evidence)
	if eerr != nil {
		return Result{Err: eerr}
	}
	// Every check passed: from here on the command applies whole.
	root, _ := s.roots.Get(c.Agent)
	for i := range ev {
		if ev[i].HoldIncarnation != 0 {
			a.addHold(ev[i].HoldIncarnation, ev[i].Version)
		}
	}
	a.ref(root.UID, c.Body.Segments, +1)
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
		a.scheduleProposal(&ns, s.nowMs+a.opts.ProposalRetention.Milliseconds())
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

// freezeEvidence resolves every reference (each must exist now) and records what it names.
func (a *applier) freezeEvidence(agent string, own *Workspace, refs []EvidenceRef) ([]Evidence, *Error) {
	s := a.st
	out := make([]Evidence, 0, len(refs))
	for i, r := range refs {
		field := "evidence[" + strconv.Itoa(i) + "]"
		wsName := r.Workspace
		if wsName == "" {
			wsName = own.Name
			r.Workspace = own.Name
		}
		ws, ok := s.workspaces.Get(workspaceKey(agent, wsName))
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
			if !found {
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
			if !s.feedPositionExists(agent, r.Position) {
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

func (a *applier) proposalDecide(c ProposalDecide) Result {
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
	a.scheduleProposal(&np, s.nowMs+a.opts.ProposalRetention.Milliseconds())
	res.Proposal, res.Judgment = &np, j
	return res
}

// acceptProposal publishes p's body at its path if the path is still at p's base.
func (a *applier) acceptProposal(ws *Workspace, p *Proposal) Result {
	rec, cur := a.current(ws, p.Path)
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
		if err := a.checkShape(ws.Incarnation, p.Path); err != nil {
			return Result{Err: err}
		}
	}
	if err := a.checkQuota(p.Agent, fileGrowth(false, cur, &Entry{Size: p.Body.Size})); err != nil {
		return Result{Err: err}
	}
	root, _ := a.st.roots.Get(p.Agent)
	b := p.Body
	e := &Entry{Generation: a.st.version, Size: b.Size, Digest: b.Digest, ContentType: b.ContentType,
		Segments: b.Segments, HashState: b.HashState, ModifiedAtMs: a.st.nowMs, ListID: a.st.newListID(),
		Producer: a.prod, Proposal: p.ID}
	ord := a.publish(root, ws, pathKey(ws.Incarnation, p.Path), p.Path, rec, e)
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

func (a *applier) scheduleProposal(p *Proposal, dueMs int64) {
	s := a.st
	s.seq++
	s.retention.Set(retentionKey(dueMs, s.seq), string(rune(retainProposal))+proposalKey(p.Agent, p.ID))
}

// retireProposal runs a proposal's retention item: a pending proposal past its TTL, or a
// closed one past retention, goes with its blob references and history holds. An item
// that is not due for the record's current state (a pending one's TTL item after it was
// decided) changes nothing: the decision scheduled its own.
func (a *applier) retireProposal(key string) {
	s := a.st
	p, ok := s.props.byID.Get(key)
	if !ok {
		return
	}
	due := p.CreatedAtMs + a.opts.ProposalPendingTTL.Milliseconds()
	if p.State != ProposalPending {
		due = p.ClosedAtMs + a.opts.ProposalRetention.Milliseconds()
	}
	if due > s.nowMs {
		return
	}
	root, _ := s.roots.Get(p.Agent)
	a.ref(root.UID, p.Body.Segments, -1)
	for _, ev := range p.Evidence {
		if ev.HoldIncarnation != 0 {
			a.releaseHold(root.UID, ev.HoldIncarnation, ev.Version)
		}
	}
	s.props.byID.Delete(key)
	s.props.order.Delete(u64(p.Incarnation) + u64(p.CreatedVersion))
	if p.Decision != nil {
		s.props.decided.Delete(u64(p.Incarnation) + u64(p.Decision.Version))
	}
	if n, _ := s.props.count.Get(p.Agent); n <= 1 {
		s.props.count.Delete(p.Agent)
	} else {
		s.props.count.Set(p.Agent, n-1)
	}
}

// ProposalFilter narrows a proposal listing.
type ProposalFilter struct {
	Path  string        // "" = every path
	State ProposalState // "" = every state
}

// Proposal returns proposal id of workbench ws (its live incarnation). NotFound naming
// "proposal_id" when there is none (never made, expired, or of a deleted workbench).
func (v *View) Proposal(agent, ws, id string) (*Proposal, error) {
	p, err := liveProposal(v.st, agent, ws, id)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Proposals lists the kept proposals of workbench ws in creation order, strictly after
// created version after (0: from the first), at most limit (1..MaxProposalListLimit),
// matching f; more says whether others may follow. NotFound for a missing workbench.
func (v *View) Proposals(agent, ws string, f ProposalFilter, after uint64, limit int) (out []*Proposal, more bool, err error) {
	w, err := v.Workspace(agent, ws)
	if err != nil {
		return nil, false, err
	}
	limit = max(1, min(limit, MaxProposalListLimit))
	prefix := u64(w.Incarnation)
	v.st.props.order.Ascend(prefix+u64(after+1), func(k, id string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		p, ok := v.st.props.byID.Get(proposalKey(agent, id))
		if !ok || (f.Path != "" && p.Path != f.Path) || (f.State != "" && p.State != f.State) {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, p)
		return true
	})
	return out, more, nil
}

// Judgments lists the decisions on workbench ws's kept proposals in decision order,
// strictly after decision version after, at most limit, of path ("" = every path).
func (v *View) Judgments(agent, ws, path string, after uint64, limit int) (out []*Judgment, more bool, err error) {
	w, err := v.Workspace(agent, ws)
	if err != nil {
		return nil, false, err
	}
	limit = max(1, min(limit, MaxProposalListLimit))
	prefix := u64(w.Incarnation)
	v.st.props.decided.Ascend(prefix+u64(after+1), func(k, id string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		p, ok := v.st.props.byID.Get(proposalKey(agent, id))
		if !ok || p.Decision == nil || (path != "" && p.Path != path) {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, p.Decision)
		return true
	})
	return out, more, nil
}
