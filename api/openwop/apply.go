package openwop

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/cairnstore/cairn/internal/pause"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Apply and reject (issue 18 §2, §3). Apply judges the artifact as its kind requires
// (validate.go: 422, nothing installed, the proposal unchanged), then the install
// semantics on one view of every pack of the tenant:
//
//   - no pack of that name: install;
//   - one an earlier proposal installed, at a lower version: replace;
//   - at an equal or higher version: 409 proposal_install_conflict, reason
//     "version-not-greater";
//   - one the host installed otherwise (a shipped pack, or a pack file no proposal wrote):
//     409, reason "read-only";
//   - for an agent pack, an agent id another pack of the tenant (or a shipped one) already
//     declares: 409, reason "read-only".
//
// The install is one Cairn accept whose compare-and-swap covers the pack file's generation
// and the whole packs workbench's revision, so the judgment holds when the file is written;
// when another install slipped in between, apply judges again (at most applyAttempts
// times, then 503, retryable). When the pack file moved since the proposal's revision was
// made, apply first records a revision of the same artifact against the file's head (the
// proposal's state does not change). Applying an applied proposal answers the same again.

// applyAttempts bounds apply's judge-and-install rounds against concurrent installs and
// revisions; between rounds apply waits a short, growing, jittered pause (retryPause).
const applyAttempts = 12

// retryPause is the pause before round attempt+1: up to 2^attempt ms, at most 64 ms,
// uniformly jittered so racing applies spread out.
func retryPause(ctx context.Context, attempt int) {
	_ = pause.For(ctx, time.Duration(rand.Int64N(int64(time.Millisecond)<<min(attempt, 6)))) // an ended ctx ends the next round
}

// Reasons of proposal_install_conflict.
const (
	reasonVersionNotGreater = "version-not-greater"
	reasonReadOnly          = "read-only"
)

func installConflict(reason, msg string) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeInstallConflict, Message: msg, Details: map[string]any{"reason": reason}}
}

func (h *packsHandler) decideProposal(w http.ResponseWriter, r *http.Request, o Owner, id, action string) {
	ctx := r.Context()
	for attempt := 0; ; attempt++ {
		v, _, c, body, err := h.loadChain(ctx, o, id)
		if err != nil {
			WriteError(w, err)
			return
		}
		c.authors = chainAuthors(v, o.Tenant, c) // review.go
		switch {
		case action == "apply" && c.tail.State == meta.ProposalAccepted, action == "reject" && c.tail.State == meta.ProposalRejected:
			writeJSON(w, http.StatusOK, h.doc(c, body)) // the same answer again
			return
		case c.tail.State != meta.ProposalPending:
			WriteError(w, stateConflict(c, map[string]string{"apply": "applied", "reject": "rejected"}[action]))
			return
		}
		if err := h.mayActivate(ctx, o); err != nil {
			WriteError(w, err)
			return
		}
		if err := h.mayDecide(ctx, c.authors); err != nil { // review.go
			WriteError(w, err)
			return
		}
		if action == "reject" {
			res, derr := h.svc.Review.DecideArtifact(ctx, o.Tenant, workbench.ArtifactDecision{Workbench: PacksWorkbench, ProposalID: c.tail.ID,
				Disposition: meta.DispositionReject, SubmissionID: "reject-" + c.tail.ID, Authors: c.authors})
			switch {
			case derr != nil && raced(derr) && attempt+1 < applyAttempts:
				retryPause(ctx, attempt)
				continue // a revision won the race: reject the newest one
			case derr != nil:
				WriteError(w, fromProposalStore(derr))
				return
			}
			writeJSON(w, http.StatusOK, h.doc(chain{tail: res.Proposal, meta: c.meta}, body))
			return
		}
		if verr := validateArtifact(c.tail.Kind, body); verr != nil {
			WriteError(w, verr)
			return
		}
		res, done, aerr := h.install(ctx, o, c, body)
		switch {
		case aerr != nil:
			WriteError(w, aerr)
			return
		case done:
			writeJSON(w, http.StatusOK, h.doc(chain{tail: res.Proposal, meta: c.meta}, body))
			return
		case attempt+1 >= applyAttempts:
			WriteError(w, fail(http.StatusServiceUnavailable, CodeUnavailable, "other installs kept changing this tenant's packs; try again"))
			return
		}
		retryPause(ctx, attempt)
	}
}

// mayActivate checks the activation scope before anything is judged (an apply without it
// is 403 and installs nothing, RFC 0096 §Examples): the store checks it again on the
// decision itself.
func (h *packsHandler) mayActivate(ctx context.Context, o Owner) *Error {
	if err := h.svc.Review.MayReview(ctx, o.Tenant); err != nil {
		return fromProposalStore(err)
	}
	return nil
}

// install judges the install semantics at one fresh view and, when they allow it,
// accepts the proposal guarded by that view. done false: the view went stale before the
// accept (judge again).
func (h *packsHandler) install(ctx context.Context, o Owner, c chain, artifact []byte) (meta.Result, bool, *Error) {
	v, ws, _, err := h.packsView(ctx, o.Tenant)
	if err != nil {
		return meta.Result{}, false, err
	}
	name, version := artifactIdentity(artifact)
	path, _ := packPath(name) // validateArtifact accepted the name
	inv, err := h.inventory(ctx, v, ws, o.Tenant)
	if err != nil {
		return meta.Result{}, false, err
	}
	head, err := inv.judge(c.tail.Kind, name, version, artifact)
	if err != nil {
		return meta.Result{}, false, err
	}
	tail := c.tail
	if tail.Path != path || tail.BaseGeneration != head {
		// Record the same artifact against the head (the proposal's state is unchanged).
		reqID := applyRevisionPrefix + tail.ID[:16] + "-" + strconv.FormatUint(head, 10)
		raw, _ := json.Marshal(c.meta)
		p, _, perr := h.svc.Review.ProposeArtifact(ctx, o.Tenant, workbench.ArtifactProposal{Workbench: PacksWorkbench, Path: path,
			RequestID: reqID, Kind: tail.Kind, Metadata: raw, Body: artifact, ContentType: mediaType(tail.Kind),
			BaseGeneration: head, Supersedes: tail.ID})
		if perr != nil {
			if raced(perr) {
				return meta.Result{}, false, nil
			}
			return meta.Result{}, false, fromProposalStore(perr)
		}
		tail = p
	}
	res, derr := h.svc.Review.DecideArtifact(ctx, o.Tenant, workbench.ArtifactDecision{Workbench: PacksWorkbench, ProposalID: tail.ID,
		Disposition: meta.DispositionAccept, SubmissionID: "apply-" + tail.ID, ExpectRevision: ws.Revision, Authors: c.authors})
	if derr != nil {
		if raced(derr) {
			return meta.Result{}, false, nil
		}
		return meta.Result{}, false, fromProposalStore(derr)
	}
	return res, true, nil
}

// raced reports whether err is a conflict another request caused between apply's view and
// its command (an install, a revision or a decision): apply judges again on a new view.
func raced(err error) bool {
	we := workbench.AsError(err)
	if we.Code != workbench.CodeConflict {
		return false
	}
	switch we.Details["reason"] {
	case meta.ReasonStale, meta.ReasonAlreadyDecided:
		return true
	}
	return false
}

// judge applies the install semantics to an artifact of kind named name at version: the
// generation of the installed pack file it replaces (0: none), or the refusal.
func (inv *inventory) judge(kind, name, version string, artifact []byte) (uint64, *Error) {
	if _, ok := inv.shipped[name]; ok {
		return 0, installConflict(reasonReadOnly, "pack "+name+" is installed by the host and cannot be replaced by a proposal")
	}
	var head uint64
	if cur, ok := inv.packs[name]; ok {
		if !cur.byProposal {
			return 0, installConflict(reasonReadOnly, "pack "+name+" was not installed by a proposal and cannot be replaced by one")
		}
		if !versionGreater(version, cur.version) {
			return 0, installConflict(reasonVersionNotGreater, "pack "+name+" is installed at version "+cur.version+"; "+version+" is not greater")
		}
		head = cur.generation
	}
	if kind == KindAgentPack {
		for _, a := range agentsOf(artifact) {
			if owner, ok := inv.agents[a.AgentID]; ok && owner.packName != name {
				return 0, installConflict(reasonReadOnly, "agent "+a.AgentID+" is already provided by pack "+owner.packName)
			}
		}
	}
	return head, nil
}

// versionGreater reports whether SemVer 2.0 version a has higher precedence than b
// (golang.org/x/mod/semver: numeric identifiers of any length, prerelease ordering, build
// metadata ignored). An invalid b — a pack installed otherwise — is never replaced by
// version.
func versionGreater(a, b string) bool {
	va, vb := "v"+a, "v"+b
	return semver.IsValid(va) && semver.IsValid(vb) && semver.Compare(va, vb) > 0
}

// validVersion reports whether v is a full SemVer 2.0 version (major.minor.patch, no
// leading zeros).
func validVersion(v string) bool {
	return semver.IsValid("v"+v) && strings.Count(strings.SplitN(strings.SplitN(v, "+", 2)[0], "-", 2)[0], ".") == 2
}
