package documents_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/documents"
)

// readView is what a read of a document says about its head and history, leaving out
// the events and proposals of skip.
func readView(e *env, id string, skip ...string) string {
	doc := e.document("local", id)
	row := doc["document"].(map[string]any)
	var evs, states []string
	for _, ev := range events(doc) {
		if !slices.Contains(skip, ev["id"].(string)) {
			evs = append(evs, ev["id"].(string))
		}
	}
	slices.Sort(evs)
	for _, p := range doc["proposals"].([]any) {
		if p := p.(map[string]any); !slices.Contains(skip, p["proposalEventId"].(string)) {
			states = append(states, p["state"].(string))
		}
	}
	var versions, judgments []string
	for _, v := range doc["versions"].([]any) {
		versions = append(versions, v.(map[string]any)["versionId"].(string))
	}
	for _, j := range doc["judgments"].([]any) {
		judgments = append(judgments, fmt.Sprint(j))
	}
	return fmt.Sprintf("head %v (%v versions) body %q\nversions %v\nproposals %v\njudgments %v\nevents %v",
		row["versionId"], row["versions"], doc["body"], versions, states, judgments, evs)
}

// A node that stops in the middle of an accept (after the head names it as pending,
// before its last record) leaves the head for the next write to finish. Until then a read
// shows the accept whole — the accepted body, its version, the proposal accepted, its
// decision and judgment — exactly as it reads once a replay finished it, never a document
// that is missing ("no such version") or a head that moved under a proposal still
// undecided; and a selection or a proposal request building on that head (which finish
// it first) take it.
func TestAReadAfterACrashMidAcceptShowsTheAcceptWhole(t *testing.T) {
	cs := &crashStore{}
	e := newEnvOn(t, nil, func(s documents.Store) documents.Store { cs.Store = s; return cs })
	origin := e.observe("local", "default", "notes", "input/a.md", "a")
	d := e.create("local", origin, "T", "zero\n", "c")
	head := d.versionID
	decisionEvent := func(path string, body []byte, _ uint64) bool {
		return strings.Contains(path, "/events/") && strings.Contains(string(body), documents.TypeDecision)
	}
	for i, cut := range []func(string, []byte, uint64) bool{under("/versions/"), under("/events/"), under("/submissions/"),
		decisionEvent, finalHeadSwap, under("/judgments/")} {
		doc := "/api/workbench/documents/" + d.docID
		ed := e.do("local", "POST", doc+"/versions", map[string]any{"baseVersionId": head, "title": "T", "body": fmt.Sprintf("round %d\n", i), "requestId": fmt.Sprint("e", i)})
		sel := e.do("local", "POST", doc+"/selections", map[string]any{"selectedEventIds": []string{origin}, "requestId": fmt.Sprint("s", i)})
		pr := e.do("local", "POST", doc+"/proposals", map[string]any{"selectionId": sel.str("selectionId"), "runnerId": documents.FixtureRunnerID,
			"baseVersionId": ed.str("versionId"), "requestId": fmt.Sprint("p", i)})
		if ed.status != 200 || sel.status != 200 || pr.status != 200 {
			t.Fatalf("round %d: edit %d %s, selection %d %s, proposal %d %s", i, ed.status, ed.body, sel.status, sel.body, pr.status, pr.body)
		}
		decisions := "/api/workbench/proposals/" + pr.str("proposalEventId") + "/decisions"
		accept := map[string]any{"disposition": "accept", "submissionId": fmt.Sprint("a", i)}
		cs.crashAt(cut)
		if a := e.do("local", "POST", decisions, accept); a.status != http.StatusServiceUnavailable {
			t.Fatalf("round %d: an accept cut short: %d %s", i, a.status, a.body)
		}
		a := e.do("local", "GET", doc, nil)
		if a.status != 200 {
			t.Fatalf("round %d: a read after the cut: %d %s", i, a.status, a.body)
		}
		before := readView(e, d.docID)
		pending := a.json["document"].(map[string]any)["versionId"].(string)
		// Writers that build on the head finish the accept first, and take its version.
		s2 := e.do("local", "POST", doc+"/selections", map[string]any{"selectedEventIds": []string{}, "selectedVersionIds": []string{pending}, "requestId": fmt.Sprint("s2-", i)})
		if s2.status != 200 || s2.str("baseVersionId") != pending {
			t.Fatalf("round %d: a selection of the head %s after the cut: %d %s", i, pending, s2.status, s2.body)
		}
		p2 := e.do("local", "POST", doc+"/proposals", map[string]any{"selectionId": s2.str("selectionId"), "runnerId": documents.FixtureRunnerID,
			"baseVersionId": pending, "requestId": fmt.Sprint("p2-", i)})
		if p2.status != 200 {
			t.Fatalf("round %d: a proposal request on the head after the cut: %d %s", i, p2.status, p2.body)
		}
		acc := e.do("local", "POST", decisions, accept)
		if acc.status != 200 || acc.str("resultVersionId") != pending {
			t.Fatalf("round %d: the accept's replay: %d %s, the read after the cut showed head %s", i, acc.status, acc.body, pending)
		}
		// The second selection and proposal request add their events; the rest reads alike.
		after := readView(e, d.docID, documents.EventID(documents.TypeSelected, s2.str("selectionId")), p2.str("requestedEventId"), p2.str("proposalEventId"))
		if after != before {
			t.Fatalf("round %d: a read after the cut:\n%s\nonce the accept is finished:\n%s", i, before, after)
		}
		head = pending
		if r := e.do("local", "POST", "/api/workbench/proposals/"+p2.str("proposalEventId")+"/decisions", map[string]any{"disposition": "reject", "submissionId": fmt.Sprint("r", i)}); r.status != 200 {
			t.Fatalf("round %d: reject: %d %s", i, r.status, r.body)
		}
	}
}
