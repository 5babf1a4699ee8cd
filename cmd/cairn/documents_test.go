package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// The working-documents workflow through `cairn documents`, against a node's REST API and
// documents surface (the Local principal, as on a node without keys).
func TestTheDocumentsCommandsWalkTheWorkflow(t *testing.T) {
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, ReservedWorkbenches: map[string]string{documents.Workbench: documents.Surface}})
	h, err := documents.New(server.DocumentStore{Svc: n.Service}, documents.Options{}, rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), auth.Local)))
	}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/v1/agents/default/workbenches/notes/files/input/a.md", strings.NewReader("notes"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("put: %v %v", resp, err)
	}
	run := func(args ...string) map[string]any {
		t.Helper()
		var out map[string]any
		if err := json.Unmarshal([]byte(runCairn(t, srv.URL, append([]string{"documents"}, args...)...)), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	origin := run("candidates")["candidates"].([]any)[0].(map[string]any)["eventId"].(string)
	created := run("create", "--origin", origin, "--title", "T", "--text", "hello\n", "--request-id", "r1")
	if again := run("create", "--origin", origin, "--title", "T", "--text", "hello\n", "--request-id", "r1"); again["documentId"] != created["documentId"] {
		t.Fatalf("a retried create: %v, first %v", again, created)
	}
	doc := created["documentId"].(string)
	edited := run("edit", doc, "--base", created["versionId"].(string), "--title", "T", "--text", "hello, world\n")
	sel := run("select", doc, "--event", origin)
	prop := run("propose", doc, "--selection", sel["selectionId"].(string), "--base", edited["versionId"].(string))
	dec := run("decide", prop["proposalEventId"].(string), "accept")
	shown := run("show", doc)
	if shown["document"].(map[string]any)["versionId"] != dec["resultVersionId"] || !strings.HasPrefix(shown["body"].(string), "hello, world\n\n## Sources") {
		t.Fatalf("the document after the workflow: %v", shown["document"])
	}
	if list := run("list")["documents"].([]any); len(list) != 1 {
		t.Fatalf("list: %v", list)
	}
	if page := run("list", "--limit", "1", "--cursor", doc); len(page["documents"].([]any)) != 0 || page["truncated"] != false {
		t.Fatalf("the page after the only document: %v", page)
	}
	_, _, err = execCairn(t, "--server", srv.URL, "documents", "edit", doc, "--base", created["versionId"].(string), "--title", "T", "--text", "stale")
	var printed bytes.Buffer
	if err != nil {
		reportError(&printed, err)
	}
	head := dec["resultVersionId"].(string)
	if want := "cairn: StaleBaseError: the base version is not the document's head (head " + head + ")\n"; printed.String() != want {
		t.Fatalf("a stale edit prints %q, want %q", printed.String(), want)
	}
	if code := client.ErrorCode(err); code != "StaleBaseError" {
		t.Fatalf("a stale edit's code: %q", code)
	}
	// A body file that is not UTF-8 is refused, as the server refuses such bytes, and no
	// version holds U+FFFD in their place.
	notText := filepath.Join(t.TempDir(), "latin1.md")
	if err := os.WriteFile(notText, []byte("caf\xe9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = execCairn(t, "--server", srv.URL, "documents", "edit", doc, "--base", head, "--title", "T", "--file", notText)
	if err == nil {
		t.Fatal("an edit from a file that is not UTF-8 was sent")
	}
	if code, msg := describeError(err); code != "InvalidArguments" || !strings.Contains(msg, "body: must be Unicode text") {
		t.Fatalf("an edit from a file that is not UTF-8: %s: %s", code, msg)
	}
	if now := run("show", doc); now["document"].(map[string]any)["versionId"] != head {
		t.Fatalf("the refused edit moved the head: %v", now["document"])
	}
}
