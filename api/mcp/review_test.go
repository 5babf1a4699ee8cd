package mcp

import (
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// TestCairnDecideRefusesTheProposerWhenADistinctReviewerIsRequired: over MCP, on a node
// with RequireDistinctReviewer, cairn_decide by the principal that proposed is
// PermissionDenied with details.reason "self_review" for accept and reject alike, and the
// proposal stays pending and inert; another principal's accept publishes it.
func TestCairnDecideRefusesTheProposerWhenADistinctReviewerIsRequired(t *testing.T) {
	svc := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, RequireDistinctReviewer: true}).Service
	connect := servePrincipals(t, svc)
	alice, bob := connect("alice", "cairn"), connect("bob", "cairn")
	ok(t, connect("alice", ""), "workbench_create", args{"id": "w"})
	p := ok(t, alice, "cairn_propose", args{"id": "w", "path": "outputs/plan.md", "text": "v1", "request_id": "r1"})
	id := p.str("proposal_id")
	for _, disposition := range []string{"accept", "reject"} {
		r := fails(t, alice, "cairn_decide", args{"id": "w", "proposal_id": id, "disposition": disposition, "submission_id": "s-" + disposition},
			workbench.CodePermissionDenied)
		if r.details()["reason"] != workbench.ReasonSelfReview || r["retryable"] != false {
			t.Fatalf("%s by the proposer: %v", disposition, r)
		}
	}
	if got := ok(t, bob, "cairn_proposals", args{"id": "w", "proposal_id": id}); got.str("state") != "pending" {
		t.Fatalf("after refused self-reviews: %v", got)
	}
	fails(t, connect("bob", ""), "workbench_read", args{"id": "w", "section": "outputs", "path": "plan.md"}, workbench.CodeNotFound)
	d := ok(t, bob, "cairn_decide", args{"id": "w", "proposal_id": id, "disposition": "accept", "submission_id": "s-bob"})
	if d.str("state") != "accepted" {
		t.Fatalf("bob's accept: %v", d)
	}
}
