package meta

import "testing"

// A decision is a proposal.decide event of the change feed, and a proposal may cite a
// retained feed position as evidence (and not an unknown one).
func TestProposalDecisionsAreFeedEventsAndFeedPositionsAreEvidence(t *testing.T) {
	f := New(Options{})
	idx := uint64(0)
	apply := func(b Body) Result {
		t.Helper()
		idx++
		return f.ApplyBody(idx, Header{TimeMs: int64(idx)}, b)
	}
	body := []byte("v1")
	put := apply(Put{Agent: "a", Workspace: "w", Path: "doc.md", CreateWorkspace: true, Size: 2, Digest: digestOf(body),
		Segments: []Segment{{Digest: digestOf(body), Size: 2, Inline: body}}})
	if put.Err != nil {
		t.Fatal(put.Err)
	}
	evs, _, err := f.View().Feed().Events("a", FeedPosition{}, EventFilter{}, 100)
	if err != nil || len(evs) == 0 {
		t.Fatalf("events %v %v", evs, err)
	}
	last := evs[len(evs)-1].Position.String()
	prop := func(req, pos string) Result {
		nb := []byte("v2 " + req)
		return apply(ProposalCreate{Agent: "a", Workspace: "w", Path: "doc.md", RequestID: req, BaseGeneration: put.Generation,
			Body:     FileBody{Size: int64(len(nb)), Digest: digestOf(nb), Segments: []Segment{{Digest: digestOf(nb), Size: int64(len(nb)), Inline: nb}}},
			Evidence: []EvidenceRef{{Kind: EvidenceFeed, Position: pos}}})
	}
	if r := prop("bad", "999.0"); CodeOf(r.Err) != CodeInvalidArguments {
		t.Fatalf("evidence of an unknown feed position: %v, want InvalidArguments", r.Err)
	}
	r := prop("good", last)
	if r.Err != nil {
		t.Fatalf("evidence of a retained feed position: %v", r.Err)
	}
	d := apply(ProposalDecide{Agent: "a", Workspace: "w", ID: r.Proposal.ID, Disposition: DispositionAccept, SubmissionID: "s1"})
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	evs, _, _ = f.View().Feed().Events("a", evs[len(evs)-1].Position, EventFilter{}, 100)
	var got *Event
	for i := range evs {
		if evs[i].Kind == EventProposalDecide {
			got = &evs[i]
		}
	}
	if got == nil || got.Proposal != r.Proposal.ID || got.Disposition != DispositionAccept || got.Path != "doc.md" ||
		got.Workbench != "w" || got.Generation != d.Generation || got.Generation == 0 {
		t.Fatalf("decision event %+v among %+v; want proposal %s accepted at generation %d", got, evs, r.Proposal.ID, d.Generation)
	}
}
