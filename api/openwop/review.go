package openwop

import (
	"context"
	"slices"
	"strings"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Four eyes (issue 25): with the node's RequireDistinctReviewer setting, an apply or a
// reject by a principal that authored the proposal is 403 forbidden and changes nothing.
// The authors of an OpenWOP proposal are its owner (the principal that created it, kept
// through every revision) and the proposer of every revision a client made (create and
// revise); not the revisions apply records itself against a moved pack file
// (applyRevisionPrefix), which carry the same artifact and name the applier.

// applyRevisionPrefix starts the request id of the revisions apply records (install);
// the ids of a client's create and revise start with "k" or "r" (requestID).
const applyRevisionPrefix = "a"

// chainAuthors returns the principal ids that authored chain c as view v holds it: the
// owner and the proposer of each client-made revision reachable from the tail (at most
// maxRevisions back).
func chainAuthors(v *meta.View, tenant string, c chain) []string {
	authors := []string{c.meta.Owner.Principal}
	p := c.tail
	for hops := 0; p != nil && hops <= maxRevisions; hops++ {
		if !strings.HasPrefix(p.RequestID, applyRevisionPrefix) && !slices.Contains(authors, p.Proposer.Principal) {
			authors = append(authors, p.Proposer.Principal)
		}
		if p.Supersedes == "" {
			break
		}
		next, err := v.Proposals().Get(tenant, PacksWorkbench, p.Supersedes)
		if err != nil {
			break
		}
		p = next
	}
	return authors
}

// mayDecide refuses, before anything is judged or recorded, a decision by one of the
// chain's authors when the node requires a distinct reviewer (403 forbidden); the store
// checks it again on the decision itself (workbench.ArtifactDecision.Authors). The
// envelope's details.reason is "self_review", as on Cairn's own surfaces.
func (h *packsHandler) mayDecide(ctx context.Context, authors []string) *Error {
	if err := h.svc.Review.MayDecide(ctx, authors); err != nil {
		e := fromProposalStore(err)
		e.Details = map[string]any{"reason": workbench.ReasonSelfReview}
		return e
	}
	return nil
}
