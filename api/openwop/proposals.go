package openwop

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// The proposal routes (OpenWOP v2, unversioned at the server root; RFC 0096 §C, issue 18):
//
//	GET  /proposals[?state=&kind=]       the tenant's proposals: {"proposals": [...]}
//	POST /proposals {kind, artifact, …}  a draft (201)
//	GET  /proposals/{id}                 one proposal
//	PATCH /proposals/{id} {artifact?, …} a revision (state revised, same id)
//	POST /proposals/{id}:apply           install (also /proposals/{id}/apply)
//	POST /proposals/{id}:reject          reject (also /proposals/{id}/reject)
//
// Scopes: reading needs workspace:read, proposing and revising workspace:write, apply and
// reject the review scope as well (direct-rbac activation: the scope is the gate).
// Another tenant's proposal answers exactly as a missing one.

const proposalsPrefix = "/proposals"

// Limits of proposals.
const (
	// MaxArtifactBytes bounds an artifact's JSON (it is held in memory while judged).
	MaxArtifactBytes = 1 << 20
	// maxTitleChars and maxRationaleChars bound the texts of a proposal.
	maxTitleChars     = 512
	maxRationaleChars = meta.MaxProposalReasonChars
	// maxProvenanceBytes bounds provenance's JSON (with the texts it stays within the
	// store's metadata bound, meta.MaxProposalMetadataBytes).
	maxProvenanceBytes = 16 << 10
)

// Codes of the proposal surface beyond the registry's: an install refused by the install
// semantics (issue 18 §3; details.reason "version-not-greater" or "read-only"), an
// artifact malformed for its kind (422, RFC 0096 §Examples), and a lifecycle step the
// proposal's state does not admit (revise or apply after a decision).
const (
	CodeInstallConflict  = "proposal_install_conflict"
	CodeMalformedForKind = "pack_validation_failed"
	CodeStateConflict    = "proposal_state_conflict"
	// CodeIdempotencyMismatch: an Idempotency-Key reused for another request (registered).
	CodeIdempotencyMismatch = "idempotency_key_mismatch"
	// reasonConcurrent: another revision or decision of the proposal won a race.
	reasonConcurrent = "concurrent-change"
)

// proposalInput is POST /proposals' body and PATCH's (closed; PATCH takes no kind).
type proposalInput struct {
	Kind       *string         `json:"kind"`
	Artifact   json.RawMessage `json:"artifact"`
	Title      *string         `json:"title"`
	Rationale  *string         `json:"rationale"`
	Provenance json.RawMessage `json:"provenance"`
	Note       *string         `json:"note"`
}

// provenance is a proposal's provenance (proposal.schema.json, closed).
type provenance struct {
	SourceRunIDs     []string `json:"sourceRunIds"`
	SynthesizerModel *string  `json:"synthesizerModel,omitempty"`
}

// serveProposals routes rest of /proposals.
func (h *packsHandler) serveProposals(w http.ResponseWriter, r *http.Request, o Owner, rest string) {
	if rest == "" {
		serveCollection(w, r, "/proposals", func() { h.listProposals(w, r, o) }, func() { h.createProposal(w, r, o) })
		return
	}
	seg := strings.TrimPrefix(rest, "/")
	action := ""
	if i := strings.LastIndexAny(seg, ":/"); i > 0 && (seg[i+1:] == "apply" || seg[i+1:] == "reject") {
		seg, action = seg[:i], seg[i+1:]
	}
	id, err := url.PathUnescape(seg)
	if err != nil || id == "" || strings.Contains(id, "/") {
		WriteError(w, notFound("No such proposal."))
		return
	}
	switch {
	case action != "" && r.Method == http.MethodPost:
		h.decideProposal(w, r, o, id, action)
	case action != "":
		methodNotAllowed(w, "POST", "a proposal's :"+action+" answers POST")
	case r.Method == http.MethodGet:
		h.getProposal(w, r, o, id)
	case r.Method == http.MethodPatch:
		h.reviseProposal(w, r, o, id)
	default:
		methodNotAllowed(w, "GET, PATCH", "a proposal answers GET and PATCH")
	}
}

// decodeProposal reads a closed proposal body of at most MaxArtifactBytes plus room for
// the texts.
func decodeProposal(w http.ResponseWriter, r *http.Request) (proposalInput, *Error) {
	var in proposalInput
	tooLarge, err := readClosed(w, r, MaxArtifactBytes+64<<10, &in)
	switch {
	case tooLarge:
		return in, fail(http.StatusRequestEntityTooLarge, "payload_too_large", "the request body is larger than the artifact limit")
	case err != nil:
		return in, invalid(err.Error())
	}
	return in, nil
}

// readProposal reads and checks a draft's body (create: kind and artifact required,
// provenance defaulted) or a revision's (kind refused, artifact optional): the artifact
// (checkArtifact), and the texts and provenance (checkTexts).
func (h *packsHandler) readProposal(w http.ResponseWriter, r *http.Request, tenant string, create bool) (proposalInput, *Error) {
	in, err := decodeProposal(w, r)
	if err != nil {
		return in, err
	}
	switch {
	case create && (in.Kind == nil || !knownKind(*in.Kind)):
		return in, invalid("kind must be one of " + strings.Join(ArtifactKinds, ", ") + ".")
	case create && in.Artifact == nil:
		return in, invalid("artifact is required.")
	case !create && in.Kind != nil:
		return in, invalid("kind cannot be revised.")
	}
	if in.Artifact != nil {
		if err := checkArtifact(in.Artifact); err != nil {
			return in, err
		}
	}
	if err := h.checkTexts(tenant, &in); err != nil {
		return in, err
	}
	if create && in.Provenance == nil {
		in.Provenance = json.RawMessage(`{"sourceRunIds":[]}`)
	}
	return in, nil
}

// checkTexts validates and redacts title and rationale (SR-1: redaction-safe) and the
// provenance, in place.
func (h *packsHandler) checkTexts(tenant string, in *proposalInput) *Error {
	for _, t := range []struct {
		name string
		v    **string
		max  int
	}{{"title", &in.Title, maxTitleChars}, {"rationale", &in.Rationale, maxRationaleChars}} {
		if *t.v == nil {
			continue
		}
		if len([]rune(**t.v)) > t.max {
			return invalid(t.name + " must be at most " + itoa(t.max) + " characters.")
		}
		if h.redactor != nil {
			s := h.redactor.Redact(tenant, **t.v)
			*t.v = &s
		}
	}
	if in.Provenance != nil {
		if len(in.Provenance) > maxProvenanceBytes {
			return invalid("provenance must be at most " + itoa(maxProvenanceBytes) + " bytes.")
		}
		var p provenance
		if err := decodeStrict(in.Provenance, &p); err != nil || p.SourceRunIDs == nil || slices.Contains(p.SourceRunIDs, "") {
			return invalid("provenance must be {sourceRunIds: [non-empty strings], synthesizerModel?}.")
		}
		in.Provenance, _ = json.Marshal(p)
	}
	return nil
}

// checkArtifact requires an artifact to be a JSON object within MaxArtifactBytes that is
// I-JSON (RFC 7493: valid UTF-8, no duplicate member names, numbers within IEEE 754
// doubles), so it has one RFC 8785 form: every reader of it sees the same value, which a
// duplicate name would break (the judge would read one member, another reader the other).
func checkArtifact(a json.RawMessage) *Error {
	if len(a) > MaxArtifactBytes {
		return fail(http.StatusRequestEntityTooLarge, "payload_too_large", "artifact is larger than "+itoa(MaxArtifactBytes)+" bytes")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(a, &obj) != nil || obj == nil {
		return invalid("artifact must be a JSON object.")
	}
	if !utf8.Valid(a) {
		return invalid("artifact must be valid UTF-8.")
	}
	if _, err := workbench.CanonicalJSON(a); err != nil {
		return invalid("artifact must be I-JSON (RFC 7493: no duplicate member names, numbers within IEEE 754 doubles): " + err.Error())
	}
	return nil
}

// requestID names a mutation for convergence: derived from the Idempotency-Key (so a
// retry converges on the first answer) or fresh. Always meta.ValidateName syntax.
func requestID(r *http.Request, what string) string {
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		d := sha256.Sum256([]byte(what + "\x00" + k))
		return "k" + hex.EncodeToString(d[:20])
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "r" + hex.EncodeToString(b[:])
}

// keyTooLong answers a proposal request whose Idempotency-Key is longer than openapi.json
// allows (maxLength 255) with validation_error, and reports whether it did.
func keyTooLong(w http.ResponseWriter, r *http.Request) bool {
	if len(r.Header.Get("Idempotency-Key")) <= maxHeaderLength {
		return false
	}
	WriteError(w, invalid("Idempotency-Key: at most 255 characters."))
	return true
}

func (h *packsHandler) createProposal(w http.ResponseWriter, r *http.Request, o Owner) {
	if keyTooLong(w, r) {
		return
	}
	in, perr := h.readProposal(w, r, o.Tenant, true)
	if perr != nil {
		WriteError(w, perr)
		return
	}
	ctx := r.Context()
	if _, err := h.svc.Lifecycle.CreateWorkbench(ctx, o.Tenant, PacksWorkbench, ""); err != nil {
		WriteError(w, fromProposalStore(err))
		return
	}
	reqID := requestID(r, "create")
	path := draftsDir + reqID // not the artifact's: a reused Idempotency-Key names this proposal whatever the body
	id := meta.ProposalID(o.Tenant, PacksWorkbench, path, reqID)
	m := proposalMeta{ID: id, State: stateDraft, Title: in.Title, Rationale: in.Rationale, Provenance: in.Provenance,
		Owner: ownerOf(r, o)}
	p, replayed, cerr := h.proposeRevision(ctx, o, *in.Kind, path, reqID, 0, "", m, in.Artifact)
	if cerr != nil {
		WriteError(w, cerr)
		return
	}
	if replayed {
		w.Header().Set("OpenWOP-Idempotent-Replay", "true")
	}
	w.Header().Set("Location", proposalsPrefix+"/"+id)
	writeJSON(w, http.StatusCreated, h.doc(chain{tail: p, meta: decodedOr(p, m)}, in.Artifact))
}

// decodedOr is p's stored meta (a replay answers what was stored), else m.
func decodedOr(p *meta.Proposal, m proposalMeta) proposalMeta {
	if sm, ok := decodeMeta(p); ok {
		if sm.CreatedAtMs == 0 {
			sm.CreatedAtMs = p.CreatedAtMs
		}
		return sm
	}
	return m
}

// ownerOf is the owner triple of a request: the credential's tenant and workspace and the
// principal's public id.
func ownerOf(r *http.Request, o Owner) proposalOwner {
	po := proposalOwner{Tenant: o.Tenant, Workspace: o.Workspace}
	if p, ok := auth.FromContext(r.Context()); ok {
		po.Principal = p.ID
	}
	return po
}

// proposeRevision stores one Cairn proposal of the chain.
func (h *packsHandler) proposeRevision(ctx context.Context, o Owner, kind, path, reqID string, base uint64, supersedes string, m proposalMeta, artifact []byte) (*meta.Proposal, bool, *Error) {
	raw, _ := json.Marshal(m)
	p, replayed, err := h.svc.Review.ProposeArtifact(ctx, o.Tenant, workbench.ArtifactProposal{Workbench: PacksWorkbench, Path: path,
		RequestID: reqID, Kind: kind, Metadata: raw, Body: artifact, ContentType: mediaType(kind),
		BaseGeneration: base, Supersedes: supersedes})
	if err != nil {
		return nil, false, fromProposalStore(err)
	}
	return p, replayed, nil
}

// loadChain returns proposal id of o's tenant with its artifact.
func (h *packsHandler) loadChain(ctx context.Context, o Owner, id string) (*meta.View, *meta.Workspace, chain, []byte, *Error) {
	v, ws, ok, err := h.packsView(ctx, o.Tenant)
	if err != nil {
		return nil, nil, chain{}, nil, err
	}
	if !ok {
		return nil, nil, chain{}, nil, notFound("No such proposal.")
	}
	c, err := findChain(v, ws, o.Tenant, id)
	if err != nil {
		return nil, nil, chain{}, nil, err
	}
	body, berr := h.svc.Review.ProposalBody(ctx, o.Tenant, c.tail)
	if berr != nil {
		return nil, nil, chain{}, nil, fromProposalStore(berr)
	}
	if c.meta.CreatedAtMs == 0 {
		c.meta.CreatedAtMs = c.tail.CreatedAtMs
	}
	return v, ws, c, body, nil
}

func (h *packsHandler) getProposal(w http.ResponseWriter, r *http.Request, o Owner, id string) {
	if err := mayRead(r); err != nil {
		WriteError(w, err)
		return
	}
	_, _, c, body, err := h.loadChain(r.Context(), o, id)
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.doc(c, body))
}

// Pages of GET /proposals: limit proposals (default defaultProposalPage, at most
// maxProposalPage), and no more artifact bytes than maxProposalPageBytes past the first
// proposal; nextCursor continues after the last one (a revision made since moves its
// proposal to a later page).
const (
	defaultProposalPage  = 50
	maxProposalPage      = 100
	maxProposalPageBytes = 8 << 20
	// proposalPageCopies is how many copies of a page's bodies its answer holds at once
	// (the documents, the JSON encoder's growing buffer, its escaping): a listing takes
	// proposalPageCopies × maxProposalPageBytes of the node's memory budget before it
	// reads a body (workbench.Service.AdmitMemory).
	proposalPageCopies = 4
)

func (h *packsHandler) listProposals(w http.ResponseWriter, r *http.Request, o Owner) {
	if err := mayRead(r); err != nil {
		WriteError(w, err)
		return
	}
	q := r.URL.Query()
	state, kind := q.Get("state"), q.Get("kind")
	if state != "" && !slices.Contains([]string{stateDraft, stateRevised, stateApplied, stateRejected}, state) {
		WriteError(w, invalid("state must be draft, revised, applied or rejected."))
		return
	}
	if kind != "" && !knownKind(kind) {
		WriteError(w, invalid("kind must be one of "+strings.Join(ArtifactKinds, ", ")+"."))
		return
	}
	limit := defaultProposalPage
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			WriteError(w, invalid("limit must be a positive integer."))
			return
		}
		limit = min(n, maxProposalPage)
	}
	var after uint64
	if raw := q.Get("cursor"); raw != "" {
		n, err := strconv.ParseUint(strings.TrimPrefix(raw, "c"), 10, 64)
		if err != nil || !strings.HasPrefix(raw, "c") {
			WriteError(w, invalid("cursor is not one this host returned."))
			return
		}
		after = n
	}
	ctx := r.Context()
	release, aerr := h.svc.AdmitMemory(ctx, min(proposalPageCopies*maxProposalPageBytes, h.svc.Config().QueryBudgetBytes), "the proposal page")
	if aerr != nil {
		WriteError(w, fromStore(aerr))
		return
	}
	defer release()
	page := proposalPage{Proposals: []proposalDoc{}}
	v, ws, ok, err := h.packsView(ctx, o.Tenant)
	if err != nil {
		WriteError(w, err)
		return
	}
	if ok {
		var failed *Error
		bytes := 0
		scanChains(v, ws, o.Tenant, after, func(c chain) bool {
			if len(page.Proposals) == limit || (len(page.Proposals) > 0 && bytes >= maxProposalPageBytes) {
				page.NextCursor = "c" + strconv.FormatUint(after, 10)
				return false
			}
			after = c.tail.CreatedVersion
			if (state != "" && c.state() != state) || (kind != "" && c.tail.Kind != kind) {
				return true
			}
			body, berr := h.svc.Review.ProposalBody(ctx, o.Tenant, c.tail)
			if berr != nil {
				failed = fromProposalStore(berr)
				return false
			}
			if c.meta.CreatedAtMs == 0 {
				c.meta.CreatedAtMs = c.tail.CreatedAtMs
			}
			bytes += len(body)
			page.Proposals = append(page.Proposals, h.doc(c, body))
			return true
		})
		if failed != nil {
			WriteError(w, failed)
			return
		}
	}
	writeJSON(w, http.StatusOK, page)
}

// proposalPage is GET /proposals' body ({"proposals": [...]}, RFC 0096 §C) with the
// cursor of the next page when there may be one.
type proposalPage struct {
	Proposals  []proposalDoc `json:"proposals"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

func (h *packsHandler) reviseProposal(w http.ResponseWriter, r *http.Request, o Owner, id string) {
	if keyTooLong(w, r) {
		return
	}
	in, perr := h.readProposal(w, r, o.Tenant, false)
	if perr != nil {
		WriteError(w, perr)
		return
	}
	ctx := r.Context()
	v, ws, c, body, err := h.loadChain(ctx, o, id)
	if err != nil {
		WriteError(w, err)
		return
	}
	// Under an Idempotency-Key the revision's request id comes from the proposal and the
	// key, not from the tail it revises (which the first PATCH replaced): a retry finds the
	// revision it made and answers it, whatever happened to the chain since.
	reqID := requestID(r, "revise\x00"+c.meta.ID)
	keyed := r.Header.Get("Idempotency-Key") != ""
	if keyed {
		if done := h.replayRevision(w, r, v, ws, o, c.meta.ID, reqID, revisionDigest(in)); done {
			return
		}
	}
	if c.tail.State != meta.ProposalPending {
		WriteError(w, stateConflict(c, "revised"))
		return
	}
	artifact := body
	if in.Artifact != nil {
		artifact = in.Artifact
	}
	m := c.meta
	m.State = stateRevised
	if in.Title != nil {
		m.Title = in.Title
	}
	if in.Rationale != nil {
		m.Rationale = in.Rationale
	}
	if in.Provenance != nil {
		m.Provenance = in.Provenance
	}
	m.Request = ""
	if keyed {
		m.Request = revisionDigest(in)
	}
	p, _, cerr := h.proposeRevision(ctx, o, c.tail.Kind, draftsDir+reqID, reqID, 0, c.tail.ID, m, artifact)
	if cerr != nil {
		WriteError(w, cerr)
		return
	}
	writeJSON(w, http.StatusOK, h.doc(chain{tail: p, meta: decodedOr(p, m)}, artifact))
}

// replayRevision answers a PATCH sent again under its Idempotency-Key: the revision of
// proposal id whose request id is reqID, when the store holds one (done true). Its
// recorded digest must be the request's (else 409 idempotency_key_mismatch, as a create's).
func (h *packsHandler) replayRevision(w http.ResponseWriter, r *http.Request, v *meta.View, ws *meta.Workspace, o Owner, id, reqID, digest string) bool {
	p, err := v.Proposals().Get(o.Tenant, ws.Name, meta.ProposalID(o.Tenant, ws.Name, draftsDir+reqID, reqID))
	if err != nil {
		return false
	}
	m, ok := decodeMeta(p)
	if !ok || m.ID != id || m.Request != digest {
		WriteError(w, fail(http.StatusConflict, CodeIdempotencyMismatch, "the Idempotency-Key was used for another request"))
		return true
	}
	body, berr := h.svc.Review.ProposalBody(r.Context(), o.Tenant, p)
	if berr != nil {
		WriteError(w, fromProposalStore(berr))
		return true
	}
	if m.CreatedAtMs == 0 {
		m.CreatedAtMs = p.CreatedAtMs
	}
	w.Header().Set("OpenWOP-Idempotent-Replay", "true")
	writeJSON(w, http.StatusOK, h.doc(chain{tail: p, meta: m}, body))
	return true
}

// revisionDigest is the digest of a PATCH's members as read (the artifact's bytes as sent,
// the texts after redaction), each marked present or absent.
func revisionDigest(in proposalInput) string {
	d := sha256.New()
	for _, f := range [][]byte{in.Artifact, bytesOf(in.Title), bytesOf(in.Rationale), in.Provenance, bytesOf(in.Note)} {
		if f == nil {
			d.Write([]byte{0})
			continue
		}
		var n [9]byte
		n[0] = 1
		binary.BigEndian.PutUint64(n[1:], uint64(len(f)))
		d.Write(n[:])
		d.Write(f)
	}
	return hex.EncodeToString(d.Sum(nil))
}

// bytesOf is s's bytes, nil when s is.
func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// stateConflict answers a lifecycle step the proposal's state does not admit.
func stateConflict(c chain, step string) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeStateConflict,
		Message: "the proposal is " + c.state() + " and cannot be " + step, Details: map[string]any{"state": c.state()}}
}

// mayRead requires workspace:read of the request's principal.
func mayRead(r *http.Request) *Error {
	if p, ok := auth.FromContext(r.Context()); ok && !p.Has(auth.ScopeRead) {
		return fail(http.StatusForbidden, CodeForbidden, "the API key lacks the workspace:read scope")
	}
	return nil
}

// fromProposalStore maps the store's answers on proposals: a missing one is the same
// not_found as any (another tenant's), conflicts keep their reason.
func fromProposalStore(err error) *Error {
	we := workbench.AsError(err)
	switch we.Code {
	case workbench.CodeNotFound:
		return notFound("No such proposal.")
	case workbench.CodeConflict:
		// The store's messages name its own ids (the Cairn proposal, the derived request
		// id): the answer names none of them.
		if we.Details["reason"] == meta.ReasonRequestReused {
			return fail(http.StatusConflict, CodeIdempotencyMismatch, "the Idempotency-Key was used for another request")
		}
		return &Error{Status: http.StatusConflict, Code: CodeStateConflict, Message: "the proposal changed while this request was served; read it again",
			Details: map[string]any{"reason": reasonConcurrent}}
	case workbench.CodePermissionDenied:
		return fail(http.StatusForbidden, CodeForbidden, we.Message)
	}
	return fromStore(err)
}
