package documents_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/internal/retry"
)

// aDocument makes a document of the Local owner with a selection; it returns the
// document, its selection id and head.
func aDocument(t *testing.T, e *env) (created, string) {
	t.Helper()
	origin := e.observe("local", "default", "notes", "input/a.md", "a")
	d := e.create("local", origin, "T", "body\n", "req-c")
	sel := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections",
		map[string]any{"selectedEventIds": []string{origin}, "selectedVersionIds": []string{}, "requestId": "req-s"})
	if sel.status != 200 {
		t.Fatalf("select: %d %s", sel.status, sel.body)
	}
	return d, sel.str("selectionId")
}

func TestBadInputIsATypedErrorNamingTheField(t *testing.T) {
	e := newEnv(t, nil)
	d, selection := aDocument(t, e)
	long := strings.Repeat("x", documents.MaxBodyChars+1)
	docs := "/api/workbench/documents"
	one := docs + "/" + d.docID
	ok := map[string]any{"originEventId": d.origin, "title": "t", "body": "b", "requestId": "r"}
	with := func(base map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for kk, vv := range base {
			out[kk] = vv
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	edit := map[string]any{"baseVersionId": d.versionID, "title": "t", "body": "b", "requestId": "r"}
	prop := map[string]any{"selectionId": selection, "runnerId": documents.FixtureRunnerID, "baseVersionId": d.versionID, "requestId": "r"}
	for _, tc := range []struct {
		name, path string
		body       any
		field      string
		rule       string
	}{
		{"a create without an origin", docs, with(ok, "originEventId", nil), "originEventId", "required"},
		{"a create whose origin is not an observation id", docs, with(ok, "originEventId", "evt-1"), "originEventId", "format"},
		{"a create whose origin the feed does not hold", docs, with(ok, "originEventId", "cairn:feed:999999.0"), "originEventId", "must-exist"},
		{"a create with a title of 201 characters", docs, with(ok, "title", strings.Repeat("t", 201)), "title", "max-length"},
		{"a create with an empty title", docs, with(ok, "title", ""), "title", "required"},
		{"a create with a body of 64,001 characters", docs, with(ok, "body", long), "body", "max-length"},
		{"a create whose body counts UTF-16 units (an emoji is two)", docs, with(ok, "body", "😀"+long[2:]), "body", "max-length"},
		{"a create with a number for a title", docs, with(ok, "title", 7), "title", "type"},
		{"a create with a null body", docs, []byte(`{"originEventId":"` + d.origin + `","title":"t","body":null,"requestId":"r"}`), "body", "type"},
		{"a create with a null title", docs, []byte(`{"originEventId":"` + d.origin + `","title":null,"body":"b","requestId":"r"}`), "title", "type"},
		{"a create with a null request id", docs, []byte(`{"originEventId":"` + d.origin + `","title":"t","body":"b","requestId":null}`), "requestId", "type"},
		{"a create without a body", docs, with(ok, "body", nil), "body", "required"},
		{"an edit with a null body", one + "/versions", []byte(`{"baseVersionId":"` + d.versionID + `","title":"t","body":null,"requestId":"r"}`), "body", "type"},
		{"a proposal with a null runner", one + "/proposals", []byte(`{"selectionId":"` + selection + `","runnerId":null,"baseVersionId":"` + d.versionID + `","requestId":"r"}`), "runnerId", "type"},
		{"a decision with a null disposition", "/api/workbench/proposals/" + strings.Repeat("c", 64) + "/decisions", []byte(`{"disposition":null,"submissionId":"s"}`), "disposition", "type"},
		{"a create with an unknown member", docs, with(ok, "owner", "x"), "owner", "unknown-member"},
		{"a create naming its title twice", docs, []byte(`{"originEventId":"` + d.origin + `","title":"t","title":"u","body":"b","requestId":"r"}`), "title", "duplicate-member"},
		{"a create without a request id", docs, with(ok, "requestId", nil), "requestId", "required"},
		{"a create with a request id holding a space", docs, with(ok, "requestId", "a b"), "requestId", "format"},
		{"a body that is not an object", docs, []byte(`[1]`), "body", "format"},
		{"an edit with a malformed base", one + "/versions", with(edit, "baseVersionId", "v1"), "baseVersionId", "format"},
		{"an edit without a body", one + "/versions", with(edit, "body", nil), "body", "required"},
		{"a selection of an unknown event", one + "/selections", map[string]any{"selectedEventIds": []string{"cairn:feed:999999.0"}, "selectedVersionIds": []string{}, "requestId": "r"}, "selectedEventIds[0]", "must-exist"},
		{"a selection of a version of nothing", one + "/selections", map[string]any{"selectedEventIds": []string{}, "selectedVersionIds": []string{strings.Repeat("a", 64)}, "requestId": "r"}, "selectedVersionIds[0]", "must-exist"},
		{"a selection repeating an id", one + "/selections", map[string]any{"selectedEventIds": []string{d.origin, d.origin}, "selectedVersionIds": []string{}, "requestId": "r"}, "selectedEventIds[1]", "format"},
		{"a selection naming a malformed event id", one + "/selections", map[string]any{"selectedEventIds": []string{d.origin, "evt-1"}, "selectedVersionIds": []string{}, "requestId": "r"}, "selectedEventIds[1]", "format"},
		{"a selection naming a malformed version id", one + "/selections", map[string]any{"selectedEventIds": []string{}, "selectedVersionIds": []string{"v1"}, "requestId": "r"}, "selectedVersionIds[0]", "format"},
		{"a selection without selectedEventIds", one + "/selections", map[string]any{"selectedVersionIds": []string{}, "requestId": "r"}, "selectedEventIds", "required"},
		{"a selection without either", one + "/selections", map[string]any{"requestId": "r"}, "selectedEventIds", "required"},
		{"a selection of null events", one + "/selections", []byte(`{"selectedEventIds":null,"selectedVersionIds":null,"requestId":"r"}`), "selectedEventIds", "type"},
		{"a selection of null versions", one + "/selections", []byte(`{"selectedEventIds":[],"selectedVersionIds":null,"requestId":"r"}`), "selectedVersionIds", "type"},
		{"a selection of 65 events", one + "/selections", map[string]any{"selectedEventIds": make([]string, 65), "selectedVersionIds": []string{}, "requestId": "r"}, "selectedEventIds", "max-items"},
		{"a proposal from an unknown runner", one + "/proposals", with(prop, "runnerId", "gpt@1"), "runnerId", "must-exist"},
		{"a proposal on an unknown selection", one + "/proposals", with(prop, "selectionId", strings.Repeat("b", 64)), "selectionId", "must-exist"},
		{"a decision that is neither accept nor reject", "/api/workbench/proposals/" + strings.Repeat("c", 64) + "/decisions", map[string]any{"disposition": "maybe", "submissionId": "s"}, "disposition", "enum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.do("local", "POST", tc.path, tc.body)
			if a.status != http.StatusBadRequest || a.str("error") != "ValidationError" || a.str("field") != tc.field || a.str("rule") != tc.rule {
				t.Fatalf("%d %s, want 400 ValidationError on %s (%s)", a.status, a.body, tc.field, tc.rule)
			}
		})
	}
	// A body that does not parse says why and where; one that parses says it is not an
	// object, even when it is one nested too deep to parse.
	for _, tc := range []struct {
		name string
		body []byte
		says string
	}{
		{"a body cut short", []byte(`{"title":`), "is not JSON: unexpected end of JSON input"},
		{"a body nested past the parser's depth", []byte(`{"title":` + strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001) + `}`), "exceeded max depth (at byte"},
		{"an array", []byte(`[1]`), "body: must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.do("local", "POST", docs, tc.body)
			if a.status != http.StatusBadRequest || a.str("field") != "body" || !strings.Contains(a.str("message"), tc.says) {
				t.Fatalf("%d %s, want 400 on body saying %q", a.status, a.body, tc.says)
			}
		})
	}
	t.Run("a body above 98 KB is 413", func(t *testing.T) {
		a := e.do("local", "POST", docs, with(ok, "body", strings.Repeat("é", 51_000)))
		if a.status != http.StatusRequestEntityTooLarge || a.str("error") != "PayloadTooLarge" {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
	t.Run("a body of exactly 64,000 characters and a title of 200 are taken", func(t *testing.T) {
		a := e.do("local", "POST", docs, with(with(with(ok, "body", long[1:]), "title", strings.Repeat("t", 200)), "requestId", "r-max"))
		if a.status != http.StatusCreated {
			t.Fatalf("%d %s", a.status, a.body)
		}
	})
}

func TestRoutesAnswerMissingThingsAndWrongMethods(t *testing.T) {
	e := newEnv(t, nil)
	d, _ := aDocument(t, e)
	missing := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, method, path string
		status             int
		code               string
	}{
		{"a missing document", "GET", "/api/workbench/documents/" + missing, 404, "NotFound"},
		{"a malformed document id", "GET", "/api/workbench/documents/xyz", 404, "NotFound"},
		{"the versions of a missing document", "GET", "/api/workbench/documents/" + missing + "/versions", 404, "NotFound"},
		{"candidates of a missing document", "GET", "/api/workbench/candidates?documentId=" + missing, 404, "NotFound"},
		{"an edit of a missing document", "POST", "/api/workbench/documents/" + missing + "/versions", 404, "NotFound"},
		{"a decision on a missing proposal", "POST", "/api/workbench/proposals/" + missing + "/decisions", 404, "NotFound"},
		{"an unknown route", "GET", "/api/workbench/nothing", 404, "NotFound"},
		{"DELETE of a document", "DELETE", "/api/workbench/documents/" + d.docID, 405, "MethodNotAllowed"},
		{"GET of selections", "GET", "/api/workbench/documents/" + d.docID + "/selections", 405, "MethodNotAllowed"},
		{"an unknown candidates parameter", "GET", "/api/workbench/candidates?limit=5", 400, "ValidationError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == "POST" {
				body = map[string]any{"baseVersionId": d.versionID, "title": "t", "body": "b", "requestId": "r"}
				if strings.Contains(tc.path, "decisions") {
					body = map[string]any{"disposition": "accept", "submissionId": "s"}
				}
			}
			a := e.do("local", tc.method, tc.path, body)
			if a.status != tc.status || a.str("error") != tc.code {
				t.Fatalf("%d %s, want %d %s", a.status, a.body, tc.status, tc.code)
			}
		})
	}
}

func TestTheOwnerComesFromTheKey(t *testing.T) {
	e := newEnv(t, nil)
	origin := e.observe("alpha", "alpha", "main", "input/x.md", "x")
	d := e.create("alpha", origin, "Alpha's", "secret\n", "req-a")
	sel := e.do("alpha", "POST", "/api/workbench/documents/"+d.docID+"/selections", map[string]any{"selectedEventIds": []string{origin}, "selectedVersionIds": []string{}, "requestId": "s"})
	pr := e.do("alpha", "POST", "/api/workbench/documents/"+d.docID+"/proposals", map[string]any{"selectionId": sel.str("selectionId"),
		"runnerId": documents.FixtureRunnerID, "baseVersionId": d.versionID, "requestId": "p"})
	if pr.status != 200 {
		t.Fatalf("proposal: %d %s", pr.status, pr.body)
	}
	missing := strings.Repeat("0", 64)
	for _, tc := range []struct{ name, method, path, missingPath string }{
		{"a document", "GET", "/api/workbench/documents/" + d.docID, "/api/workbench/documents/" + missing},
		{"its versions", "GET", "/api/workbench/documents/" + d.docID + "/versions", "/api/workbench/documents/" + missing + "/versions"},
		{"an edit", "POST", "/api/workbench/documents/" + d.docID + "/versions", "/api/workbench/documents/" + missing + "/versions"},
		{"a decision", "POST", "/api/workbench/proposals/" + pr.str("proposalEventId") + "/decisions", "/api/workbench/proposals/" + missing + "/decisions"},
	} {
		t.Run("another tenant's "+tc.name+" answers as a missing one", func(t *testing.T) {
			body := map[string]any{"baseVersionId": d.versionID, "title": "t", "body": "b", "requestId": "r"}
			if strings.Contains(tc.path, "decisions") {
				body = map[string]any{"disposition": "accept", "submissionId": "s"}
			}
			if tc.method == "GET" {
				body = nil
			}
			theirs, none := e.do("beta", tc.method, tc.path, body), e.do("beta", tc.method, tc.missingPath, body)
			if theirs.status != 404 || theirs.status != none.status || theirs.str("message") != none.str("message") {
				t.Fatalf("another tenant: %d %s; missing: %d %s", theirs.status, theirs.body, none.status, none.body)
			}
		})
	}
	if ids := documentIDs(e, "beta"); len(ids) != 0 {
		t.Fatalf("beta lists %v", ids)
	}
	if ids := documentIDs(e, "local"); len(ids) != 0 {
		t.Fatalf("the configured owner lists %v", ids)
	}
	// Once the root holds documents, candidates come from the feed's end: still the key's
	// observations, never the documents' own records.
	if c := e.do("alpha", "GET", "/api/workbench/candidates", nil); c.status != 200 || !strings.Contains(string(c.body), origin) ||
		strings.Contains(string(c.body), "cairn:workbench:documents") {
		t.Fatalf("alpha's candidates: %d %s", c.status, c.body)
	}
	// The beta tenant's candidates never show alpha's observations.
	c := e.do("beta", "GET", "/api/workbench/candidates", nil)
	if c.status != 200 || strings.Contains(string(c.body), origin) {
		t.Fatalf("beta's candidates: %d %s", c.status, c.body)
	}
	for _, tc := range []struct {
		name, who, method string
		status            int
		code              string
	}{
		{"a write without the review scope is 403", "noreview", "POST", 403, "Forbidden"},
		{"a key bound to no tenant is 403", "unbound", "GET", 403, "Forbidden"},
		{"a request without a credential is 401", "nobody", "GET", 401, "Unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == "POST" {
				body = map[string]any{"originEventId": origin, "title": "t", "body": "b", "requestId": "r2"}
			}
			a := e.do(tc.who, tc.method, "/api/workbench/documents", body)
			if a.status != tc.status || a.str("error") != tc.code {
				t.Fatalf("%d %s", a.status, a.body)
			}
		})
	}
}

func TestANodeThatCannotCheckTheReviewCapabilityAnswers405(t *testing.T) {
	e := newEnv(t, func(o *documents.Options) { o.ReadOnly = true })
	a := e.do("local", "POST", "/api/workbench/documents", map[string]any{"originEventId": "cairn:feed:1.0", "title": "t", "body": "b", "requestId": "r"})
	if a.status != http.StatusMethodNotAllowed || a.str("error") != "MethodNotAllowed" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if r := e.do("local", "GET", "/api/workbench/documents", nil); r.status != 200 {
		t.Fatalf("reads still answer: %d %s", r.status, r.body)
	}
}

func TestOfTwoRacingEditsOnOneBaseExactlyOneWins(t *testing.T) {
	e := newEnv(t, nil)
	d, _ := aDocument(t, e)
	for round := range 3 {
		doc := e.document("local", d.docID)
		base := doc["document"].(map[string]any)["versionId"].(string)
		var wg sync.WaitGroup
		answers := make([]answer, 2)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/versions", map[string]any{"baseVersionId": base, "title": "T",
					"body": strings.Repeat("edit ", i+1) + string(rune('a'+round)), "requestId": "race-" + string(rune('a'+round)) + string(rune('0'+i))})
			}()
		}
		wg.Wait()
		won, stale := 0, 0
		for _, a := range answers {
			switch {
			case a.status == 200:
				won++
			case a.status == 409 && a.str("error") == "StaleBaseError":
				stale++
			default:
				t.Fatalf("round %d: %d %s", round, a.status, a.body)
			}
		}
		if won != 1 || stale != 1 {
			t.Fatalf("round %d: %d won, %d stale", round, won, stale)
		}
	}
	vs := e.do("local", "GET", "/api/workbench/documents/"+d.docID+"/versions", nil)
	if n := len(vs.json["versions"].([]any)); n != 4 {
		t.Fatalf("%d versions after three races, want 4 (the losers appended nothing)", n)
	}
}

func TestAStaleProposalCannotBeAcceptedButCanBeRejected(t *testing.T) {
	e := newEnv(t, nil)
	d, selection := aDocument(t, e)
	pr := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", map[string]any{"selectionId": selection,
		"runnerId": documents.FixtureRunnerID, "baseVersionId": d.versionID, "requestId": "p1"})
	ed := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/versions", map[string]any{"baseVersionId": d.versionID, "title": "T",
		"body": "moved on\n", "requestId": "e1"})
	if pr.status != 200 || ed.status != 200 {
		t.Fatalf("setup: %s %s", pr.body, ed.body)
	}
	if doc := e.document("local", d.docID); doc["proposals"].([]any)[0].(map[string]any)["state"] != "stale" {
		t.Fatalf("an undecided proposal on an old base: %v", doc["proposals"])
	}
	before := len(events(e.document("local", d.docID)))
	decisions := "/api/workbench/proposals/" + pr.str("proposalEventId") + "/decisions"
	acc := e.do("local", "POST", decisions, map[string]any{"disposition": "accept", "submissionId": "s1"})
	if acc.status != 409 || acc.str("error") != "StaleBaseError" || acc.str("headVersionId") != ed.str("versionId") {
		t.Fatalf("a stale accept: %d %s", acc.status, acc.body)
	}
	if after := len(events(e.document("local", d.docID))); after != before {
		t.Fatalf("a stale accept appended %d events", after-before)
	}
	rej := e.do("local", "POST", decisions, map[string]any{"disposition": "reject", "submissionId": "s2"})
	if rej.status != 200 || rej.json["resultVersionId"] != nil {
		t.Fatalf("a stale reject: %d %s", rej.status, rej.body)
	}
	doc := e.document("local", d.docID)
	if doc["document"].(map[string]any)["versionId"] != ed.str("versionId") || doc["proposals"].([]any)[0].(map[string]any)["state"] != "rejected" {
		t.Fatalf("after reject: %v", doc["document"])
	}
	if j := doc["judgments"].([]any); len(j) != 1 || j[0].(map[string]any)["kind"] != "reject" {
		t.Fatalf("judgments: %v", j)
	}
	if p := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", map[string]any{"selectionId": selection,
		"runnerId": documents.FixtureRunnerID, "baseVersionId": d.versionID, "requestId": "p2"}); p.status != 409 || p.str("error") != "StaleBaseError" {
		t.Fatalf("a proposal request on an old base: %d %s", p.status, p.body)
	}
}

func TestAFailingRunnerRecordsAFailedRunAndNoProposal(t *testing.T) {
	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) })
	runner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req documents.RunRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch r.URL.Path {
		case "/error":
			http.Error(w, "model overloaded: "+strings.Repeat("detail ", 1000), http.StatusInternalServerError)
		case "/stall":
			select {
			case <-r.Context().Done():
			case <-stall:
			}
		case "/garbage":
			_, _ = w.Write([]byte(`{"proposedText": 5}`))
		case "/nulls":
			_, _ = w.Write([]byte(`{"proposedText":null,"reason":"r","evidenceEventIds":null}`))
		case "/null-evidence":
			_, _ = w.Write([]byte(`{"proposedText":"x","reason":"r","evidenceEventIds":null}`))
		case "/null-id":
			_, _ = w.Write([]byte(`{"proposedText":"x","reason":"r","evidenceEventIds":[null]}`))
		case "/missing":
			_, _ = w.Write([]byte(`{"proposedText":"x","reason":"r"}`))
		case "/extra":
			_, _ = w.Write([]byte(`{"proposedText":"x","reason":"r","evidenceEventIds":[],"score":1}`))
		case "/surrogate":
			_, _ = w.Write([]byte(`{"proposedText":"x\ud800","reason":"r","evidenceEventIds":[]}`))
		case "/two":
			_, _ = w.Write([]byte(`{"proposedText":"x","reason":"r","evidenceEventIds":[]} {}`))
		case "/evidence":
			ids := make([]string, 17)
			for i := range ids {
				ids[i] = req.Snapshot.SelectedEvents[0].EventID
			}
			_ = json.NewEncoder(w).Encode(documents.RunResult{ProposedText: "x", Reason: "r", EvidenceEventIDs: ids})
		case "/foreign":
			_ = json.NewEncoder(w).Encode(documents.RunResult{ProposedText: "x", Reason: "r", EvidenceEventIDs: []string{"cairn:feed:1.0"}})
		case "/long":
			_ = json.NewEncoder(w).Encode(documents.RunResult{ProposedText: strings.Repeat("x", documents.MaxBodyChars+1), Reason: "r", EvidenceEventIDs: []string{}})
		case "/ok":
			_ = json.NewEncoder(w).Encode(documents.RunResult{ProposedText: req.BaseText + "more\n", Reason: "model: more",
				EvidenceEventIDs: []string{req.Snapshot.SelectedEvents[0].EventID}})
		}
	}))
	t.Cleanup(runner.Close)
	var runners []documents.Runner
	for _, p := range []string{"error", "stall", "garbage", "nulls", "null-evidence", "null-id", "missing", "extra", "surrogate", "two", "evidence", "foreign", "long", "ok"} {
		runners = append(runners, documents.HTTPRunner{RunnerID: "http-" + p, URL: runner.URL + "/" + p, Timeout: 300 * time.Millisecond})
	}
	e := newEnv(t, func(o *documents.Options) { o.Runners = runners })
	d, selection := aDocument(t, e)
	for _, tc := range []struct{ runner, class string }{
		{"http-error", "http-status"},
		{"http-stall", "timeout"},
		{"http-garbage", "invalid-response"},
		{"http-nulls", "invalid-response"},
		{"http-null-evidence", "invalid-response"},
		{"http-null-id", "invalid-response"},
		{"http-missing", "invalid-response"},
		{"http-extra", "invalid-response"},
		{"http-surrogate", "invalid-response"},
		{"http-two", "invalid-response"},
		{"http-evidence", "invalid-result"},
		{"http-foreign", "invalid-result"},
		{"http-long", "invalid-result"},
	} {
		t.Run(tc.runner+" fails as "+tc.class, func(t *testing.T) {
			req := map[string]any{"selectionId": selection, "runnerId": tc.runner, "baseVersionId": d.versionID, "requestId": "req-" + tc.runner}
			a := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", req)
			if a.status != http.StatusBadGateway || a.str("error") != "RunnerError" || !strings.HasPrefix(a.str("errorText"), tc.class+": ") ||
				documents.Chars(a.str("errorText")) > documents.MaxErrorTextChars || a.str("runId") != documents.RunID(d.docID, "req-"+tc.runner) {
				t.Fatalf("%d %s", a.status, a.body)
			}
			if again := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", req); string(again.body) != string(a.body) {
				t.Fatalf("a replayed failed request: %d %s", again.status, again.body)
			}
		})
	}
	doc := e.document("local", d.docID)
	if n := len(doc["proposals"].([]any)); n != 0 {
		t.Fatalf("%d proposals after failures", n)
	}
	for _, r := range doc["runs"].([]any) {
		if run := r.(map[string]any); run["status"] != "failed" || len(run["outputEventIds"].([]any)) != 0 {
			t.Fatalf("run %v", run)
		}
	}
	ok := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", map[string]any{"selectionId": selection, "runnerId": "http-ok",
		"baseVersionId": d.versionID, "requestId": "req-ok"})
	if ok.status != 200 {
		t.Fatalf("a runner that answers: %d %s", ok.status, ok.body)
	}
	p := e.document("local", d.docID)["proposals"].([]any)[0].(map[string]any)["proposal"].(map[string]any)
	if p["proposedText"] != "body\nmore\n" || p["reason"] != "model: more" || p["proposer"].(map[string]any)["runnerRevision"] != "http-1" {
		t.Fatalf("the HTTP runner's proposal: %v", p)
	}
}

// A context snapshot is a function of its base and the set of ids: the same ids in another
// order are the same snapshot, with its entries in id order.
func TestASnapshotIsTheSetOfItsIds(t *testing.T) {
	e := newEnv(t, nil)
	a := e.observe("local", "default", "notes", "input/a.md", "a")
	b := e.observe("local", "default", "notes", "input/b.md", "b")
	d := e.create("local", a, "T", "x\n", "c")
	first := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections", map[string]any{"selectedEventIds": []string{b, a}, "selectedVersionIds": []string{}, "requestId": "s1"})
	second := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections", map[string]any{"selectedEventIds": []string{a, b}, "selectedVersionIds": []string{}, "requestId": "s2"})
	if first.status != 200 || second.status != 200 || first.str("snapshotVersionId") != second.str("snapshotVersionId") || first.str("selectionId") == second.str("selectionId") {
		t.Fatalf("%s\n%s", first.body, second.body)
	}
	// A replay naming the same ids in another order is the same selection: the first answer.
	if again := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections", map[string]any{"selectedEventIds": []string{a, b},
		"selectedVersionIds": []string{}, "requestId": "s1"}); again.status != 200 || string(again.body) != string(first.body) {
		t.Fatalf("a replay in another order: %d %s, first %s", again.status, again.body, first.body)
	}
	// Racing first requests of one requestId, in both orders: one selection, one answer.
	var wg sync.WaitGroup
	racing := make([]answer, 6)
	for i := range racing {
		ids := []string{a, b}
		if i%2 == 1 {
			ids = []string{b, a}
		}
		wg.Go(func() {
			racing[i] = e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections", map[string]any{"selectedEventIds": ids,
				"selectedVersionIds": []string{}, "requestId": "s3"})
		})
	}
	wg.Wait()
	for _, r := range racing {
		if r.status != 200 || string(r.body) != string(racing[0].body) {
			t.Fatalf("racing replays: %d %s, first %s", r.status, r.body, racing[0].body)
		}
	}
	if other := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections", map[string]any{"selectedEventIds": []string{a},
		"selectedVersionIds": []string{}, "requestId": "s1"}); other.status != 409 || other.str("error") != "ConflictError" {
		t.Fatalf("the requestId with other ids: %d %s", other.status, other.body)
	}
	pr := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", map[string]any{"selectionId": first.str("selectionId"),
		"runnerId": documents.FixtureRunnerID, "baseVersionId": d.versionID, "requestId": "p"})
	text := e.document("local", d.docID)["proposals"].([]any)[0].(map[string]any)["proposal"].(map[string]any)["proposedText"].(string)
	lo, hi := min(a, b), max(a, b)
	if pr.status != 200 || strings.Index(text, lo) > strings.Index(text, hi) {
		t.Fatalf("the sources are not in id order: %s", text)
	}
}

// An observation id is taken only as ObservationID writes it: with a leading zero it
// names the same feed event, and taken it would give one event two ids (a document whose
// origin and events' rootEventId differ from its frozen origin's eventId, a selection
// holding one event twice past the repeat check).
func TestAnObservationIdIsTakenOnlyInItsCanonicalForm(t *testing.T) {
	e := newEnv(t, nil)
	d, _ := aDocument(t, e)
	padded := strings.Replace(d.origin, "cairn:feed:", "cairn:feed:0", 1)
	paddedIndex := strings.Replace(d.origin, ".", ".0", 1)
	for _, id := range []string{padded, paddedIndex} {
		c := e.do("local", "POST", "/api/workbench/documents", map[string]any{"originEventId": id, "title": "t", "body": "b", "requestId": "r-" + id})
		if c.status != http.StatusBadRequest || c.str("field") != "originEventId" || c.str("rule") != "format" {
			t.Fatalf("a create from %s: %d %s, want 400 format on originEventId", id, c.status, c.body)
		}
		s := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections",
			map[string]any{"selectedEventIds": []string{d.origin, id}, "selectedVersionIds": []string{}, "requestId": "s-" + id})
		if s.status != http.StatusBadRequest || s.str("field") != "selectedEventIds[1]" || s.str("rule") != "format" {
			t.Fatalf("a selection of %s and %s: %d %s, want 400 format on selectedEventIds[1]", d.origin, id, s.status, s.body)
		}
	}
}

// An id that is not of the form ids take names nothing: every route answers it exactly
// as a well-formed id of nothing.
func TestAMalformedIdAnswersAsAMissingOne(t *testing.T) {
	e := newEnv(t, nil)
	d, _ := aDocument(t, e)
	missing := strings.Repeat("0", 64)
	edit := map[string]any{"baseVersionId": d.versionID, "title": "t", "body": "b", "requestId": "r"}
	for _, tc := range []struct {
		name, method, path string
		body               any
	}{
		{"a document", "GET", "/api/workbench/documents/%s", nil},
		{"a document's versions", "GET", "/api/workbench/documents/%s/versions", nil},
		{"an edit", "POST", "/api/workbench/documents/%s/versions", edit},
		{"a selection", "POST", "/api/workbench/documents/%s/selections", map[string]any{"selectedEventIds": []string{}, "selectedVersionIds": []string{}, "requestId": "r"}},
		{"a proposal request", "POST", "/api/workbench/documents/%s/proposals", map[string]any{"selectionId": missing, "runnerId": documents.FixtureRunnerID,
			"baseVersionId": d.versionID, "requestId": "r"}},
		{"a decision", "POST", "/api/workbench/proposals/%s/decisions", map[string]any{"disposition": "accept", "submissionId": "s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := e.do("local", tc.method, strings.Replace(tc.path, "%s", "abc", 1), tc.body)
			none := e.do("local", tc.method, strings.Replace(tc.path, "%s", missing, 1), tc.body)
			if bad.status != 404 || bad.status != none.status || bad.str("error") != none.str("error") || bad.str("message") != none.str("message") {
				t.Fatalf("malformed: %d %s; missing: %d %s", bad.status, bad.body, none.status, none.body)
			}
		})
	}
}

// Every route refuses a query parameter it does not take, as a body's unknown member.
func TestEveryRouteRefusesAnUnknownQueryParameter(t *testing.T) {
	e := newEnv(t, nil)
	d, selection := aDocument(t, e)
	for _, tc := range []struct {
		name, method, path string
		body               any
		field, rule        string
	}{
		{"the documents", "GET", "/api/workbench/documents?limit=1&bogus=2", nil, "bogus", "unknown-member"},
		{"a document", "GET", "/api/workbench/documents/" + d.docID + "?bogus=1", nil, "bogus", "unknown-member"},
		{"a document's versions", "GET", "/api/workbench/documents/" + d.docID + "/versions?bogus", nil, "bogus", "unknown-member"},
		{"the candidates", "GET", "/api/workbench/candidates?foo=1", nil, "foo", "unknown-member"},
		{"the candidates with documentId twice", "GET", "/api/workbench/candidates?documentId=" + d.docID + "&documentId=" + d.docID, nil, "documentId", "format"},
		{"a query that does not parse", "GET", "/api/workbench/documents?a=%zz", nil, "query", "format"},
		{"a create", "POST", "/api/workbench/documents?dryRun=1", map[string]any{"originEventId": d.origin, "title": "t", "body": "b", "requestId": "q1"}, "dryRun", "unknown-member"},
		{"an edit", "POST", "/api/workbench/documents/" + d.docID + "/versions?force=1", map[string]any{"baseVersionId": d.versionID, "title": "t",
			"body": "b", "requestId": "q2"}, "force", "unknown-member"},
		{"a selection", "POST", "/api/workbench/documents/" + d.docID + "/selections?x=1", map[string]any{"selectedEventIds": []string{d.origin},
			"selectedVersionIds": []string{}, "requestId": "q3"}, "x", "unknown-member"},
		{"a proposal request", "POST", "/api/workbench/documents/" + d.docID + "/proposals?x=1", map[string]any{"selectionId": selection,
			"runnerId": documents.FixtureRunnerID, "baseVersionId": d.versionID, "requestId": "q4"}, "x", "unknown-member"},
		{"a decision", "POST", "/api/workbench/proposals/" + strings.Repeat("0", 64) + "/decisions?x=1", map[string]any{"disposition": "accept",
			"submissionId": "q5"}, "x", "unknown-member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.do("local", tc.method, tc.path, tc.body)
			if a.status != http.StatusBadRequest || a.str("error") != "ValidationError" || a.str("field") != tc.field || a.str("rule") != tc.rule {
				t.Fatalf("%d %s, want 400 ValidationError on %s (%s)", a.status, a.body, tc.field, tc.rule)
			}
		})
	}
	if n := len(documentIDs(e, "local")); n != 1 {
		t.Fatalf("%d documents: a refused create wrote one", n)
	}
	if c := e.do("local", "GET", "/api/workbench/candidates?documentId="+d.docID, nil); c.status != 200 {
		t.Fatalf("the parameter candidates takes: %d %s", c.status, c.body)
	}
}

// A selection names its events ([] is none; selectedVersionIds may be left out: none); a
// selection of nothing is allowed (the design asks only that every selected id exist): its
// snapshot holds the base alone, and a runner proposes from the head.
func TestAnEmptySelectionIsTheHeadAlone(t *testing.T) {
	e := newEnv(t, nil)
	origin := e.observe("local", "default", "notes", "input/a.md", "a")
	d := e.create("local", origin, "T", "body\n", "c")
	sel := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections",
		map[string]any{"selectedEventIds": []string{}, "selectedVersionIds": []string{}, "requestId": "s"})
	if sel.status != 200 || sel.str("snapshotVersionId") != documents.SnapshotVersionID(d.docID, d.versionID, nil, nil) {
		t.Fatalf("an empty selection: %d %s", sel.status, sel.body)
	}
	if again := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections",
		map[string]any{"selectedEventIds": []string{}, "requestId": "s"}); again.status != 200 || string(again.body) != string(sel.body) {
		t.Fatalf("the same selection without selectedVersionIds: %d %s", again.status, again.body)
	}
	pr := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", map[string]any{"selectionId": sel.str("selectionId"),
		"runnerId": documents.FixtureRunnerID, "baseVersionId": d.versionID, "requestId": "p"})
	text, _ := e.document("local", d.docID)["proposals"].([]any)[0].(map[string]any)["proposal"].(map[string]any)["proposedText"].(string)
	if pr.status != 200 || !strings.HasSuffix(text, "Summary: 0 events, 0 versions selected.\n") {
		t.Fatalf("a proposal from an empty selection: %d %s\n%s", pr.status, pr.body, text)
	}
}

// Text that is not Unicode is refused naming its member, never stored as U+FFFD: raw
// bytes that are not UTF-8, and \u escapes of a lone UTF-16 surrogate.
func TestTextThatIsNotUnicodeIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	d, _ := aDocument(t, e)
	docs := "/api/workbench/documents"
	create := func(title, body, requestID string) []byte {
		return []byte(`{"originEventId":"` + d.origin + `","title":"` + title + `","body":"` + body + `","requestId":"` + requestID + `"}`)
	}
	for _, tc := range []struct {
		name, path string
		body       []byte
		field      string
	}{
		{"a title escaping a lone high surrogate", docs, create(`a\ud800b`, "b", "u1"), "title"},
		{"a title escaping a lone low surrogate", docs, create(`a\udc00b`, "b", "u2"), "title"},
		{"a title escaping a high surrogate then a letter", docs, create(`\ud800\u0041`, "b", "u3"), "title"},
		{"a title ending in a high surrogate", docs, create(`x\ud83d`, "b", "u4"), "title"},
		{"a body of bytes that are not UTF-8", docs, create("t", "a\xffb", "u5"), "body"},
		{"a body holding a truncated UTF-8 sequence", docs, create("t", "a\xe2\x82", "u6"), "body"},
		{"a member name that is not UTF-8", docs, []byte(`{"originEventId":"` + d.origin + `","title":"t","body":"b","requestId":"u7","` + "\xff" + `":1}`), "body"},
		{"a selection whose id is not UTF-8", "/api/workbench/documents/" + d.docID + "/selections",
			[]byte(`{"selectedEventIds":["` + "\xff" + `"],"selectedVersionIds":[],"requestId":"u8"}`), "selectedEventIds"},
		{"an edit's title escaping a lone surrogate", "/api/workbench/documents/" + d.docID + "/versions",
			[]byte(`{"baseVersionId":"` + d.versionID + `","title":"\udfff","body":"b","requestId":"u9"}`), "title"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.do("local", "POST", tc.path, tc.body)
			if a.status != http.StatusBadRequest || a.str("error") != "ValidationError" || a.str("field") != tc.field || a.str("rule") != "utf-8" {
				t.Fatalf("%d %s, want 400 ValidationError on %s (utf-8)", a.status, a.body, tc.field)
			}
		})
	}
	for i, tc := range []struct{ name, title, body, want string }{
		{"an escaped backslash before u is not an escape", `a\\ud800b`, `\\\\udc00`, `\\udc00`},
		{"a surrogate pair is one character", `\ud83d\ude00`, `x\uD83D\uDE00y`, "x😀y"},
		{"raw UTF-8 is taken as sent", "é", "ü€😀", "ü€😀"},
	} {
		t.Run(tc.name+" is taken", func(t *testing.T) {
			a := e.do("local", "POST", docs, create(tc.title, tc.body, "ok-"+strconv.Itoa(i)))
			if a.status != http.StatusCreated {
				t.Fatalf("%d %s", a.status, a.body)
			}
			if got := e.document("local", a.str("documentId"))["body"]; got != tc.want {
				t.Fatalf("body %q, want %q", got, tc.want)
			}
		})
	}
	if n := len(documentIDs(e, "local")); n != 4 {
		t.Fatalf("%d documents, want the first and the three taken", n)
	}
}

// Concurrent replays of one proposal request on one node call the runner once and all
// answer the one proposal.
func TestConcurrentReplaysOfAProposalRequestCallTheRunnerOnce(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	runner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req documents.RunRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_ = json.NewEncoder(w).Encode(documents.RunResult{ProposedText: req.BaseText + "more\n", Reason: "r", EvidenceEventIDs: []string{}})
	}))
	t.Cleanup(runner.Close)
	e := newEnv(t, func(o *documents.Options) {
		o.Runners = []documents.Runner{documents.HTTPRunner{RunnerID: "http-slow", URL: runner.URL, Timeout: time.Minute}}
	})
	d, selection := aDocument(t, e)
	const n = 5
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			answers[i] = e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", map[string]any{"selectionId": selection,
				"runnerId": "http-slow", "baseVersionId": d.versionID, "requestId": "p"})
		})
	}
	// Hold the runner until every request waits on the one run, or each has called it.
	retry.SucceedsSoon(t, "the requests reach the runner", func() error {
		if c := calls.Load(); c == 0 || c < n && documents.ProposalRequests(e.h) < n {
			return fmt.Errorf("%d runner calls, %d requests in the run", c, documents.ProposalRequests(e.h))
		}
		return nil
	})
	close(release)
	wg.Wait()
	if c := calls.Load(); c != 1 {
		t.Fatalf("%d concurrent replays called the runner %d times, want once", n, c)
	}
	for _, a := range answers {
		if a.status != 200 || string(a.body) != string(answers[0].body) {
			t.Fatalf("%d %s, first %s", a.status, a.body, answers[0].body)
		}
	}
	if p := e.document("local", d.docID)["proposals"].([]any); len(p) != 1 {
		t.Fatalf("%d proposals", len(p))
	}
}

// GET /documents pages through every document in documentId order: limit per page, each
// page's nextCursor where the next starts, no document twice or missed; a bad limit or
// cursor is a ValidationError naming it.
func TestDocumentsArePagedByCursor(t *testing.T) {
	e := newEnv(t, nil)
	origin := e.observe("local", "default", "notes", "input/a.md", "a")
	var want []string
	for i := 0; i < 5; i++ {
		want = append(want, e.create("local", origin, "T", "body\n", fmt.Sprintf("req-%d", i)).docID)
	}
	slices.Sort(want)
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatalf("more pages than documents: %v", got)
		}
		path := "/api/workbench/documents?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		a := e.do("local", "GET", path, nil)
		list, _ := a.json["documents"].([]any)
		if a.status != 200 || len(list) > 2 {
			t.Fatalf("page %d: %d %s", pages, a.status, a.body)
		}
		for _, d := range list {
			got = append(got, d.(map[string]any)["documentId"].(string))
		}
		more, _ := a.json["truncated"].(bool)
		if !more {
			if a.json["nextCursor"] != nil {
				t.Fatalf("the last page has a nextCursor: %s", a.body)
			}
			break
		}
		if cursor = a.str("nextCursor"); cursor != got[len(got)-1] {
			t.Fatalf("nextCursor %q is not the page's last document %q", cursor, got[len(got)-1])
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged %v, want every document once in id order %v", got, want)
	}
	if all := e.do("local", "GET", "/api/workbench/documents", nil); len(all.json["documents"].([]any)) != len(want) || all.json["truncated"] != false {
		t.Fatalf("one page without a limit: %s", all.body)
	}
	for _, q := range []struct{ query, field string }{{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=x", "limit"}, {"cursor=abc", "cursor"}} {
		a := e.do("local", "GET", "/api/workbench/documents?"+q.query, nil)
		if a.status != 400 || a.json["error"] != "ValidationError" || a.json["field"] != q.field {
			t.Errorf("?%s: %d %s", q.query, a.status, a.body)
		}
	}
}
