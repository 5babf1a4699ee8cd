package mcp

import (
	"testing"
)

// TestTheReviewFlowOverMCP is the seed's flow through the official go-sdk client over
// streamable HTTP: the Workbench profile creates the document and its context, the cairn
// profile proposes, shows the proposal, accepts (the head moves, the judgment links
// everything), refuses a stale second proposal with the head and nothing written, records
// its rejection, and replays of create, propose and decide answer the first time.
func TestTheReviewFlowOverMCP(t *testing.T) {
	svc := newService(t, 0)
	wb, cs := connectLanes(t, svc)

	ok(t, wb, "workbench_create", args{"id": "w"})
	ok(t, wb, "workbench_create", args{"id": "w"}) // a replay answers the same
	put := ok(t, wb, "workbench_put_file", args{"id": "w", "section": "outputs", "path": "draft.md", "text": "# Draft\n\nfirst\n"})
	base := put.int(t, "generation")
	brief := ok(t, wb, "workbench_put_file", args{"id": "w", "section": "input", "path": "brief.md", "text": "say second"})
	snap := ok(t, wb, "workbench_snapshot", args{"id": "w", "name": "context"})

	in := args{"id": "w", "path": "outputs/draft.md", "base_generation": base, "request_id": "p1", "reason": "follow the brief",
		"edit": args{"old_string": "first", "new_string": "second"},
		"evidence": []any{args{"kind": "file", "path": "input/brief.md", "generation": brief.int(t, "generation")},
			args{"kind": "snapshot", "snapshot_id": snap.int(t, "snapshot_id")}}}
	p := ok(t, cs, "cairn_propose", in)
	id := p.str("proposal_id")
	if p.str("state") != "pending" || p["stale"] != false || p["replayed"] != false || len(p.list(t, "evidence")) != 2 {
		t.Fatalf("proposal %v", p)
	}
	again := ok(t, cs, "cairn_propose", in)
	if again.str("proposal_id") != id || again["replayed"] != true || again.str("context_digest") != p.str("context_digest") {
		t.Fatalf("replayed proposal %v", again)
	}
	if r := ok(t, wb, "workbench_read", args{"id": "w", "section": "outputs", "path": "draft.md"}); r.str("digest_uri") != put.str("digest_uri") {
		t.Fatalf("a pending proposal is visible: %v", r)
	}
	got := ok(t, cs, "cairn_proposals", args{"id": "w", "proposal_id": id, "include_body": true})
	if got.str("text") != "# Draft\n\nsecond\n" {
		t.Fatalf("proposal bytes %v", got)
	}

	dec := args{"id": "w", "proposal_id": id, "disposition": "accept", "reason": "good", "submission_id": "d1"}
	d := ok(t, cs, "cairn_decide", dec)
	head := d.int(t, "result_generation")
	j := obj(d["judgment"].(map[string]any))
	if d.str("state") != "accepted" || j.str("proposal_id") != id || j.int(t, "base_generation") != base ||
		j.int(t, "result_generation") != head || j.str("context_digest") != p.str("context_digest") || j.str("disposition") != "accept" {
		t.Fatalf("decision %v", d)
	}
	st := ok(t, wb, "workbench_stat", args{"id": "w", "section": "outputs", "path": "draft.md"})
	if st.card().int(t, "generation") != head {
		t.Fatalf("head after accept: %v", st.card())
	}
	if r := ok(t, wb, "workbench_read", args{"id": "w", "section": "outputs", "path": "draft.md"}); r.str("digest_uri") != got.str("digest_uri") {
		t.Fatalf("accepted bytes: %v", r)
	}
	if replay := ok(t, cs, "cairn_decide", dec); replay["replayed"] != true || replay.int(t, "result_generation") != head {
		t.Fatalf("replayed decision %v", replay)
	}

	p2 := ok(t, cs, "cairn_propose", args{"id": "w", "path": "outputs/draft.md", "base_generation": base, "request_id": "p2", "text": "other"})
	if p2["stale"] != true || p2.int(t, "head_generation") != head {
		t.Fatalf("stale proposal %v", p2)
	}
	e := fails(t, cs, "cairn_decide", args{"id": "w", "proposal_id": p2.str("proposal_id"), "disposition": "accept", "submission_id": "d2"}, "Conflict")
	if e.details().str("reason") != "stale" || e.details().int(t, "head_generation") != head {
		t.Fatalf("stale accept %v", e)
	}
	if st := ok(t, wb, "workbench_stat", args{"id": "w", "section": "outputs", "path": "draft.md"}); st.card().int(t, "generation") != head {
		t.Fatal("a stale accept wrote")
	}
	rej := ok(t, cs, "cairn_decide", args{"id": "w", "proposal_id": p2.str("proposal_id"), "disposition": "reject", "submission_id": "d3"})
	if rej.str("state") != "rejected" {
		t.Fatalf("reject %v", rej)
	}
	fails(t, cs, "cairn_decide", args{"id": "w", "proposal_id": id, "disposition": "reject", "submission_id": "d4"}, "Conflict")
	js := ok(t, cs, "cairn_proposals", args{"id": "w", "judgments": true})
	if n := len(js.list(t, "judgments")); n != 2 {
		t.Fatalf("%d judgments", n)
	}
	list := ok(t, cs, "cairn_proposals", args{"id": "w", "state": "pending"})
	if n := len(list.list(t, "proposals")); n != 0 {
		t.Fatalf("%d pending proposals left", n)
	}
	invalid(t, cs, "cairn_propose", args{"id": "w", "path": "outputs/x"}, "request_id")
	invalid(t, cs, "cairn_decide", args{"id": "w", "proposal_id": id, "disposition": "maybe", "submission_id": "d5"}, "disposition")
	fails(t, wb, "cairn_propose", in, "UnknownTool")
}
