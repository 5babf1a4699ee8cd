package openwop_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/internal/retry"
)

// Preconditions of the workspace-file writes (issue 25 finding 6): If-Match on DELETE and
// If-None-Match: * on PUT hold atomically, and a failed one is a final 409
// workspace_conflict.

// raceAnswer is one answer of a request sent from a goroutine (no t.Fatal there).
type raceAnswer struct {
	status     int
	body       string
	retryAfter string
	err        error
}

// race sends n requests at once (each built by mk(i)) and answers them in order.
func race(n int, mk func(i int) (*http.Request, error)) []raceAnswer {
	out := make([]raceAnswer, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			req, err := mk(i)
			if err != nil {
				out[i].err = err
				return
			}
			start.Wait()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out[i].err = err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out[i] = raceAnswer{status: resp.StatusCode, body: string(b), retryAfter: resp.Header.Get("Retry-After")}
		}()
	}
	start.Done()
	done.Wait()
	return out
}

// wantConflict checks a failed precondition: 409 workspace_conflict with currentVersion,
// in the published envelope, and nothing that asks for a retry.
func wantConflict(t *testing.T, sc schemas, what string, a answer, current float64) {
	t.Helper()
	wantError(t, sc, what, a, http.StatusConflict, openwop.CodeConflict)
	if d, _ := a.json["details"].(map[string]any); d["currentVersion"] != current {
		t.Fatalf("%s: %s, want details.currentVersion %v", what, a.body, current)
	}
}

func TestAStaleIfMatchDeletesNothingEvenWhenTenRace(t *testing.T) {
	sc := loadSchemas(t)
	file := newFacade(t, testOptions()) + "/v1/host/workspace/files/behavior%2FETAG.md"
	v1 := call(t, http.MethodPut, file, map[string]any{"content": "one"})
	v2 := call(t, http.MethodPut, file, map[string]any{"content": "two"})
	if v1.status != 200 || v2.status != 200 || v2.json["version"] != float64(2) {
		t.Fatalf("setup: %s %s", v1.body, v2.body)
	}
	stale := v1.json["etag"].(string)
	answers := race(10, func(int) (*http.Request, error) {
		req, err := http.NewRequest(http.MethodDelete, file, nil)
		if err == nil {
			req.Header.Set("If-Match", stale)
		}
		return req, err
	})
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("delete %d: %v", i, a.err)
		}
		var got answer
		got.status, got.body = a.status, []byte(a.body)
		_ = json.Unmarshal(got.body, &got.json)
		wantConflict(t, sc, "a stale If-Match on DELETE", got, 2)
		if a.retryAfter != "" {
			t.Fatalf("delete %d: a failed precondition carries Retry-After %q", i, a.retryAfter)
		}
	}
	if g := call(t, http.MethodGet, file, nil); g.status != 200 || g.json["content"] != "two" || g.json["version"] != float64(2) {
		t.Fatalf("the file after ten stale deletes: %d %s", g.status, g.body)
	}
	for _, etag := range []string{`"definitely-stale"`, `"g0"`, "*", `W/` + v2.json["etag"].(string)} {
		wantConflict(t, sc, "DELETE If-Match "+etag, call(t, http.MethodDelete, file, nil, "If-Match", etag), 2)
	}
	if d := call(t, http.MethodDelete, file, nil, "If-Match", v2.json["etag"].(string)); d.status != http.StatusNoContent {
		t.Fatalf("a delete at the current etag: %d %s", d.status, d.body)
	}
	wantConflict(t, sc, "If-Match on a deleted file", call(t, http.MethodDelete, file, nil, "If-Match", v2.json["etag"].(string)), 0)
	wantError(t, sc, "If-None-Match on a DELETE", call(t, http.MethodDelete, file, nil, "If-None-Match", "*"), 400, openwop.CodeValidation)
	// openapi.json: If-Match maxLength 255, on the PUT and the DELETE.
	long := `"` + strings.Repeat("g", 254) + `"`
	wantError(t, sc, "a 256-character If-Match on a PUT", call(t, http.MethodPut, file, map[string]any{"content": "x"}, "If-Match", long), 400, openwop.CodeValidation)
	wantError(t, sc, "a 256-character If-Match on a DELETE", call(t, http.MethodDelete, file, nil, "If-Match", long), 400, openwop.CodeValidation)
}

func TestACreateOnlyPutRefusesAnExistingFileAndChangesNothing(t *testing.T) {
	sc := loadSchemas(t)
	file := newFacade(t, testOptions()) + "/v1/host/workspace/files/DIRECTIVES.md"
	first := call(t, http.MethodPut, file, map[string]any{"content": "keep me"}, "If-None-Match", "*")
	if first.status != 200 || first.json["version"] != float64(1) {
		t.Fatalf("a create-only PUT of a new path: %d %s", first.status, first.body)
	}
	wantConflict(t, sc, "If-None-Match: * on an existing file", call(t, http.MethodPut, file, map[string]any{"content": "overwrite"}, "If-None-Match", "*"), 1)
	if g := call(t, http.MethodGet, file, nil); g.json["content"] != "keep me" || g.json["etag"] != first.json["etag"] {
		t.Fatalf("the file after a refused create-only PUT: %s", g.body)
	}
	wantError(t, sc, "If-None-Match naming an etag", call(t, http.MethodPut, file, map[string]any{"content": "x"}, "If-None-Match", first.json["etag"].(string)), 400, openwop.CodeValidation)
	wantConflict(t, sc, "If-Match and If-None-Match: * together",
		call(t, http.MethodPut, file, map[string]any{"content": "x"}, "If-Match", first.json["etag"].(string), "If-None-Match", "*"), 1)
	if d := call(t, http.MethodDelete, file, nil); d.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", d.status, d.body)
	}
	if again := call(t, http.MethodPut, file, map[string]any{"content": "new life"}, "If-None-Match", "*"); again.status != 200 || again.json["version"] != float64(1) {
		t.Fatalf("a create-only PUT after a delete: %d %s", again.status, again.body)
	}
}

func TestRacingCreateOnlyPutsHaveExactlyOneWinner(t *testing.T) {
	file := newFacade(t, testOptions()) + "/v1/host/workspace/files/race.md"
	const n = 10
	answers := race(n, func(i int) (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPut, file, strings.NewReader(`{"content":"writer `+string(rune('a'+i))+`"}`))
		if err == nil {
			req.Header.Set("If-None-Match", "*")
		}
		return req, err
	})
	winner := ""
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Fatalf("put %d: %v", i, a.err)
		case a.status == http.StatusOK && winner != "":
			t.Fatalf("two create-only PUTs both won: %s and %s", winner, a.body)
		case a.status == http.StatusOK:
			winner = "writer " + string(rune('a'+i))
		case a.status != http.StatusConflict || !strings.Contains(a.body, `"workspace_conflict"`) || a.retryAfter != "":
			t.Fatalf("put %d: %d %s (Retry-After %q), want 409 workspace_conflict", i, a.status, a.body, a.retryAfter)
		}
	}
	if winner == "" {
		t.Fatal("no create-only PUT won")
	}
	if g := call(t, http.MethodGet, file, nil); g.json["content"] != winner || g.json["version"] != float64(1) {
		t.Fatalf("the file holds %s, want the winner's %q at version 1", g.body, winner)
	}
}

func TestTheSeamHonoursIfMatchOnDelete(t *testing.T) {
	sc := loadSchemas(t)
	_, seam := newSeamFacade(t)
	v1 := seam(map[string]any{"op": "put", "path": "s.md", "content": "one"})
	if v2 := seam(map[string]any{"op": "put", "path": "s.md", "content": "two"}); v1.status != 200 || v2.status != 200 {
		t.Fatalf("setup: %s %s", v1.body, v2.body)
	}
	wantConflict(t, sc, "a stale ifMatch on the seam's delete", seam(map[string]any{"op": "delete", "path": "s.md", "ifMatch": v1.json["etag"]}), 2)
	if g := seam(map[string]any{"op": "get", "path": "s.md"}); g.json["content"] != "two" {
		t.Fatalf("the file after a refused seam delete: %s", g.body)
	}
	// An op the seam does not know is named as such, with or without a path, and the
	// answer does not echo it (it is the client's, of any length).
	for _, op := range []map[string]any{{"op": strings.Repeat("bogus", 1000)}, {"op": "bogus", "path": "s.md"}, {"op": ""}} {
		a := seam(op)
		wantError(t, sc, "an unknown op", a, http.StatusBadRequest, openwop.CodeValidation)
		if msg, _ := a.json["message"].(string); msg != `op must be "list", "get", "put" or "delete"` {
			t.Errorf("an unknown op: %s", a.body)
		}
	}
}

// A key with workspace:write alone writes and deletes (WIRE §1: workspace:write is PUT
// and DELETE): the precondition a PUT checks, the version it answers and a conflict's
// currentVersion are the write's, not a read; the GETs stay workspace:read's.
func TestAWriteOnlyKeyPutsAndDeletes(t *testing.T) {
	sc := loadSchemas(t)
	file := newFacade(t, testOptions()) + "/v1/host/workspace/files/wo.md"
	as := []string{ownerHeader, "acme/main", writeOnlyHeader, "yes"}
	first := call(t, http.MethodPut, file, map[string]any{"content": "one"}, as...)
	if first.status != http.StatusOK || first.json["version"] != float64(1) {
		t.Fatalf("a write-only PUT: %d %s", first.status, first.body)
	}
	etag, _ := first.json["etag"].(string)
	if again := call(t, http.MethodPut, file, map[string]any{"content": "two"}, append(as, "If-Match", etag)...); again.status != http.StatusOK || again.json["version"] != float64(2) {
		t.Fatalf("a write-only PUT under If-Match: %d %s", again.status, again.body)
	}
	wantConflict(t, sc, "a write-only PUT under a stale If-Match", call(t, http.MethodPut, file, map[string]any{"content": "three"}, append(as, "If-Match", etag)...), 2)
	wantError(t, sc, "a write-only GET", call(t, http.MethodGet, file, nil, as...), http.StatusForbidden, openwop.CodeForbidden)
	if del := call(t, http.MethodDelete, file, nil, as...); del.status/100 != 2 {
		t.Fatalf("a write-only DELETE: %d %s", del.status, del.body)
	}
}

// A content type that is no media type is refused naming the wire's field, contentType,
// in the facade's words: not Cairn's field name, not the parser's text.
func TestABadContentTypeNamesTheWireField(t *testing.T) {
	sc := loadSchemas(t)
	file := newFacade(t, testOptions()) + "/v1/host/workspace/files/ct.md"
	for _, ct := range []string{"not a mime", "text/plain; charset", strings.Repeat("a", 300) + "/b"} {
		a := call(t, http.MethodPut, file, map[string]any{"content": "x", "contentType": ct})
		wantError(t, sc, "contentType "+ct, a, http.StatusBadRequest, openwop.CodeValidation)
		if msg, _ := a.json["message"].(string); !strings.HasPrefix(msg, "contentType: ") || strings.Contains(msg, "content_type") || strings.Contains(msg, "mime:") {
			t.Errorf("contentType %q: %s", ct, a.body)
		}
	}
	// An empty one names none: the default, as when the member is absent, not a type the
	// client never sent.
	for _, body := range []map[string]any{{"content": "x", "contentType": ""}, {"content": "x"}} {
		if a := call(t, http.MethodPut, file, body); a.status != 200 || a.json["contentType"] != openwop.DefaultContentType {
			t.Fatalf("PUT %v: %d %s", body, a.status, a.body)
		}
		if g := call(t, http.MethodGet, file, nil); g.json["contentType"] != openwop.DefaultContentType {
			t.Fatalf("GET after PUT %v: %s", body, g.body)
		}
	}
}

// A conditional PUT sent again under its Idempotency-Key (a client whose answer was lost)
// answers the first answer, byte for byte, and writes nothing more: the precondition the
// first send met does not hold any more (the file is at the version it wrote), so a check
// before the store's lookup of the key would refuse the retry 409, which a client takes as
// final. A retry after the file was deleted answers the first answer too, its updatedAt the
// write's, not the time of the retry. Without a key the precondition still fails at once.
func TestAConditionalPutRetriedUnderItsIdempotencyKeyAnswersTheFirstAnswer(t *testing.T) {
	sc := loadSchemas(t)
	base := newFacade(t, testOptions()) + "/v1/host/workspace/files/"
	create := call(t, http.MethodPut, base+"new.md", map[string]any{"content": "one"}, "If-None-Match", "*", "Idempotency-Key", "k-create")
	if create.status != 200 {
		t.Fatalf("a create-only PUT: %d %s", create.status, create.body)
	}
	etag := create.json["etag"].(string)
	update := call(t, http.MethodPut, base+"new.md", map[string]any{"content": "two"}, "If-Match", etag, "Idempotency-Key", "k-update")
	if update.status != 200 || update.json["version"] != float64(2) {
		t.Fatalf("an If-Match PUT: %d %s", update.status, update.body)
	}
	for _, retry := range []struct {
		what  string
		first answer
		again answer
	}{
		{"a create-only PUT", create, call(t, http.MethodPut, base+"new.md", map[string]any{"content": "one"}, "If-None-Match", "*", "Idempotency-Key", "k-create")},
		{"an If-Match PUT", update, call(t, http.MethodPut, base+"new.md", map[string]any{"content": "two"}, "If-Match", etag, "Idempotency-Key", "k-update")},
	} {
		if retry.again.status != 200 || !bytes.Equal(retry.again.body, retry.first.body) {
			t.Fatalf("%s sent again under its key: %d %s, want the first answer %s", retry.what, retry.again.status, retry.again.body, retry.first.body)
		}
	}
	if g := call(t, http.MethodGet, base+"new.md", nil); g.json["version"] != float64(2) || g.json["content"] != "two" {
		t.Fatalf("the file after the retries: %s", g.body)
	}
	wantConflict(t, sc, "the If-Match PUT sent again without its key", call(t, http.MethodPut, base+"new.md", map[string]any{"content": "two"}, "If-Match", etag), 2)
	wantConflict(t, sc, "the create-only PUT sent again without its key", call(t, http.MethodPut, base+"new.md", map[string]any{"content": "one"}, "If-None-Match", "*"), 2)
	wantConflict(t, sc, "the If-Match PUT under its key with another body", call(t, http.MethodPut, base+"new.md", map[string]any{"content": "three"}, "If-Match", etag, "Idempotency-Key", "k-other"), 2)
	wantConflict(t, sc, "If-Match and If-None-Match: * under a key", call(t, http.MethodPut, base+"gone.md", map[string]any{"content": "x"}, "If-Match", etag, "If-None-Match", "*", "Idempotency-Key", "k-both"), 0)
	if g := call(t, http.MethodGet, base+"gone.md", nil); g.status != http.StatusNotFound {
		t.Fatalf("a PUT with both preconditions wrote: %d %s", g.status, g.body)
	}
	if d := call(t, http.MethodDelete, base+"new.md", nil); d.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", d.status, d.body)
	}
	// The retry is sent once the clock has passed the write's updatedAt, so that an answer
	// carrying the retry's own time differs from the first answer.
	written, err := time.Parse(time.RFC3339Nano, create.json["updatedAt"].(string))
	if err != nil {
		t.Fatalf("the create's updatedAt: %v", err)
	}
	retry.SucceedsSoon(t, "the clock passes the write's updatedAt", func() error {
		if now := time.Now().UnixMilli(); now <= written.UnixMilli() {
			return fmt.Errorf("now %d ms, the write at %d ms", now, written.UnixMilli())
		}
		return nil
	})
	if again := call(t, http.MethodPut, base+"new.md", map[string]any{"content": "one"}, "If-None-Match", "*", "Idempotency-Key", "k-create"); !bytes.Equal(again.body, create.body) {
		t.Fatalf("the create-only PUT sent again after a delete: %d %s, want the first answer %s", again.status, again.body, create.body)
	}
	if g := call(t, http.MethodGet, base+"new.md", nil); g.status != http.StatusNotFound {
		t.Fatalf("a retry after the delete wrote again: %d %s", g.status, g.body)
	}
}

// maxFiles holds when PUTs creating files race: of twelve creates sent at once into a
// workspace one file short of the limit, exactly one is stored and the others are 413
// workspace_too_large. Each create read the count before any of them had written, so
// before, several passed the check (259 files of 256 on a node under a 24-way race).
func TestRacingCreatesStayWithinMaxFiles(t *testing.T) {
	sc := loadSchemas(t)
	opt := testOptions() // MaxFiles 4
	base := newFacade(t, opt) + "/v1/host/workspace/files/"
	for i := range opt.MaxFiles - 1 {
		if a := call(t, http.MethodPut, base+"f"+strconv.Itoa(i), map[string]any{"content": "x"}); a.status != 200 {
			t.Fatalf("setup: %d %s", a.status, a.body)
		}
	}
	answers := race(12, func(i int) (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPut, base+"new"+strconv.Itoa(i), strings.NewReader(`{"content":"x"}`))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	})
	stored := 0
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("create %d: %v", i, a.err)
		}
		if a.status == 200 {
			stored++
			continue
		}
		got := answer{status: a.status, body: []byte(a.body)}
		_ = json.Unmarshal(got.body, &got.json)
		wantError(t, sc, "a create beyond maxFiles", got, http.StatusRequestEntityTooLarge, openwop.CodeTooLarge)
	}
	l := call(t, http.MethodGet, base[:len(base)-1], nil)
	if files, _ := l.json["files"].([]any); stored != 1 || len(files) != opt.MaxFiles {
		t.Fatalf("%d of 12 racing creates stored, %d files listed, want 1 and %d: %s", stored, len(files), opt.MaxFiles, l.body)
	}
}

// A path that names a directory of other files' paths ("notes" when "notes/a.md" exists)
// holds no file: a GET (live, ?version=N, a run's) and a DELETE answer it as a missing one,
// 404 not_found (RFC 0059 §C), with If-Match 409 currentVersion 0, never 400
// validation_error, which a client takes for a bad request of its own. A PUT there is
// still refused 400: Cairn keeps no file and directory under one name.
func TestADirectoryPathReadsAsAMissingFile(t *testing.T) {
	sc := loadSchemas(t)
	root := newFacade(t, testOptions())
	base := root + "/v1/host/workspace/files/"
	if a := call(t, http.MethodPut, base+"notes%2Fa.md", map[string]any{"content": "x"}); a.status != 200 {
		t.Fatalf("setup: %d %s", a.status, a.body)
	}
	run := call(t, http.MethodPost, root+"/v1/runs", map[string]any{"workflowId": "w"})
	if run.status != http.StatusCreated {
		t.Fatalf("run: %d %s", run.status, run.body)
	}
	for _, u := range []string{base + "notes", base + "notes?version=1", root + "/v1/runs/" + run.json["runId"].(string) + "/workspace/files/notes"} {
		wantError(t, sc, "GET "+u, call(t, http.MethodGet, u, nil), http.StatusNotFound, openwop.CodeNotFound)
	}
	wantError(t, sc, "DELETE of a directory", call(t, http.MethodDelete, base+"notes", nil), http.StatusNotFound, openwop.CodeNotFound)
	wantConflict(t, sc, "DELETE If-Match of a directory", call(t, http.MethodDelete, base+"notes", nil, "If-Match", `"g4"`), 0)
	wantError(t, sc, "PUT of a directory", call(t, http.MethodPut, base+"notes", map[string]any{"content": "x"}), http.StatusBadRequest, openwop.CodeValidation)
	if g := call(t, http.MethodGet, base+"notes%2Fa.md", nil); g.status != 200 {
		t.Fatalf("the file under the directory: %d %s", g.status, g.body)
	}
}
