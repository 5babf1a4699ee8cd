package rest_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestProposalFlowOverREST is the seed's review flow over REST, every request and answer
// checked against the OpenAPI document: create a document, take context, propose, read the
// proposal with its bytes, accept (head moved, judgment with every link, readback), a
// second proposal on the old base refused with 409 and the head (nothing appended), its
// rejection recorded, and replays of create, propose and decide answering the first time.
func TestProposalFlowOverREST(t *testing.T) {
	c := newChecker(t)
	wb := "/v1/agents/a1/workbenches/w1"
	doc := wb + "/files/outputs/plan.json"
	post := c.post

	expect(t, c.call(true, "PUT", wb, "", "Idempotency-Key", "create-1"), 201, "")
	expect(t, c.call(true, "PUT", wb, "", "Idempotency-Key", "create-1"), 201, "") // a replay answers the first time
	w := c.call(true, "PUT", doc, `{"steps":["a"],"v":1}`, "Content-Type", "application/json")
	expect(t, w, 201, "")
	base := uint64(w.json["generation"].(float64))
	ctxFile := c.call(true, "PUT", wb+"/files/input/brief.txt", "make it two steps")
	expect(t, ctxFile, 201, "")
	ctxGen := uint64(ctxFile.json["generation"].(float64))
	snap := post(true, wb+"/snapshots", `{"name":"before-review"}`)
	expect(t, snap, 201, "")

	propose := fmt.Sprintf(`{"path":"outputs/plan.json","base_generation":%d,"text":"{\"v\":2,\"steps\":[\"a\",\"b\"]}","content_type":"application/json",`+
		`"reason":"add step b","request_id":"p-1","evidence":[{"kind":"file","path":"input/brief.txt","generation":%d},{"kind":"snapshot","snapshot_id":%v}]}`,
		base, ctxGen, snap.json["snapshot_id"])
	p := post(true, wb+"/proposals", propose)
	expect(t, p, 201, "")
	id := p.json["proposal_id"].(string)
	if p.json["state"] != "pending" || p.json["stale"] != false || len(p.json["evidence"].([]any)) != 2 {
		t.Fatalf("proposal: %s", p.body)
	}
	again := post(true, wb+"/proposals", propose)
	expect(t, again, 200, "")
	if again.json["proposal_id"] != id || again.json["replayed"] != true || again.json["context_digest"] != p.json["context_digest"] {
		t.Fatalf("replayed proposal: %s", again.body)
	}
	reused := post(true, wb+"/proposals", strings.Replace(propose, "add step b", "other", 1))
	expect(t, reused, 409, "Conflict")
	if reused.json["details"].(map[string]any)["reason"] != "request_reused" {
		t.Fatalf("reused request id: %s", reused.body)
	}
	// Inert: the document still reads as before.
	if r := c.call(true, "GET", doc, ""); string(r.body) != `{"steps":["a"],"v":1}` {
		t.Fatalf("pending proposal visible: %s", r.body)
	}
	got := c.call(true, "GET", wb+"/proposals/"+id+"?include_body=true", "")
	expect(t, got, 200, "")
	if got.json["text"] != `{"v":2,"steps":["a","b"]}` {
		t.Fatalf("proposal body: %s", got.body)
	}
	expect(t, c.call(true, "GET", wb+"/proposals?state=pending&path="+url.QueryEscape("outputs/plan.json"), ""), 200, "")

	decide := `{"disposition":"accept","reason":"looks right","submission_id":"d-1"}`
	d := post(true, wb+"/proposals/"+id+"/decision", decide)
	expect(t, d, 200, "")
	head := d.json["result_generation"].(float64)
	j := d.json["judgment"].(map[string]any)
	rb := d.json["readback"].(map[string]any)
	if d.json["state"] != "accepted" || j["proposal_id"] != id || j["base_generation"] != float64(base) || j["result_generation"] != head ||
		j["context_digest"] != p.json["context_digest"] || j["disposition"] != "accept" || rb["bytes_equal"] != true || rb["jcs_equal"] != true {
		t.Fatalf("decision: %s", d.body)
	}
	r := c.call(true, "GET", doc, "")
	if string(r.body) != `{"v":2,"steps":["a","b"]}` || r.header.Get("ETag") != fmt.Sprintf(`"%d"`, int64(head)) {
		t.Fatalf("head after accept: %s %v", r.body, r.header.Get("ETag"))
	}
	replay := post(true, wb+"/proposals/"+id+"/decision", decide)
	expect(t, replay, 200, "")
	if replay.json["replayed"] != true || replay.json["result_generation"] != head {
		t.Fatalf("replayed decision: %s", replay.body)
	}

	// A second proposal on the old base: stale; accept is 409 with the head, nothing appended.
	p2 := post(true, wb+"/proposals", fmt.Sprintf(`{"path":"outputs/plan.json","base_generation":%d,"text":"{\"v\":3}","request_id":"p-2"}`, base))
	expect(t, p2, 201, "")
	id2 := p2.json["proposal_id"].(string)
	if p2.json["stale"] != true || p2.json["head_generation"] != head {
		t.Fatalf("stale proposal: %s", p2.body)
	}
	stale := post(true, wb+"/proposals/"+id2+"/decision", `{"disposition":"accept","submission_id":"d-2"}`)
	expect(t, stale, 409, "Conflict")
	if det := stale.json["details"].(map[string]any); det["reason"] != "stale" || det["head_generation"] != head || stale.json["retryable"] != false {
		t.Fatalf("stale accept: %s", stale.body)
	}
	if r := c.call(true, "GET", doc, ""); r.header.Get("ETag") != fmt.Sprintf(`"%d"`, int64(head)) {
		t.Fatal("a stale accept wrote")
	}
	rej := post(true, wb+"/proposals/"+id2+"/decision", `{"disposition":"reject","reason":"superseded by p-1","submission_id":"d-2"}`)
	expect(t, rej, 200, "")
	if rej.json["state"] != "rejected" {
		t.Fatalf("reject: %s", rej.body)
	}
	twice := post(true, wb+"/proposals/"+id2+"/decision", `{"disposition":"accept","submission_id":"d-3"}`)
	expect(t, twice, 409, "Conflict")
	if twice.json["details"].(map[string]any)["reason"] != "already_decided" {
		t.Fatalf("second decision: %s", twice.body)
	}
	js := c.call(true, "GET", wb+"/judgments?path="+url.QueryEscape("outputs/plan.json"), "")
	expect(t, js, 200, "")
	if n := len(js.json["judgments"].([]any)); n != 2 {
		t.Fatalf("%d judgments: %s", n, js.body)
	}
	expect(t, c.call(true, "GET", wb+"/proposals?limit=1", ""), 200, "")
	expect(t, c.call(true, "HEAD", wb+"/judgments", ""), 200, "")
	expect(t, c.call(false, "GET", wb+"/proposals?state=bogus", ""), 400, "InvalidArguments")
	expect(t, c.call(false, "GET", wb+"/judgments?state=pending", ""), 400, "InvalidArguments")
	expect(t, c.call(true, "GET", wb+"/proposals/"+strings.Repeat("0", 32), ""), 404, "NotFound")
	expect(t, post(false, wb+"/proposals", `{"path":"outputs/plan.json","request_id":"p-3"}`), 400, "InvalidArguments")
	expect(t, post(false, wb+"/proposals/"+id2+"/decision", `{"disposition":"maybe","submission_id":"d-4"}`), 400, "InvalidArguments")
}
