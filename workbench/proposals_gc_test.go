package workbench_test

import (
	"testing"

	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
)

// TestPendingProposalBlobsSurviveGCSweeps: a pending proposal's body (in the object
// store) is referenced while the proposal is kept, so sweeps that collect the garbage
// beside it never take it, and the proposal still reads back and can be accepted.
func TestPendingProposalBlobsSurviveGCSweeps(t *testing.T) {
	n := newGCNode(t)
	ctx := t.Context()
	n.write(t, "outputs/f", "base body")
	p, err := n.svc.Review.Propose(ctx, "a", workbench.ProposeInput{ID: "w", Path: "outputs/f", Text: ptr("proposed body"), RequestID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	id := p["proposal_id"].(string)
	base := p["base_generation"].(uint64)
	n.write(t, "outputs/g", "garbage soon")
	n.write(t, "outputs/g", "kept") // "garbage soon" is unreferenced now
	n.sweepUntil(t, worker.GCOptions{}, func(r worker.GCReport) bool { return r.Deleted > 0 })
	if n.stored(t, "garbage soon") {
		t.Fatal("the sweep did not collect the garbage beside the proposal")
	}
	if !n.stored(t, "proposed body") {
		t.Fatal("a sweep deleted a pending proposal's body")
	}
	if r, ok := n.record(t, "proposed body"); !ok || r.Count != 1 || r.Intent {
		t.Fatalf("the proposal's blob record: %+v %v", r, ok)
	}
	got, err := n.svc.Tools.Proposals(ctx, "a", workbench.ProposalsInput{ID: "w", ProposalID: &id, IncludeBody: ptr(true)})
	if err != nil || got["text"] != "proposed body" {
		t.Fatalf("proposal after the sweep: %v %v", got["text"], err)
	}
	if _, err := n.svc.Review.Decide(ctx, "a", workbench.DecideInput{ID: "w", ProposalID: id, Disposition: "accept", SubmissionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if body := n.read(t, "outputs/f"); body != "proposed body" {
		t.Fatalf("after accept: %q (base was %d)", body, base)
	}
	if r, _ := n.record(t, "proposed body"); r.Count != 2 {
		t.Fatalf("refs after accept: %+v, want the file's and the proposal's", r)
	}
}
