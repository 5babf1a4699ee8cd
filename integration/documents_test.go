package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/gowebpki/jcs"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/freeport"
	"github.com/cairnstore/cairn/internal/retry"
)

// Working documents (docs/documents.md) end to end on real `cairn serve` processes: the
// design's whole workflow over HTTP (create from an observation, edit, select context,
// request proposals, decide), on an embedded node and on a three-node cluster whose
// shard leader is killed with SIGKILL between the proposals and their decisions. Every id
// is recomputed here from the design's rules (docs/documents.md#identities), never taken
// from api/documents; every event is compared with the one the design's tables say the
// step appends; every request is replayed and must answer its first answer.

const (
	docFixtureRunner = "fixture-deterministic@1"
	docHTTPRunner    = "http@1" // the runner --documents-runner-url registers
	// docRunnerTimeout is the nodes' --documents-runner-timeout: how long the stalling
	// runner is waited for.
	docRunnerTimeout = "2s"
	// docRequestBound bounds one request, tried again through the next live node while a
	// node is down or the cluster elects a leader (503). Generous, for a loaded machine.
	docRequestBound = 2 * time.Minute
	// docSource is every event's source (the design's Kind).
	docSource = "workbench:documents"
	// docEditedBody is the body of the walk's document after the operator's edit.
	docEditedBody = "# Meeting\n\nShip on Friday, after the review.\n"
)

// The design's event types.
const (
	evCreated   = "stream.thought.workbench.document.created"
	evVersion   = "stream.thought.workbench.document.version"
	evSelected  = "stream.thought.workbench.context.selected"
	evRequested = "stream.thought.workbench.proposal.requested"
	evProposed  = "stream.thought.workbench.proposal.proposed"
	evDecision  = "stream.thought.workbench.proposal.decision"
)

// The design's identities, recomputed (docs/documents.md#identities).

// docStableKey is stableKey(parts…): the hex SHA-256 of the RFC 8785 form of the JSON
// array of the parts.
func docStableKey(parts ...string) string {
	b, err := json.Marshal(parts)
	if err != nil {
		panic(err)
	}
	return docSHA(string(docJCS(b)))
}

func docJCS(b []byte) []byte {
	c, err := jcs.Transform(b)
	if err != nil {
		panic(err)
	}
	return c
}

// docSHA is the hex SHA-256 of s's UTF-8 bytes.
func docSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// docContent is a version's content: frontmatter holding the title as an RFC 8785 JSON
// string, then the body.
func docContent(title, body string) string {
	t, _ := json.Marshal(title)
	return "---\ntitle: " + string(docJCS(t)) + "\n---\n" + body
}

func docVersionID(doc, content string) string {
	return docStableKey("version", docSource, doc, docSHA(content))
}

func docEventID(typ string, key ...string) string {
	return docStableKey(append([]string{typ}, key...)...)
}

// docSnapshotID is stableKey("workbench-context-snapshot", documentId,
// sha256(JCS({baseVersionId, ids}))), ids the selected event and version ids sorted.
func docSnapshotID(doc, base string, ids ...string) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	b, _ := json.Marshal(map[string]any{"baseVersionId": base, "ids": ids})
	return docStableKey("workbench-context-snapshot", doc, docSHA(string(docJCS(b))))
}

// docChars counts as the design does: UTF-16 code units.
func docChars(s string) int { return len(utf16.Encode([]rune(s))) }

// docRunnerStub is the far end of the HTTP runner: it answers in the mode the test set,
// records every call and checks each request against the design's request shape.
type docRunnerStub struct {
	srv  *httptest.Server
	stop chan struct{} // closed when the test ends: a stalled call returns

	mu       sync.Mutex
	mode     string // error, stall, too-much-evidence, ok
	calls    int
	last     docRunRequest
	problems []string
}

// docRunRequest is the design's runner request.
type docRunRequest struct {
	DocumentID    string `json:"documentId"`
	BaseVersionID string `json:"baseVersionId"`
	BaseSha256    string `json:"baseSha256"`
	Title         string `json:"title"`
	BaseText      string `json:"baseText"`
	Snapshot      struct {
		DocumentID       string           `json:"documentId"`
		BaseVersionID    string           `json:"baseVersionId"`
		SelectedEvents   []map[string]any `json:"selectedEvents"`
		SelectedVersions []map[string]any `json:"selectedVersions"`
	} `json:"snapshot"`
	MaxProposedChars int `json:"maxProposedChars"`
}

func startDocRunnerStub(t *testing.T) *docRunnerStub {
	s := &docRunnerStub{stop: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { close(s.stop) }) // runs first: a stalled call returns before Close waits for it
	return s
}

func (s *docRunnerStub) set(mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = mode
}

func (s *docRunnerStub) state() (calls int, last docRunRequest, problems []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.last, slices.Clone(s.problems)
}

func (s *docRunnerStub) serve(w http.ResponseWriter, r *http.Request) {
	var req docRunRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	s.mu.Lock()
	s.calls++
	mode := s.mode
	if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		s.problems = append(s.problems, fmt.Sprintf("%s %s (%s): %v", r.Method, r.URL, r.Header.Get("Content-Type"), err))
	} else {
		s.last = req
	}
	s.mu.Unlock()
	switch mode {
	case "error":
		http.Error(w, "the model is overloaded", http.StatusInternalServerError)
	case "stall":
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
	case "too-much-evidence":
		ids := make([]string, 17)
		for i := range ids {
			ids[i] = fmt.Sprintf("cairn:feed:1.%d", i)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"proposedText": req.BaseText, "reason": "stub", "evidenceEventIds": ids})
	case "ok":
		var evidence []string
		if len(req.Snapshot.SelectedEvents) > 0 {
			evidence = append(evidence, fmt.Sprint(req.Snapshot.SelectedEvents[0]["eventId"]))
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"proposedText": req.BaseText + "\nDecided: ship on Friday.\n",
			"reason": "stub: records the decision", "evidenceEventIds": evidence})
	}
}

// docAnswer is one answer of the surface.
type docAnswer struct {
	status int
	body   []byte
	json   map[string]any
}

func (a docAnswer) str(k string) string { s, _ := a.json[k].(string); return s }

func (a docAnswer) String() string { return fmt.Sprintf("%d %.600s", a.status, a.body) }

// docWorld is where a walk runs: the nodes, the credential (the owner comes from it),
// the owner, and the HTTP runner's far end.
type docWorld struct {
	t                 *testing.T
	urls              func() []string // the live nodes' client URLs
	key               string          // "" on the keyless node
	tenant, workspace string
	runner            *docRunnerStub
}

// do sends method route body through live node via (modulo their number) with the
// world's key, and again with the same body through the next live node while there is
// no answer or the answer is 503 (a node down, a leader being elected), for at most
// docRequestBound. A route not starting with "/" is under /api/workbench/.
func (w *docWorld) do(via int, method, route string, body any) docAnswer {
	w.t.Helper()
	return w.doAs(w.key, via, method, route, body)
}

func (w *docWorld) doAs(key string, via int, method, route string, body any) docAnswer {
	w.t.Helper()
	if !strings.HasPrefix(route, "/") {
		route = "/api/workbench/" + route
	}
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	default:
		raw, _ = json.Marshal(b)
	}
	hc := &http.Client{Timeout: time.Minute}
	var a docAnswer
	_, err := retry.Until(docRequestBound, func() error {
		urls := w.urls()
		if len(urls) == 0 {
			return errors.New("no node runs")
		}
		base := urls[via%len(urls)]
		via++
		req, err := http.NewRequest(method, base+route, bytes.NewReader(raw))
		if err != nil {
			return fmt.Errorf("%w: %v", retry.ErrStop, err)
		}
		if raw != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		r, err := send(hc, req)
		if err != nil {
			return err
		}
		a = docAnswer{status: r.status, body: r.body}
		_ = json.Unmarshal(r.body, &a.json)
		if a.status == http.StatusServiceUnavailable {
			return fmt.Errorf("%s %s: %s", method, route, a)
		}
		return nil
	})
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, route, err)
	}
	return a
}

// check fails the test unless a has status (and, for an error, code).
func (w *docWorld) check(what string, a docAnswer, status int, code string) {
	w.t.Helper()
	if a.status != status || code != "" && a.str("error") != code {
		w.t.Fatalf("%s: %s, want %d %s", what, a, status, code)
	}
}

// docSent is a request and its first answer.
type docSent struct {
	what, method, route string
	body                any
	first               docAnswer
}

// replay sends a request again through another node and wants its first answer, byte for
// byte; the walk keeps it to replay again at its end (replayAll).
func (k *docWalk) replay(what string, first docAnswer, via int, method, route string, body any) {
	k.t.Helper()
	r := docSent{what, method, route, body, first}
	k.sent = append(k.sent, r)
	k.docWorld.replayOne(r, via+1)
}

func (w *docWorld) replayOne(r docSent, via int) {
	w.t.Helper()
	if again := w.do(via, r.method, r.route, r.body); again.status != r.first.status || !bytes.Equal(again.body, r.first.body) {
		w.t.Fatalf("%s replayed: %s, first answer %s", r.what, again, r.first)
	}
}

// replayAll replays through w every request the walk replayed: each still answers its
// first answer, whatever happened since (later edits and decisions, a node's kill).
func (k *docWalk) replayAll(w *docWorld) {
	k.t.Helper()
	for i, r := range k.sent {
		w.replayOne(r, i)
	}
}

// put writes an observation: a file of the owner's workbench.
func (w *docWorld) put(path, body string) {
	w.t.Helper()
	a := w.do(0, http.MethodPut, "/v1/agents/"+w.tenant+"/workbenches/"+w.workspace+"/files/"+path, []byte(body))
	if a.status/100 != 2 {
		w.t.Fatalf("put %s: %s", path, a)
	}
}

// observations returns the candidates GET /candidates lists for paths (every one of them
// once the feed shows it), after checking every candidate's form.
func (w *docWorld) observations(paths ...string) map[string]map[string]any {
	w.t.Helper()
	out := map[string]map[string]any{}
	retry.Within(w.t, docRequestBound, "the observations are candidates", func() error {
		a := w.do(1, http.MethodGet, "candidates", nil)
		if a.status != 200 {
			return fmt.Errorf("%w: candidates: %s", retry.ErrStop, a)
		}
		clear(out)
		for _, x := range a.json["candidates"].([]any) {
			c := x.(map[string]any)
			if err := docCheckObservation(c); err != nil {
				return fmt.Errorf("%w: %v", retry.ErrStop, err)
			}
			for _, p := range paths {
				if docExcerptNames(c["excerpt"].(string), p) && out[p] == nil {
					out[p] = c
				}
			}
		}
		if len(out) != len(paths) {
			return fmt.Errorf("%d of %d observations listed", len(out), len(paths))
		}
		return nil
	})
	return out
}

// docExcerptNames reports whether an excerpt is of a write of path: its "path: " line is
// path, or a prefix of it the excerpt's bound cut.
func docExcerptNames(excerpt, path string) bool {
	_, rest, ok := strings.Cut(excerpt, "\npath: ")
	if !ok {
		return false
	}
	line, _, more := strings.Cut(rest, "\n")
	return line == path || !more && len(line) >= 100 && strings.HasPrefix(path, line)
}

var (
	docObservationID = regexp.MustCompile(`^cairn:feed:[0-9]+\.[0-9]+$`)
	docHex64         = regexp.MustCompile(`^[0-9a-f]{64}$`)
	docTime          = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
)

// docCheckObservation checks a candidate observation: the design's fields, an excerpt of
// at most 2,000 characters, never one of the documents' own records.
func docCheckObservation(c map[string]any) error {
	excerpt, _ := c["excerpt"].(string)
	switch {
	case c["kind"] != "observation" || !docObservationID.MatchString(fmt.Sprint(c["eventId"])):
		return fmt.Errorf("candidate kind and id: %v", c)
	case !strings.HasPrefix(fmt.Sprint(c["type"]), "cairn.feed.") || !docHex64.MatchString(fmt.Sprint(c["payloadHash"])) ||
		!docTime.MatchString(fmt.Sprint(c["occurredAt"])):
		return fmt.Errorf("candidate type, payloadHash, occurredAt: %v", c)
	case c["source"] == "cairn:workbench:documents":
		return fmt.Errorf("a record of the documents themselves is a candidate: %v", c)
	case excerpt == "" || docChars(excerpt) > 2000:
		return fmt.Errorf("excerpt of %d characters: %v", docChars(excerpt), c)
	}
	return nil
}

// docEvent is an event the walk expects: its type, parent and payload; the envelope is
// the same for all.
type docEvent struct {
	typ, parent string
	payload     map[string]any
}

// docWalk is the state of one walk through the design's workflow on one document.
type docWalk struct {
	*docWorld
	origin, agenda map[string]any // the observations: the origin and another one
	doc            string
	title          string            // the head's title after the edit
	versions       []string          // v1 (created), v2 (edit), v3 (accepted)
	contents       map[string]string // version id → content
	selection      string
	snapshot       string
	proposals      map[string]string   // requestId → proposalEventId (fixture and http)
	expect         map[string]docEvent // the events the walk appended, by id
	sent           []docSent           // the requests replayed
}

// walk walks the design's workflow in w on a new document and returns its state; between,
// when not nil, runs after the proposals are requested and before their decisions (the
// cluster kills its shard leader there).
func (w *docWorld) walk(between func()) *docWalk {
	w.t.Helper()
	k := &docWalk{docWorld: w, contents: map[string]string{}, proposals: map[string]string{}, expect: map[string]docEvent{}}
	w.put("input/meeting.md", "Notes of the meeting: ship on Friday.\n")
	w.put("input/agenda.md", "1. the release\n")
	obs := w.observations("input/meeting.md", "input/agenda.md")
	k.origin, k.agenda = obs["input/meeting.md"], obs["input/agenda.md"]
	k.create()
	k.edit()
	k.candidatesOfTheDocument()
	k.selectContext()
	k.runnerFailures()
	k.httpProposal()
	k.fixtureProposal()
	if between != nil {
		between()
	}
	k.accept()
	k.staleAcceptAndReject()
	k.checkEvents()
	k.checkRunsAndJudgments()
	k.replayAll(w)
	k.limits()
	return k
}

func (k *docWalk) originID() string { return k.origin["eventId"].(string) }
func (k *docWalk) agendaID() string { return k.agenda["eventId"].(string) }
func (k *docWalk) createdID() string {
	return docEventID(evCreated, k.doc)
}

// version records version v (its content) and the version event it appends.
func (k *docWalk) version(content, base, reason, requestID, parent string, extra map[string]any) string {
	v := docVersionID(k.doc, content)
	k.versions = append(k.versions, v)
	k.contents[v] = content
	p := map[string]any{"documentId": k.doc, "versionId": v, "baseVersionId": nil, "sha256": docSHA(content),
		"sizeBytes": len(content), "reason": reason, "requestId": requestID}
	if base != "" {
		p["baseVersionId"] = base
	}
	for n, x := range extra {
		p[n] = x
	}
	k.expect[docEventID(evVersion, k.doc, reason, requestID)] = docEvent{evVersion, parent, p}
	return v
}

func (k *docWalk) create() {
	t := k.t
	title, body := "Meeting <notes>", "# Meeting\n\nShip on Friday.\n"
	req := map[string]any{"originEventId": k.originID(), "title": title, "body": body, "requestId": "create-1"}
	a := k.do(0, http.MethodPost, "documents", req)
	k.check("create", a, http.StatusCreated, "")
	k.doc = docStableKey("working-document", k.originID(), "create-1")
	c1 := docContent(title, body)
	v1 := k.version(c1, "", "created", "create-1", k.createdID(), nil)
	k.expect[k.createdID()] = docEvent{evCreated, k.originID(), map[string]any{"documentId": k.doc, "title": title,
		"originEventId": k.originID(), "versionId": v1, "sha256": docSHA(c1), "requestId": "create-1"}}
	if a.str("documentId") != k.doc || a.str("versionId") != v1 || a.str("createdEventId") != k.createdID() ||
		a.str("versionEventId") != docEventID(evVersion, k.doc, "created", "create-1") {
		t.Fatalf("create: %s; want document %s version %s", a, k.doc, v1)
	}
	k.replay("create", a, 0, http.MethodPost, "documents", req)
	other := map[string]any{"originEventId": k.originID(), "title": "Other", "body": body, "requestId": "create-1"}
	k.check("a create's requestId reused with other content", k.do(1, http.MethodPost, "documents", other), http.StatusConflict, "ConflictError")

	row := k.do(2, http.MethodGet, "documents/"+k.doc, nil).json["document"].(map[string]any)
	origin := row["origin"].(map[string]any)
	if row["id"] != docStableKey("document", docSource, k.doc) || row["path"] != "documents/"+k.doc+".md" || row["source"] != docSource ||
		row["contentType"] != "text/markdown" || row["title"] != title || row["versionId"] != v1 || row["originEventId"] != k.originID() {
		t.Fatalf("the document row: %v", row)
	}
	k.sameObservation("the frozen origin", origin, k.origin)
}

// sameObservation fails the test unless got holds observation o's fields as o does.
func (k *docWalk) sameObservation(what string, got, o map[string]any) {
	k.t.Helper()
	for _, f := range []string{"eventId", "type", "source", "occurredAt", "payloadHash", "excerpt"} {
		if got[f] != o[f] {
			k.t.Fatalf("%s: %s is %v, the observation's %v", what, f, got[f], o[f])
		}
	}
}

// eventIDs returns the ids of the document's events, sorted.
func (k *docWalk) eventIDs() []string {
	k.t.Helper()
	a := k.do(0, http.MethodGet, "documents/"+k.doc, nil)
	k.check("read the document", a, 200, "")
	var ids []string
	for _, e := range a.json["events"].([]any) {
		ids = append(ids, e.(map[string]any)["id"].(string))
	}
	slices.Sort(ids)
	return ids
}

// appendsNothing runs f and fails the test if the document's events changed.
func (k *docWalk) appendsNothing(what string, f func()) {
	k.t.Helper()
	before := k.eventIDs()
	f()
	if after := k.eventIDs(); !slices.Equal(before, after) {
		k.t.Fatalf("%s appended events: %d before, %d after", what, len(before), len(after))
	}
}

func (k *docWalk) edit() {
	t := k.t
	v1 := k.versions[0]
	k.title = "Meeting notes"
	body := docEditedBody
	route := "documents/" + k.doc + "/versions"
	req := map[string]any{"baseVersionId": v1, "title": k.title, "body": body, "requestId": "edit-1"}
	a := k.do(1, http.MethodPost, route, req)
	k.check("edit", a, 200, "")
	v2 := k.version(docContent(k.title, body), v1, "operator-edit", "edit-1", k.createdID(), nil)
	if a.str("versionId") != v2 || a.str("versionEventId") != docEventID(evVersion, k.doc, "operator-edit", "edit-1") {
		t.Fatalf("edit: %s, want version %s", a, v2)
	}
	k.replay("edit", a, 1, http.MethodPost, route, req)
	k.appendsNothing("a stale edit and an identical one", func() {
		stale := k.do(2, http.MethodPost, route, map[string]any{"baseVersionId": v1, "title": k.title, "body": "something else\n", "requestId": "edit-2"})
		if k.check("a stale edit", stale, http.StatusConflict, "StaleBaseError"); stale.str("headVersionId") != v2 {
			t.Fatalf("a stale edit names the head %q, want %s", stale.str("headVersionId"), v2)
		}
		same := k.do(0, http.MethodPost, route, map[string]any{"baseVersionId": v2, "title": k.title, "body": body, "requestId": "edit-3"})
		if same.status != 200 || same.str("versionId") != v2 || same.json["versionEventId"] != nil {
			t.Fatalf("an edit identical to the head: %s", same)
		}
	})
}

func (k *docWalk) candidatesOfTheDocument() {
	a := k.do(2, http.MethodGet, "candidates?documentId="+k.doc, nil)
	k.check("candidates of the document", a, 200, "")
	var versions []string
	origin := false
	for _, x := range a.json["candidates"].([]any) {
		c := x.(map[string]any)
		switch c["kind"] {
		case "version":
			versions = append(versions, c["versionId"].(string))
			if c["sha256"] != docSHA(k.contents[c["versionId"].(string)]) {
				k.t.Fatalf("version candidate %v", c)
			}
		default:
			if err := docCheckObservation(c); err != nil {
				k.t.Fatal(err)
			}
			origin = origin || c["eventId"] == k.originID()
		}
	}
	if !slices.Equal(versions, k.versions) || !origin {
		k.t.Fatalf("candidates of the document: versions %v (want %v), origin listed %v", versions, k.versions, origin)
	}
}

func (k *docWalk) selectContext() {
	v1, v2 := k.versions[0], k.versions[1]
	route := "documents/" + k.doc + "/selections"
	req := map[string]any{"selectedEventIds": []string{k.originID(), k.agendaID()}, "selectedVersionIds": []string{v1}, "requestId": "select-1"}
	a := k.do(0, http.MethodPost, route, req)
	k.check("select", a, 200, "")
	k.selection = docStableKey("workbench-selection", k.doc, "select-1")
	k.snapshot = docSnapshotID(k.doc, v2, k.originID(), k.agendaID(), v1)
	selected := docEventID(evSelected, k.selection)
	if a.str("selectionId") != k.selection || a.str("snapshotVersionId") != k.snapshot || a.str("selectedEventId") != selected || a.str("baseVersionId") != v2 {
		k.t.Fatalf("select: %s, want selection %s snapshot %s", a, k.selection, k.snapshot)
	}
	k.expect[selected] = docEvent{evSelected, k.createdID(), map[string]any{"documentId": k.doc, "selectionId": k.selection,
		"snapshotVersionId": k.snapshot, "selectedEventIds": []string{k.originID(), k.agendaID()}, "selectedVersionIds": []string{v1}, "requestId": "select-1"}}
	k.replay("select", a, 0, http.MethodPost, route, req)
	other := map[string]any{"selectedEventIds": []string{k.originID()}, "requestId": "select-1"}
	k.check("a selection's requestId reused with other ids", k.do(1, http.MethodPost, route, other), http.StatusConflict, "ConflictError")
}

// requested records the requested event a proposal request appends.
func (k *docWalk) requested(runner, requestID string) {
	base := k.versions[1]
	k.expect[docEventID(evRequested, k.doc, requestID)] = docEvent{evRequested, docEventID(evSelected, k.selection), map[string]any{
		"documentId": k.doc, "baseVersionId": base, "baseSha256": docSHA(k.contents[base]), "selectionId": k.selection,
		"snapshotVersionId": k.snapshot, "runnerId": runner, "requestId": requestID}}
}

func (k *docWalk) proposalRequest(runner, requestID string) map[string]any {
	return map[string]any{"selectionId": k.selection, "runnerId": runner, "baseVersionId": k.versions[1], "requestId": requestID}
}

// runnerFailures: the HTTP runner's far end errors, stalls past the timeout, and answers
// a result the workflow refuses; each records a failed run with a classified errorText,
// appends no proposal, answers RunnerError, and its replay answers the same without
// calling the runner again.
func (k *docWalk) runnerFailures() {
	route := "documents/" + k.doc + "/proposals"
	for _, tc := range []struct{ mode, requestID, class string }{
		{"error", "fail-error", "http-status: "},
		{"stall", "fail-stall", "timeout: "},
		{"too-much-evidence", "fail-evidence", "invalid-result: "},
	} {
		k.runner.set(tc.mode)
		req := k.proposalRequest(docHTTPRunner, tc.requestID)
		a := k.do(1, http.MethodPost, route, req)
		k.check("a runner that answers "+tc.mode, a, http.StatusBadGateway, "RunnerError")
		if a.str("runId") != docStableKey("workbench-run", k.doc, tc.requestID) || !strings.HasPrefix(a.str("errorText"), tc.class) ||
			docChars(a.str("errorText")) > 500 {
			k.t.Fatalf("the failure of a runner that answers %s: %s", tc.mode, a)
		}
		calls, _, _ := k.runner.state()
		k.replay("a failed proposal request", a, 1, http.MethodPost, route, req)
		if again, _, _ := k.runner.state(); again != calls {
			k.t.Fatalf("the replay of a failed request called the runner again (%d calls, then %d)", calls, again)
		}
		k.requested(docHTTPRunner, tc.requestID)
	}
	if ps := k.do(2, http.MethodGet, "documents/"+k.doc, nil).json["proposals"].([]any); len(ps) != 0 {
		k.t.Fatalf("failed runs appended proposals: %v", ps)
	}
}

// proposed records the proposed event of a successful request and returns its id.
func (k *docWalk) proposed(runner, revision, requestID, text, reason string, evidence []string) string {
	base := k.versions[1]
	id := docEventID(evProposed, k.doc, requestID)
	k.proposals[requestID] = id
	k.expect[id] = docEvent{evProposed, docEventID(evRequested, k.doc, requestID), map[string]any{
		"proposalState": "runner-proposed",
		"proposer": map[string]any{"runnerId": runner, "runnerRevision": revision, "requestId": requestID,
			"runId": docStableKey("workbench-run", k.doc, requestID), "contextSnapshotId": k.snapshot},
		"target":    map[string]any{"documentId": k.doc, "baseVersionId": base, "baseSha256": docSHA(k.contents[base])},
		"operation": "replace-document", "proposedText": text, "proposedTextChars": docChars(text), "proposedTextSha256": docSHA(text),
		"reason": reason, "evidenceEventIds": evidence, "publicationEligible": false}}
	return id
}

// propose requests a proposal and checks its answer and its replay.
func (k *docWalk) propose(runner, requestID string, via int) {
	route := "documents/" + k.doc + "/proposals"
	req := k.proposalRequest(runner, requestID)
	a := k.do(via, http.MethodPost, route, req)
	k.check("a proposal from "+runner, a, 200, "")
	if a.str("proposalEventId") != docEventID(evProposed, k.doc, requestID) || a.str("requestedEventId") != docEventID(evRequested, k.doc, requestID) ||
		a.str("runId") != docStableKey("workbench-run", k.doc, requestID) || a.str("documentId") != k.doc {
		k.t.Fatalf("a proposal from %s: %s", runner, a)
	}
	k.replay("a proposal request", a, via, http.MethodPost, route, req)
	k.requested(runner, requestID)
}

// httpProposal: the HTTP runner answers; it got the design's request (the head and the
// snapshot, nothing else).
func (k *docWalk) httpProposal() {
	k.runner.set("ok")
	k.propose(docHTTPRunner, "propose-http", 2)
	_, req, problems := k.runner.state()
	base := k.versions[1]
	if len(problems) > 0 {
		k.t.Fatalf("the runner got malformed requests: %v", problems)
	}
	events := []string{}
	for _, e := range req.Snapshot.SelectedEvents {
		events = append(events, e["eventId"].(string))
	}
	wantEvents := []string{k.originID(), k.agendaID()}
	slices.Sort(wantEvents)
	if req.DocumentID != k.doc || req.BaseVersionID != base || req.BaseSha256 != docSHA(k.contents[base]) || req.Title != k.title ||
		req.BaseText != docEditedBody || req.MaxProposedChars != 64000 ||
		req.Snapshot.DocumentID != k.doc || req.Snapshot.BaseVersionID != base || !slices.Equal(events, wantEvents) ||
		len(req.Snapshot.SelectedVersions) != 1 || req.Snapshot.SelectedVersions[0]["versionId"] != k.versions[0] {
		k.t.Fatalf("the runner's request: %+v", req)
	}
	for _, e := range req.Snapshot.SelectedEvents {
		o := k.origin
		if e["eventId"] == k.agendaID() {
			o = k.agenda
		}
		k.sameObservation("the snapshot's event", e, o)
	}
	k.proposed(docHTTPRunner, "http-1", "propose-http", req.BaseText+"\nDecided: ship on Friday.\n", "stub: records the decision", []string{req.Snapshot.SelectedEvents[0]["eventId"].(string)})
}

// fixtureText is what fixture-deterministic@1 proposes for the walk's selection, as the
// design describes it: the body, then a new "## Sources" section listing the selected
// events and versions in id order, and the Summary line.
func (k *docWalk) fixtureText() string {
	var b strings.Builder
	b.WriteString(docEditedBody + "\n## Sources\n\n")
	obs := []map[string]any{k.origin, k.agenda}
	slices.SortFunc(obs, func(x, y map[string]any) int { return strings.Compare(x["eventId"].(string), y["eventId"].(string)) })
	for _, o := range obs {
		fmt.Fprintf(&b, "- event %s — %s from %s at %s\n", o["eventId"], o["type"], o["source"], o["occurredAt"])
	}
	fmt.Fprintf(&b, "- version %s — documents/%s.md sha256 %s\n", k.versions[0], k.doc, docSHA(k.contents[k.versions[0]]))
	b.WriteString("\nSummary: 2 events, 1 versions selected.\n")
	return b.String()
}

func (k *docWalk) fixtureProposal() {
	k.propose(docFixtureRunner, "propose-1", 0)
	evidence := []string{k.originID(), k.agendaID()}
	slices.Sort(evidence)
	id := k.proposed(docFixtureRunner, "1", "propose-1", k.fixtureText(), "fixture: append sources section", evidence)
	doc := k.do(1, http.MethodGet, "documents/"+k.doc, nil)
	for _, x := range doc.json["proposals"].([]any) {
		p := x.(map[string]any)
		if p["state"] != "pending" || p["stale"] != false || p["headVersionId"] != k.versions[1] || p["diff"] == nil {
			k.t.Fatalf("an undecided proposal: %v", p)
		}
		if p["proposalEventId"] == id && !strings.Contains(p["diff"].(map[string]any)["unified"].(string), "\n+Summary: 2 events, 1 versions selected.\n") {
			k.t.Fatalf("the fixture proposal's diff: %v", p["diff"])
		}
	}
}

func (k *docWalk) accept() {
	p := k.proposals["propose-1"]
	route := "proposals/" + p + "/decisions"
	req := map[string]any{"disposition": "accept", "submissionId": "decide-1"}
	a := k.do(1, http.MethodPost, route, req)
	k.check("accept", a, 200, "")
	decision := docEventID(evDecision, p)
	v3 := k.version(docContent(k.title, k.fixtureText()), k.versions[1], "proposal-accepted", "decide-1", p,
		map[string]any{"proposalEventId": p, "decisionEventId": decision})
	k.expect[decision] = docEvent{evDecision, p, map[string]any{"proposalEventId": p, "disposition": "accept", "submissionId": "decide-1",
		"authority": "human", "resultVersionId": v3}}
	if a.str("resultVersionId") != v3 || a.str("decisionEventId") != decision || a.str("judgmentId") != docStableKey("workbench-judgment", decision) {
		k.t.Fatalf("accept: %s, want result %s", a, v3)
	}
	k.replay("accept", a, 1, http.MethodPost, route, req)
	k.appendsNothing("a second decision and a reused submission id", func() {
		k.check("a second decision", k.do(2, http.MethodPost, route, map[string]any{"disposition": "reject", "submissionId": "decide-2"}),
			http.StatusConflict, "ConflictError")
		k.check("a submission id reused with other content", k.do(0, http.MethodPost, route, map[string]any{"disposition": "reject", "submissionId": "decide-1"}),
			http.StatusConflict, "ConflictError")
	})
	doc := k.do(2, http.MethodGet, "documents/"+k.doc, nil)
	row := doc.json["document"].(map[string]any)
	if row["versionId"] != v3 || row["versions"] != float64(3) || row["title"] != k.title || doc.json["body"] != k.fixtureText() {
		k.t.Fatalf("the head after the accept: %v, body %q", row, doc.json["body"])
	}
}

// staleAcceptAndReject: the HTTP runner's proposal was made on v2; the head is v3 now,
// so accepting it is StaleBaseError naming the head and appends nothing; rejecting it is
// allowed and leaves the document unchanged.
func (k *docWalk) staleAcceptAndReject() {
	p := k.proposals["propose-http"]
	route := "proposals/" + p + "/decisions"
	head := k.versions[2]
	doc := k.do(0, http.MethodGet, "documents/"+k.doc, nil)
	for _, x := range doc.json["proposals"].([]any) {
		if r := x.(map[string]any); r["proposalEventId"] == p && (r["state"] != "stale" || r["headVersionId"] != head) {
			k.t.Fatalf("the proposal on the old base: %v", r)
		}
	}
	k.appendsNothing("a stale accept, and the replay of a no-op edit", func() {
		a := k.do(0, http.MethodPost, route, map[string]any{"disposition": "accept", "submissionId": "decide-3"})
		if k.check("a stale accept", a, http.StatusConflict, "StaleBaseError"); a.str("headVersionId") != head {
			k.t.Fatalf("a stale accept names the head %q, want %s", a.str("headVersionId"), head)
		}
		// The edit identical to the head recorded nothing, so its replay now is judged
		// afresh (docs/documents.md#routes).
		a = k.do(1, http.MethodPost, "documents/"+k.doc+"/versions", map[string]any{"baseVersionId": k.versions[1], "title": k.title,
			"body": docEditedBody, "requestId": "edit-3"})
		if k.check("the no-op edit replayed after the head moved", a, http.StatusConflict, "StaleBaseError"); a.str("headVersionId") != head {
			k.t.Fatalf("the no-op edit replayed names the head %q, want %s", a.str("headVersionId"), head)
		}
	})
	req := map[string]any{"disposition": "reject", "submissionId": "decide-4"}
	a := k.do(2, http.MethodPost, route, req)
	decision := docEventID(evDecision, p)
	if k.check("reject a stale proposal", a, 200, ""); a.str("decisionEventId") != decision || a.json["resultVersionId"] != nil {
		k.t.Fatalf("reject: %s", a)
	}
	k.replay("reject", a, 2, http.MethodPost, route, req)
	k.expect[decision] = docEvent{evDecision, p, map[string]any{"proposalEventId": p, "disposition": "reject", "submissionId": "decide-4", "authority": "human"}}
	if v := k.do(1, http.MethodGet, "documents/"+k.doc, nil).json["document"].(map[string]any)["versionId"]; v != head {
		k.t.Fatalf("a reject moved the head to %v", v)
	}
}

// checkEvents compares the document's events with the ones the walk expects: the same
// ids, each with the design's envelope, the origin as root, its parent and its payload.
func (k *docWalk) checkEvents() {
	doc := k.do(0, http.MethodGet, "documents/"+k.doc, nil)
	got := doc.json["events"].([]any)
	if len(got) != len(k.expect) {
		k.t.Fatalf("%d events, want %d", len(got), len(k.expect))
	}
	for _, x := range got {
		e := x.(map[string]any)
		id := e["id"].(string)
		w, ok := k.expect[id]
		if !ok {
			k.t.Fatalf("an unexpected event: %v", e)
		}
		if e["type"] != w.typ || e["parentEventId"] != w.parent || e["rootEventId"] != k.originID() || e["idempotencyKey"] != id ||
			e["source"] != docSource || e["sourceKind"] != "system" || e["privacy"] != "sensitive" || e["schemaVersion"] != float64(1) ||
			e["actor"] != "operator:local" || !docTime.MatchString(fmt.Sprint(e["occurredAt"])) {
			k.t.Fatalf("event %s: %v, want type %s parent %s", id, e, w.typ, w.parent)
		}
		if want := docNormal(w.payload); !reflect.DeepEqual(e["payload"], want) {
			k.t.Fatalf("the payload of %s %s:\n%v\nwant\n%v", w.typ, id, e["payload"], want)
		}
	}
	vs := k.do(1, http.MethodGet, "documents/"+k.doc+"/versions", nil)
	var ids []string
	for _, v := range vs.json["versions"].([]any) {
		ids = append(ids, v.(map[string]any)["versionId"].(string))
	}
	if !slices.Equal(ids, k.versions) {
		k.t.Fatalf("versions %v, want %v", ids, k.versions)
	}
}

// docNormal is v as it reads back from JSON.
func docNormal(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func (k *docWalk) checkRunsAndJudgments() {
	doc := k.do(2, http.MethodGet, "documents/"+k.doc, nil)
	runs := map[string]map[string]any{}
	for _, x := range doc.json["runs"].([]any) {
		r := x.(map[string]any)
		runs[r["id"].(string)] = r
	}
	for _, tc := range []struct {
		requestID, runner, status, class string
	}{
		{"fail-error", docHTTPRunner, "failed", "http-status"},
		{"fail-stall", docHTTPRunner, "failed", "timeout"},
		{"fail-evidence", docHTTPRunner, "failed", "invalid-result"},
		{"propose-http", docHTTPRunner, "completed", ""},
		{"propose-1", docFixtureRunner, "completed", ""},
	} {
		r := runs[docStableKey("workbench-run", k.doc, tc.requestID)]
		outputs := []any{}
		if tc.status == "completed" {
			outputs = []any{docEventID(evProposed, k.doc, tc.requestID)}
		}
		if r == nil || r["status"] != tc.status || r["runnerId"] != tc.runner || r["triggerEventId"] != docEventID(evRequested, k.doc, tc.requestID) ||
			!reflect.DeepEqual(r["outputEventIds"], outputs) || r["contextManifest"].(map[string]any)["contextSnapshot"] != k.snapshot ||
			r["errorClass"] != tc.class && !(tc.class == "" && r["errorClass"] == nil) {
			k.t.Fatalf("the run of %s: %v", tc.requestID, r)
		}
	}
	if len(runs) != 5 {
		k.t.Fatalf("%d runs, want 5", len(runs))
	}
	judgments := doc.json["judgments"].([]any)
	if len(judgments) != 2 {
		k.t.Fatalf("judgments: %v", judgments)
	}
	for _, x := range judgments {
		j := x.(map[string]any)
		request := map[string]string{"accept": "propose-1", "reject": "propose-http"}[fmt.Sprint(j["kind"])]
		p := docEventID(evProposed, k.doc, request)
		decision := docEventID(evDecision, p)
		want := map[string]any{"id": docStableKey("workbench-judgment", decision), "criterion": "workbench-document-proposal@1",
			"kind": j["kind"], "qualityEligible": false, "externalExportEligible": false, "feedbackSourceEventId": decision,
			"source": "judgment:workbench-documents", "documentId": k.doc, "proposalEventId": p, "baseVersionId": k.versions[1],
			"contextSnapshotId": k.snapshot, "runId": docStableKey("workbench-run", k.doc, request), "recordedAt": j["recordedAt"]}
		if j["kind"] == "accept" {
			want["resultVersionId"] = k.versions[2]
		}
		if request == "" || !reflect.DeepEqual(j, want) {
			k.t.Fatalf("judgment %v\nwant %v", j, want)
		}
	}
}

// limits: the design's bounds, each a typed error naming the member, and the exact bound
// taken; a result past the body limit and a selection past 16 evidence ids.
func (k *docWalk) limits() {
	long := strings.Repeat("x", 64_000)
	create := func(title, body, requestID string) map[string]any {
		return map[string]any{"originEventId": k.originID(), "title": title, "body": body, "requestId": requestID}
	}
	for _, tc := range []struct {
		name        string
		body        map[string]any
		status      int
		code, field string
	}{
		{"a body of 64,001 characters", create("t", long+"x", "limit-1"), 400, "ValidationError", "body"},
		{"a body of 64,001 UTF-16 units (an emoji is two)", create("t", long[1:]+"😀", "limit-2"), 400, "ValidationError", "body"},
		{"a title of 201 characters", create(strings.Repeat("t", 201), "b", "limit-3"), 400, "ValidationError", "title"},
		{"a request above 98 KB", create("t", strings.Repeat("é", 51_000), "limit-4"), 413, "PayloadTooLarge", ""},
	} {
		a := k.do(0, http.MethodPost, "documents", tc.body)
		if k.check(tc.name, a, tc.status, tc.code); a.str("field") != tc.field || tc.field != "" && a.str("rule") != "max-length" {
			k.t.Fatalf("%s: %s, want field %q", tc.name, a, tc.field)
		}
	}
	// An observation whose payload renders to more than 2,000 characters (a path of about
	// 2,200): its excerpt is cut to 2,000, in the candidates and frozen in a document.
	longPath := "input/" + strings.Repeat(strings.Repeat("p", 199)+"/", 11) + "end.md"
	k.put(longPath, "x\n")
	observed := k.observations(longPath)[longPath]
	if n := docChars(observed["excerpt"].(string)); n != 2000 {
		k.t.Fatalf("the excerpt of an observation of a %d-character path has %d characters, want 2000", len(longPath), n)
	}
	fromLong := k.do(2, http.MethodPost, "documents", map[string]any{"originEventId": observed["eventId"], "title": "t", "body": "b", "requestId": "limit-excerpt"})
	k.check("a document from it", fromLong, http.StatusCreated, "")
	origin := k.do(0, http.MethodGet, "documents/"+fromLong.str("documentId"), nil).json["document"].(map[string]any)["origin"]
	k.sameObservation("the frozen origin", origin.(map[string]any), observed)

	// The largest document: taken; the fixture's proposal on it is longer than the body
	// limit, so the run fails and nothing is proposed.
	big := k.do(1, http.MethodPost, "documents", create(strings.Repeat("t", 200), long, "limit-max"))
	k.check("a body of 64,000 characters and a title of 200", big, http.StatusCreated, "")
	bigDoc := big.str("documentId")
	sel := k.do(2, http.MethodPost, "documents/"+bigDoc+"/selections", map[string]any{"selectedEventIds": []string{k.originID()}, "requestId": "s"})
	k.check("select on the largest document", sel, 200, "")
	over := k.do(0, http.MethodPost, "documents/"+bigDoc+"/proposals", map[string]any{"selectionId": sel.str("selectionId"),
		"runnerId": docFixtureRunner, "baseVersionId": big.str("versionId"), "requestId": "p"})
	if k.check("a proposal longer than the body limit", over, http.StatusBadGateway, "RunnerError"); !strings.HasPrefix(over.str("errorText"), "invalid-result: ") {
		k.t.Fatalf("a proposal longer than the body limit: %s", over)
	}

	// Seventeen selected events: the fixture cites the first 16 (in id order).
	var paths []string
	for i := range 16 {
		paths = append(paths, fmt.Sprintf("input/many/%02d.md", i))
		k.put(paths[i], fmt.Sprintf("note %d\n", i))
	}
	obs := k.observations(paths...)
	ids := []string{k.originID()}
	for _, p := range paths {
		ids = append(ids, obs[p]["eventId"].(string))
	}
	many := k.do(1, http.MethodPost, "documents", create("Many", "b\n", "limit-many"))
	k.check("create", many, http.StatusCreated, "")
	manyDoc := many.str("documentId")
	sel = k.do(2, http.MethodPost, "documents/"+manyDoc+"/selections", map[string]any{"selectedEventIds": ids, "requestId": "s"})
	k.check("a selection of 17 events", sel, 200, "")
	pr := k.do(0, http.MethodPost, "documents/"+manyDoc+"/proposals", map[string]any{"selectionId": sel.str("selectionId"),
		"runnerId": docFixtureRunner, "baseVersionId": many.str("versionId"), "requestId": "p"})
	k.check("a proposal from 17 events", pr, 200, "")
	slices.Sort(ids)
	for _, x := range k.do(1, http.MethodGet, "documents/"+manyDoc, nil).json["proposals"].([]any) {
		got := x.(map[string]any)["proposal"].(map[string]any)["evidenceEventIds"]
		if !reflect.DeepEqual(got, docNormal(ids[:16])) {
			k.t.Fatalf("evidence of a proposal from 17 events: %v, want the first 16 of %v", got, ids)
		}
	}
}

// TestWorkingDocumentsOnAnEmbeddedNode walks the design's workflow on `cairn serve` with
// no key (the configured owner, --documents-owner), then kills the node with SIGKILL and
// finds the document as it was after the restart.
func TestWorkingDocumentsOnAnEmbeddedNode(t *testing.T) {
	stub := startDocRunnerStub(t)
	p := framework.StartProcess(t, cairnBin, t.TempDir(), "--documents-owner", "acme/main",
		"--documents-runner-url", stub.srv.URL, "--documents-runner-timeout", docRunnerTimeout)
	w := &docWorld{t: t, urls: func() []string {
		if p.Running() {
			return []string{p.URL}
		}
		return nil
	}, tenant: "acme", workspace: "main", runner: stub}
	k := w.walk(nil)
	before := w.do(0, http.MethodGet, "documents/"+k.doc, nil)
	p.Kill()
	p.Restart()
	if after := w.do(0, http.MethodGet, "documents/"+k.doc, nil); !bytes.Equal(after.body, before.body) {
		t.Fatalf("after kill -9 and a restart the document reads\n%s\nbefore\n%s", after, before)
	}
}

// TestWorkingDocumentsOnAClusterAcrossALeaderKill9 walks the design's workflow on three
// `cairn serve --cluster` processes requiring keys, with a key bound to acme·main (the
// owner comes from it), each request through another node. Between the proposals and
// their decisions the leader of the root's shard is killed with SIGKILL; the walk goes on
// through the survivors. The killed node then restarts, serves the same document from its
// own replica and takes an edit.
func TestWorkingDocumentsOnAClusterAcrossALeaderKill9(t *testing.T) {
	stub := startDocRunnerStub(t)
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 0, Shards: 1}, "--auth", "required",
		"--documents-runner-url", stub.srv.URL, "--documents-runner-timeout", docRunnerTimeout)
	key := func(name, scopes string) string {
		return framework.CreateKey(t, cairnBin, nil, name, "--etcd", pc.Stores.Etcd, "--tenant", "acme", "--workspace", "main", "--scope", scopes).Secret
	}
	operator, reader := key("operator", "workspace:read,workspace:write,review"), key("reader", "workspace:read,workspace:write")
	for range 3 {
		pc.AddNode("--peer-listen", freeport.Addr(t)) // a restarted node keeps its peer address
	}
	w := &docWorld{t: t, urls: pc.LiveURLs, key: operator, tenant: "acme", workspace: "main", runner: stub}

	var killed *framework.Process
	k := w.walk(func() {
		killed = shardLeader(t, pc.Nodes, 0, 3)
		t.Logf("killing the shard leader %s", killed.URL)
		killed.Kill()
	})
	if a := w.doAs(reader, 0, http.MethodPost, "documents/"+k.doc+"/versions", map[string]any{"baseVersionId": k.versions[2],
		"title": "t", "body": "b", "requestId": "reader"}); a.status != http.StatusForbidden || a.str("error") != "Forbidden" {
		t.Fatalf("a write with a key without the review scope: %s", a)
	}

	killed.Restart()
	reference := w.do(0, http.MethodGet, "documents/"+k.doc, nil)
	one := &docWorld{t: t, urls: func() []string { return []string{killed.URL} }, key: operator, tenant: "acme", workspace: "main"}
	retry.Within(t, docRequestBound, "the restarted node serves the document as the others do", func() error {
		if a := one.do(0, http.MethodGet, "documents/"+k.doc, nil); !bytes.Equal(a.body, reference.body) {
			return fmt.Errorf("the restarted node reads %s", a)
		}
		return nil
	})
	k.replayAll(one)
	route := "documents/" + k.doc + "/versions"
	edit := one.do(0, http.MethodPost, route, map[string]any{"baseVersionId": k.versions[2], "title": k.title, "body": "after the restart\n", "requestId": "edit-after"})
	v4 := docVersionID(k.doc, docContent(k.title, "after the restart\n"))
	if edit.status != 200 || edit.str("versionId") != v4 {
		t.Fatalf("an edit through the restarted node: %s", edit)
	}
	for i := range pc.Nodes {
		if row := w.do(i, http.MethodGet, "documents/"+k.doc, nil).json["document"].(map[string]any); row["versionId"] != v4 || row["versions"] != float64(4) {
			t.Fatalf("node %d after the edit: %v", i, row)
		}
	}
}

// `cairn mcp --profile cairn` on a data directory serves the working-documents tools in
// process, as a node's cairn profile does over HTTP: a document created from an
// observation of the session's root, shown back.
func TestWorkingDocumentsOverMCPStdio(t *testing.T) {
	cs, closeSession := connectStdio(t, "mcp", "--agent", "default", "--profile", "cairn", "--data-dir", t.TempDir())
	defer closeSession()
	if res, text, _ := callTool(t, cs, "workbench_create", map[string]any{"id": "default"}); res.IsError {
		t.Fatalf("workbench_create: %s", text)
	}
	if res, text, _ := callTool(t, cs, "workbench_put_file", map[string]any{"id": "default", "section": "input", "path": "notes.md", "text": "notes"}); res.IsError {
		t.Fatalf("workbench_put_file: %s", text)
	}
	res, text, cands := callTool(t, cs, "cairn_documents", map[string]any{"action": "candidates"})
	list, _ := cands["candidates"].([]any)
	if res.IsError || len(list) == 0 {
		t.Fatalf("candidates: %s", text)
	}
	origin, _ := list[0].(map[string]any)["eventId"].(string)
	res, text, created := callTool(t, cs, "cairn_document_write", map[string]any{"action": "create",
		"payload": map[string]any{"originEventId": origin, "title": "From stdio", "body": "a body", "requestId": "stdio-1"}})
	if res.IsError {
		t.Fatalf("create: %s", text)
	}
	doc, _ := created["documentId"].(string)
	res, text, shown := callTool(t, cs, "cairn_documents", map[string]any{"action": "show", "document_id": doc})
	row, _ := shown["document"].(map[string]any)
	if res.IsError || shown["body"] != "a body" || row["title"] != "From stdio" || row["documentId"] != doc {
		t.Fatalf("show: %s", text)
	}
}
