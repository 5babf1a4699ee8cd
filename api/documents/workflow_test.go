package documents_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/auth"
)

// TestTheDesignsWorkflowOverHTTP walks the design's workflow: open an event, create a
// document linked to it, select context, request a proposal, inspect the diff, accept,
// and checks every id against the design's rules, every event's payload and lineage, and
// that every request replayed answers its first answer.
func TestTheDesignsWorkflowOverHTTP(t *testing.T) {
	e := newEnv(t, nil)
	origin := e.observe("local", "default", "notes", "input/meeting.md", "the meeting notes")

	// Create.
	d := e.create("local", origin, "Plan <draft>", "Hello\\n", "req-create")
	wantDoc := documents.StableKey("working-document", origin, "req-create")
	v1 := documents.StableKey("version", "workbench:documents", wantDoc, hexSHA(content("Plan <draft>", "Hello\\n")))
	if d.docID != wantDoc || d.versionID != v1 {
		t.Fatalf("ids: document %s version %s, want %s %s", d.docID, d.versionID, wantDoc, v1)
	}
	if again := e.do("local", "POST", "/api/workbench/documents", map[string]any{"originEventId": origin, "title": "Plan <draft>",
		"body": "Hello\\n", "requestId": "req-create"}); again.status != http.StatusCreated || again.str("documentId") != d.docID ||
		again.str("versionId") != v1 || again.str("createdEventId") != d.createdEventID {
		t.Fatalf("a replayed create: %d %s", again.status, again.body)
	}
	if other := e.do("local", "POST", "/api/workbench/documents", map[string]any{"originEventId": origin, "title": "Other",
		"body": "x", "requestId": "req-create"}); other.status != http.StatusConflict || other.str("error") != "ConflictError" {
		t.Fatalf("a create request id reused with other content: %d %s", other.status, other.body)
	}
	doc := e.document("local", d.docID)
	row := doc["document"].(map[string]any)
	if row["id"] != documents.StableKey("document", "workbench:documents", d.docID) || row["title"] != "Plan <draft>" ||
		row["path"] != "documents/"+d.docID+".md" || row["source"] != "workbench:documents" || row["contentType"] != "text/markdown" ||
		doc["body"] != "Hello\\n" || row["origin"].(map[string]any)["eventId"] != origin {
		t.Fatalf("document row: %v body %q", row, doc["body"])
	}

	// Edit: a new version, its replay, a stale edit, identical content.
	edit := func(base, body, req string) answer {
		return e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/versions",
			map[string]any{"baseVersionId": base, "title": "Plan", "body": body, "requestId": req})
	}
	ed := edit(v1, "Hello, world\\n", "req-edit-1")
	v2 := documents.StableKey("version", "workbench:documents", d.docID, hexSHA(content("Plan", "Hello, world\\n")))
	if ed.status != 200 || ed.str("versionId") != v2 {
		t.Fatalf("edit: %d %s", ed.status, ed.body)
	}
	if r := edit(v1, "Hello, world\\n", "req-edit-1"); r.status != 200 || r.str("versionId") != v2 || r.str("versionEventId") != ed.str("versionEventId") {
		t.Fatalf("a replayed edit: %d %s", r.status, r.body)
	}
	if r := edit(v1, "Something else\\n", "req-edit-2"); r.status != http.StatusConflict || r.str("error") != "StaleBaseError" || r.str("headVersionId") != v2 {
		t.Fatalf("a stale edit: %d %s", r.status, r.body)
	}
	if r := edit(v2, "Hello, world\\n", "req-edit-3"); r.status != 200 || r.str("versionId") != v2 || r.json["versionEventId"] != nil {
		t.Fatalf("an edit identical to the head: %d %s", r.status, r.body)
	}
	if vs := e.do("local", "GET", "/api/workbench/documents/"+d.docID+"/versions", nil); vs.status != 200 || len(vs.json["versions"].([]any)) != 2 {
		t.Fatalf("versions after a stale and a no-op edit: %d %s", vs.status, vs.body)
	}

	// Candidates of the document: the recent observations and its versions.
	c := e.do("local", "GET", "/api/workbench/candidates?documentId="+d.docID, nil)
	var versionCandidates []string
	for _, x := range c.json["candidates"].([]any) {
		if m := x.(map[string]any); m["kind"] == "version" {
			versionCandidates = append(versionCandidates, m["versionId"].(string))
		}
	}
	if c.status != 200 || !reflect.DeepEqual(versionCandidates, []string{v1, v2}) {
		t.Fatalf("candidates: %d %s", c.status, c.body)
	}

	// Select context.
	sel := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections",
		map[string]any{"selectedEventIds": []string{origin}, "selectedVersionIds": []string{v1}, "requestId": "req-select"})
	wantSel := documents.StableKey("workbench-selection", d.docID, "req-select")
	sorted := []string{origin, v1}
	slices.Sort(sorted)
	wantSnap := documents.StableKey("workbench-context-snapshot", d.docID,
		hexSHA(fmt.Sprintf(`{"baseVersionId":"%s","ids":["%s","%s"]}`, v2, sorted[0], sorted[1])))
	if sel.status != 200 || sel.str("selectionId") != wantSel || sel.str("snapshotVersionId") != wantSnap {
		t.Fatalf("select: %d %s (want selection %s snapshot %s)", sel.status, sel.body, wantSel, wantSnap)
	}
	if r := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections",
		map[string]any{"selectedEventIds": []string{origin}, "selectedVersionIds": []string{v1}, "requestId": "req-select"}); string(r.body) != string(sel.body) {
		t.Fatalf("a replayed selection: %d %s", r.status, r.body)
	}

	// Request a proposal from the fixture runner.
	req := map[string]any{"selectionId": wantSel, "runnerId": "fixture-deterministic@1", "baseVersionId": v2, "requestId": "req-propose"}
	pr := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", req)
	wantProposal := documents.EventID(documents.TypeProposed, d.docID, "req-propose")
	if pr.status != 200 || pr.str("proposalEventId") != wantProposal || pr.str("runId") != documents.StableKey("workbench-run", d.docID, "req-propose") {
		t.Fatalf("request proposal: %d %s", pr.status, pr.body)
	}
	if r := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", req); string(r.body) != string(pr.body) {
		t.Fatalf("a replayed proposal request: %d %s", r.status, r.body)
	}
	doc = e.document("local", d.docID)
	props := doc["proposals"].([]any)
	if len(props) != 1 {
		t.Fatalf("proposals: %v", props)
	}
	p := props[0].(map[string]any)
	proposal := p["proposal"].(map[string]any)
	if p["state"] != "pending" || p["diff"] == nil || proposal["reason"] != "fixture: append sources section" ||
		!reflect.DeepEqual(proposal["evidenceEventIds"], []any{origin}) || proposal["publicationEligible"] != false {
		t.Fatalf("the proposal: %v", p)
	}
	proposedText := proposal["proposedText"].(string)
	if proposal["proposedTextSha256"] != hexSHA(proposedText) {
		t.Fatalf("proposedTextSha256 %v", proposal["proposedTextSha256"])
	}

	// Accept, replay, a second submission.
	decide := func(disposition, submission string) answer {
		return e.do("local", "POST", "/api/workbench/proposals/"+wantProposal+"/decisions", map[string]any{"disposition": disposition, "submissionId": submission})
	}
	acc := decide("accept", "sub-1")
	v3 := documents.StableKey("version", "workbench:documents", d.docID, hexSHA(content("Plan", proposedText)))
	if acc.status != 200 || acc.str("resultVersionId") != v3 {
		t.Fatalf("accept: %d %s", acc.status, acc.body)
	}
	if r := decide("accept", "sub-1"); string(r.body) != string(acc.body) {
		t.Fatalf("a replayed accept: %d %s", r.status, r.body)
	}
	if r := decide("reject", "sub-2"); r.status != http.StatusConflict || r.str("error") != "ConflictError" {
		t.Fatalf("a second decision: %d %s", r.status, r.body)
	}
	if r := decide("reject", "sub-1"); r.status != http.StatusConflict {
		t.Fatalf("a submission id reused with other content: %d %s", r.status, r.body)
	}
	doc = e.document("local", d.docID)
	if doc["document"].(map[string]any)["versionId"] != v3 || doc["body"] != proposedText {
		t.Fatalf("head after accept: %v", doc["document"])
	}
	if st := doc["proposals"].([]any)[0].(map[string]any)["state"]; st != "accepted" {
		t.Fatalf("proposal state %v", st)
	}

	// Every event: envelope, lineage, parents as the design's table says.
	byType := map[string][]map[string]any{}
	ids := map[string]bool{}
	for _, ev := range events(doc) {
		byType[ev["type"].(string)] = append(byType[ev["type"].(string)], ev)
		ids[ev["id"].(string)] = true
		if ev["rootEventId"] != origin || ev["source"] != "workbench:documents" || ev["sourceKind"] != "system" ||
			ev["privacy"] != "sensitive" || ev["schemaVersion"] != float64(1) || ev["actor"] != "operator:local" || ev["idempotencyKey"] != ev["id"] {
			t.Fatalf("event envelope: %v", ev)
		}
	}
	counts := map[string]int{}
	for k, v := range byType {
		counts[k] = len(v)
	}
	want := map[string]int{documents.TypeCreated: 1, documents.TypeVersion: 3, documents.TypeSelected: 1, documents.TypeRequested: 1,
		documents.TypeProposed: 1, documents.TypeDecision: 1}
	if !reflect.DeepEqual(counts, want) {
		t.Fatalf("events by type %v, want %v", counts, want)
	}
	createdEv := byType[documents.TypeCreated][0]
	if createdEv["parentEventId"] != origin || createdEv["id"] != documents.EventID(documents.TypeCreated, d.docID) {
		t.Fatalf("created: %v", createdEv)
	}
	parents := map[string]string{}
	for _, v := range byType[documents.TypeVersion] {
		parents[payload(v)["reason"].(string)] = v["parentEventId"].(string)
	}
	if !reflect.DeepEqual(parents, map[string]string{"created": createdEv["id"].(string), "operator-edit": createdEv["id"].(string), "proposal-accepted": wantProposal}) {
		t.Fatalf("version parents: %v", parents)
	}
	selectedEv, requestedEv := byType[documents.TypeSelected][0], byType[documents.TypeRequested][0]
	proposedEv, decisionEv := byType[documents.TypeProposed][0], byType[documents.TypeDecision][0]
	if selectedEv["parentEventId"] != createdEv["id"] || requestedEv["parentEventId"] != selectedEv["id"] ||
		proposedEv["parentEventId"] != requestedEv["id"] || decisionEv["parentEventId"] != proposedEv["id"] {
		t.Fatal("the parents of selected, requested, proposed and decision are not the design's")
	}
	if dp := payload(decisionEv); dp["authority"] != "human" || dp["resultVersionId"] != v3 || dp["submissionId"] != "sub-1" ||
		decisionEv["id"] != documents.EventID(documents.TypeDecision, wantProposal) {
		t.Fatalf("decision: %v", decisionEv)
	}
	rq := payload(requestedEv)
	if rq["baseSha256"] != hexSHA(content("Plan", "Hello, world\\n")) || rq["snapshotVersionId"] != wantSnap || rq["selectionId"] != wantSel {
		t.Fatalf("requested: %v", rq)
	}
	runs := doc["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("runs %v", runs)
	}
	run := runs[0].(map[string]any)
	if run["status"] != "completed" || !reflect.DeepEqual(run["outputEventIds"], []any{wantProposal}) ||
		run["triggerEventId"] != requestedEv["id"] || run["contextManifest"].(map[string]any)["contextSnapshot"] != wantSnap {
		t.Fatalf("run: %v", run)
	}
	js := doc["judgments"].([]any)
	if len(js) != 1 {
		t.Fatalf("judgments %v", js)
	}
	j := js[0].(map[string]any)
	if j["criterion"] != "workbench-document-proposal@1" || j["kind"] != "accept" || j["qualityEligible"] != false ||
		j["externalExportEligible"] != false || j["feedbackSourceEventId"] != decisionEv["id"] || j["source"] != "judgment:workbench-documents" ||
		j["proposalEventId"] != wantProposal || j["baseVersionId"] != v2 || j["resultVersionId"] != v3 ||
		j["contextSnapshotId"] != wantSnap || j["runId"] != run["id"] {
		t.Fatalf("judgment: %v", j)
	}
	if !slices.Contains(documentIDs(e, "local"), d.docID) {
		t.Fatal("the document is not listed")
	}
	// Each event is also on the root's change feed, as the file write it is.
	feed, err := e.svc.Review.Events(auth.WithPrincipal(context.Background(), auth.Local), "default", nil, meta.EventFilter{Workbench: documents.Workbench})
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	for feed.Pending() {
		evs, err := feed.Next(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Kind == meta.EventFilePut {
				written[ev.Path] = true
			}
		}
	}
	for id := range ids {
		if !written["default/docs/"+d.docID+"/events/"+id+".json"] {
			t.Fatalf("event %s is not on the change feed", id)
		}
	}
}

func documentIDs(e *env, who string) []string {
	a := e.do(who, "GET", "/api/workbench/documents", nil)
	var out []string
	for _, x := range a.json["documents"].([]any) {
		out = append(out, x.(map[string]any)["documentId"].(string))
	}
	return out
}

// An edit back to earlier content is that version again (identical content is one
// version): the history holds two events for it, but the candidates name it once, where
// it last became the head, so a client that selects every version candidate is not
// refused for naming one twice.
func TestAVersionReturnedToIsOneCandidate(t *testing.T) {
	e := newEnv(t, nil)
	origin := e.observe("local", "default", "notes", "input/meeting.md", "the meeting notes")
	d := e.create("local", origin, "Plan", "one\\n", "req-create")
	edit := func(base, body, req string) string {
		r := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/versions",
			map[string]any{"baseVersionId": base, "title": "Plan", "body": body, "requestId": req})
		if r.status != http.StatusOK {
			t.Fatalf("edit %s: %d %s", req, r.status, r.body)
		}
		return r.str("versionId")
	}
	v2 := edit(d.versionID, "two\\n", "req-edit-1")
	if back := edit(v2, "one\\n", "req-edit-2"); back != d.versionID {
		t.Fatalf("an edit back to the first content is version %s, want %s", back, d.versionID)
	}
	if vs := e.do("local", "GET", "/api/workbench/documents/"+d.docID+"/versions", nil); len(vs.json["versions"].([]any)) != 3 {
		t.Fatalf("the history holds every version event: %s", vs.body)
	}
	c := e.do("local", "GET", "/api/workbench/candidates?documentId="+d.docID, nil)
	var versions []string
	for _, x := range c.json["candidates"].([]any) {
		if m := x.(map[string]any); m["kind"] == "version" {
			versions = append(versions, m["versionId"].(string))
		}
	}
	if c.status != http.StatusOK || !reflect.DeepEqual(versions, []string{v2, d.versionID}) {
		t.Fatalf("version candidates %v, want [%s %s] (%s)", versions, v2, d.versionID, c.body)
	}
	sel := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections",
		map[string]any{"selectedEventIds": []string{origin}, "selectedVersionIds": versions, "requestId": "req-select"})
	if sel.status != http.StatusOK {
		t.Fatalf("a selection of every version candidate: %d %s", sel.status, sel.body)
	}
}
