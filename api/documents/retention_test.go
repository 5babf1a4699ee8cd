package documents_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/blob/blobtest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// A document outlives the feed's retention: its origin is frozen in it. On a core whose
// feed keeps 8 events per root, the origin is soon dropped; the document still shows it,
// offers it as a candidate and lets it be selected, while a new document can no longer be
// created from it.
func TestADocumentOutlivesTheFeedsRetention(t *testing.T) {
	bs := blobtest.Dir(t)
	sh := workbenchtest.Replica(t, shard.Config{FSM: meta.Options{FeedMaxPerRoot: 8}})
	svc, err := workbench.New(sh, bs, nodeConfig)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOver(t, svc, nil, nil)
	origin := e.observe("local", "default", "notes", "input/origin.md", "the origin")
	d := e.create("local", origin, "T", "b\n", "c1")
	local := auth.WithPrincipal(context.Background(), auth.Local)
	for i := range 12 {
		if _, err := svc.Writes.Write(local, workbench.WriteRequest{Agent: "default", Workbench: "notes", Path: fmt.Sprintf("input/later-%d.md", i),
			Body: strings.NewReader("later")}); err != nil {
			t.Fatal(err)
		}
	}
	if a := e.do("local", "POST", "/api/workbench/documents", map[string]any{"originEventId": origin, "title": "T", "body": "b", "requestId": "c2"}); a.status != http.StatusBadRequest || a.str("rule") != "must-exist" {
		t.Fatalf("a create from a dropped observation: %d %s", a.status, a.body)
	}
	doc := e.document("local", d.docID)
	if o := doc["document"].(map[string]any)["origin"].(map[string]any); o["eventId"] != origin || !strings.Contains(o["excerpt"].(string), "input/origin.md") {
		t.Fatalf("the frozen origin: %v", o)
	}
	c := e.do("local", "GET", "/api/workbench/candidates?documentId="+d.docID, nil)
	if c.status != 200 || !strings.Contains(string(c.body), origin) {
		t.Fatalf("candidates: %d %s", c.status, c.body)
	}
	sel := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/selections", map[string]any{"selectedEventIds": []string{origin}, "selectedVersionIds": []string{}, "requestId": "s"})
	if sel.status != 200 {
		t.Fatalf("selecting the frozen origin: %d %s", sel.status, sel.body)
	}
	pr := e.do("local", "POST", "/api/workbench/documents/"+d.docID+"/proposals", map[string]any{"selectionId": sel.str("selectionId"),
		"runnerId": documents.FixtureRunnerID, "baseVersionId": d.versionID, "requestId": "p"})
	if pr.status != 200 {
		t.Fatalf("a proposal from it: %d %s", pr.status, pr.body)
	}
}
