package meta

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

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
// permanent. A change-feed position must name an event the root's feed still retains
// (feed.go); it pins nothing. Every decision is a proposal.decide event of the feed.
//
// Decisions: exactly one per proposal (Judgment). Accept publishes the body at the path
// with a compare-and-swap at the base generation in the same command: a path whose live
// generation is not the base (or that exists when the base is 0) is Conflict with
// CurrentGeneration, nothing is written and the proposal stays pending. An accept may also
// require the whole workbench to be unchanged (ProposalDecide.ExpectRevision: the
// workbench's Revision, the version of the last command that changed it; proposals and
// decisions that publish nothing do not change it), so a surface can judge an accept against
// every file of the workbench and have the judgment hold: otherwise Conflict, Reason
// "stale", nothing written. Reject records
// only (a stale proposal may be rejected). A decision on a decided proposal with the same
// SubmissionID and ContentHash answers the first decision again (Replayed); with another
// submission id it is Conflict with Reason "already_decided" (and State, the proposal's
// state); the same submission id with other content is Conflict with Reason
// "submission_reused". The published revision names the proposal (Entry.Proposal).
//
// Supersede: a create may name a pending proposal of the same workbench it replaces
// (ProposalCreate.Supersedes, a revision), at the same path or another (a revision that
// renames what it proposes): that one becomes superseded in the same command and can no
// longer be decided (already_decided). Accepting a proposal supersedes
// nothing: other pending proposals of its path become stale (their base is not the head)
// and are reported so; they can still be rejected, and expire.
//
// Retention and memory: a pending proposal is kept until it is decided or superseded, or
// for Options.ProposalPendingTTL of command time (then it expires and goes, as if it never
// was: NotFound); a decided or superseded one counts against its root's history
// retention: it is kept after its decision for the root's history Age, and at least
// Options.ProposalRetention of command time, then goes with its judgment. While a proposal is kept
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
	// ExpectRevision, when non-zero, makes an accept require the workbench's Revision to
	// be exactly this (a reject ignores it).
	ExpectRevision uint64 `cbor:"8,keyasint,omitempty"`
}

func (ProposalCreate) Op() Op { return OpProposalCreate }
func (ProposalDecide) Op() Op { return OpProposalDecide }

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

// unindex removes pr, whose record goes, from the derived trees.
func (p proposalTrees) unindex(pr *Proposal) {
	p.order.Delete(u64(pr.Incarnation) + u64(pr.CreatedVersion))
	if pr.Decision != nil {
		p.decided.Delete(u64(pr.Incarnation) + u64(pr.Decision.Version))
	}
	if n, _ := p.count.Get(pr.Agent); n <= 1 {
		p.count.Delete(pr.Agent)
	} else {
		p.count.Set(pr.Agent, n-1)
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
