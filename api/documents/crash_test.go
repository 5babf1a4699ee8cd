package documents_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/api/documents"
)

// crashStore is the node's store, except that the first write a test names fails before
// it reaches the core, as if the node stopped there: every write before it applied, none
// after it did.
type crashStore struct {
	documents.Store
	mu   sync.Mutex
	stop func(path string, body []byte, ifGeneration uint64) bool
}

func (c *crashStore) WriteFile(ctx context.Context, agent, ws, path string, body []byte, ct string, ifGeneration uint64) (uint64, error) {
	c.mu.Lock()
	stop := c.stop
	if stop != nil && stop(path, body, ifGeneration) {
		c.stop = nil
		c.mu.Unlock()
		return 0, documents.ErrUnavailable
	}
	c.mu.Unlock()
	return c.Store.WriteFile(ctx, agent, ws, path, body, ct, ifGeneration)
}

func (c *crashStore) crashAt(f func(path string, body []byte, ifGeneration uint64) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stop = f
}

// finalHeadSwap is the write that ends a mutation: the head without Pending.
func finalHeadSwap(path string, body []byte, ifGeneration uint64) bool {
	return strings.Contains(path, "/heads/") && ifGeneration != 0 && !strings.Contains(string(body), `"pending"`)
}

func under(dir string) func(string, []byte, uint64) bool {
	return func(path string, _ []byte, _ uint64) bool { return strings.Contains(path, dir) }
}

// A request cut short answers 503; its replay finishes what the first attempt began and
// answers what it would have, and nothing is applied twice.
func TestAReplaySettlesWhatACrashLeftHalfWritten(t *testing.T) {
	cs := &crashStore{}
	e := newEnvOn(t, nil, func(s documents.Store) documents.Store { cs.Store = s; return cs })
	origin := e.observe("local", "default", "notes", "input/a.md", "a")
	createBody := map[string]any{"originEventId": origin, "title": "T", "body": "one\n", "requestId": "c"}

	cs.crashAt(under("/heads/"))
	if a := e.do("local", "POST", "/api/workbench/documents", createBody); a.status != http.StatusServiceUnavailable || a.str("error") != "Unavailable" {
		t.Fatalf("a create cut before its head: %d %s", a.status, a.body)
	}
	d := e.create("local", origin, "T", "one\n", "c")

	edit := map[string]any{"baseVersionId": d.versionID, "title": "T", "body": "two\n", "requestId": "e"}
	cs.crashAt(finalHeadSwap)
	if a := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/versions", edit); a.status != http.StatusServiceUnavailable {
		t.Fatalf("an edit cut before its final head swap: %d %s", a.status, a.body)
	}
	ed := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/versions", edit)
	if ed.status != 200 || ed.str("versionEventId") != documents.EventID(documents.TypeVersion, d.docID, "operator-edit", "e") {
		t.Fatalf("the edit's replay: %d %s", ed.status, ed.body)
	}

	sel := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections", map[string]any{"selectedEventIds": []string{origin}, "selectedVersionIds": []string{}, "requestId": "s"})
	prop := map[string]any{"selectionId": sel.str("selectionId"), "runnerId": documents.FixtureRunnerID, "baseVersionId": ed.str("versionId"), "requestId": "p"}
	cs.crashAt(under("/events/" + documents.EventID(documents.TypeProposed, d.docID, "p")))
	if a := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", prop); a.status != http.StatusServiceUnavailable {
		t.Fatalf("a proposal request cut before its proposal: %d %s", a.status, a.body)
	}
	if run := e.document("local", d.docID)["runs"].([]any)[0].(map[string]any); run["status"] != "running" {
		t.Fatalf("the run after the cut: %v", run)
	}
	pr := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", prop)
	if pr.status != 200 {
		t.Fatalf("the proposal request's replay: %d %s", pr.status, pr.body)
	}

	decisions := "/api/workbench/proposals/" + pr.str("proposalEventId") + "/decisions"
	accept := map[string]any{"disposition": "accept", "submissionId": "s1"}
	for _, cut := range []func(string, []byte, uint64) bool{finalHeadSwap, under("/judgments/")} {
		cs.crashAt(cut)
		if a := e.do("local", "POST", decisions, accept); a.status != http.StatusServiceUnavailable && a.status != 200 {
			t.Fatalf("an accept cut short: %d %s", a.status, a.body)
		}
	}
	acc := e.do("local", "POST", decisions, accept)
	if acc.status != 200 || acc.str("resultVersionId") == "" {
		t.Fatalf("the accept's replay: %d %s", acc.status, acc.body)
	}
	if other := e.do("local", "POST", decisions, map[string]any{"disposition": "accept", "submissionId": "s2"}); other.status != 409 ||
		!strings.Contains(other.str("message"), "already has a human decision") {
		t.Fatalf("a second submission: %d %s", other.status, other.body)
	}

	doc := e.document("local", d.docID)
	counts := map[string]int{}
	for _, ev := range events(doc) {
		counts[ev["type"].(string)]++
	}
	if counts[documents.TypeCreated] != 1 || counts[documents.TypeVersion] != 3 || counts[documents.TypeProposed] != 1 || counts[documents.TypeDecision] != 1 {
		t.Fatalf("events after the replays: %v", counts)
	}
	if n := len(doc["judgments"].([]any)); n != 1 {
		t.Fatalf("%d judgments", n)
	}
	row := doc["document"].(map[string]any)
	if row["versionId"] != acc.str("resultVersionId") || row["versions"] != float64(3) {
		t.Fatalf("the head after the replays: %v", row)
	}
	// The head is settled: a new edit on it applies.
	if a := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/versions", map[string]any{"baseVersionId": row["versionId"], "title": "T",
		"body": "three\n", "requestId": "e2"}); a.status != 200 {
		t.Fatalf("an edit after the replays: %d %s", a.status, a.body)
	}
}
