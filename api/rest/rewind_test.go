package rest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// Rewind over REST, every request and answer checked against the OpenAPI document:
// preview, apply with the token (idempotent under Idempotency-Key), the files read back
// byte for byte; a write between a preview and its apply is 409 Conflict naming the path.
func TestRewindOverREST(t *testing.T) {
	c, wb := rewoundFile(t)
	expect(t, c.call(true, "PUT", wb+"/files/outputs/new.txt", "new\n"), 201, "")

	p := c.post(true, wb+"/rewind", `{"target":"snapshot:before","prefix":"outputs","dry_run":true,"file_diffs":true}`)
	expect(t, p, 200, "")
	if got := fmt.Sprint(p.json["counts"]); got != "map[added:0 changed:1 removed:1]" {
		t.Fatalf("preview counts = %s: %s", got, p.body)
	}
	tok := p.json["token"].(string)
	apply := fmt.Sprintf(`{"target":"snapshot:before","prefix":"outputs","token":%q}`, tok)
	a := c.call(true, "POST", wb+"/rewind", apply, "Content-Type", "application/json", "Idempotency-Key", "rw-1")
	expect(t, a, 200, "")
	again := c.call(true, "POST", wb+"/rewind", apply, "Content-Type", "application/json", "Idempotency-Key", "rw-1")
	expect(t, again, 200, "")
	if again.json["replayed"] != true || again.json["generation"] != a.json["generation"] ||
		fmt.Sprint(again.json["changes"]) != fmt.Sprint(a.json["changes"]) || fmt.Sprint(again.json["counts"]) != fmt.Sprint(a.json["counts"]) {
		t.Fatalf("retry = %s, want the first apply %s replayed", again.body, a.body)
	}
	if r := c.call(true, "GET", wb+"/files/outputs/r.txt", ""); string(r.body) != "r1\n" {
		t.Fatalf("outputs/r.txt after the rewind = %q", r.body)
	}
	expect(t, c.call(false, "GET", wb+"/files/outputs/new.txt", ""), 404, "NotFound")

	// A concurrent writer between the preview and the apply.
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r3\n"), 200, "")
	p = c.post(true, wb+"/rewind", `{"target":"snapshot:before","dry_run":true}`)
	expect(t, p, 200, "")
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r4\n"), 200, "")
	conflict := c.post(true, wb+"/rewind", fmt.Sprintf(`{"target":"snapshot:before","token":%q}`, p.json["token"]))
	expect(t, conflict, 409, "Conflict")
	if d := conflict.json["details"].(map[string]any); fmt.Sprint(d["paths"]) != "[outputs/r.txt]" || d["reason"] != "stale" {
		t.Fatalf("conflict details = %v", d)
	}
	expect(t, c.post(false, wb+"/rewind", `{"target":"yesterday","dry_run":true}`), 400, "InvalidArguments")
	// The bounds are cairn_rewind's: a target past workbench.MaxRewindTargetBytes is refused
	// naming target, a 256-byte snapshot name is looked up, prefix "" is the whole workbench.
	long := c.post(false, wb+"/rewind", `{"target":"snapshot:`+strings.Repeat("n", 5000)+`","dry_run":true}`)
	if expect(t, long, 400, "InvalidArguments"); long.json["details"].(map[string]any)["field"] != "target" {
		t.Fatalf("a 5,000-byte target: %s", long.body)
	}
	expect(t, c.post(true, wb+"/rewind", `{"target":"snapshot:`+strings.Repeat("n", 256)+`","dry_run":true}`), 404, "SnapshotNotFound")
	whole := c.post(true, wb+"/rewind", `{"target":"snapshot:before","prefix":"","dry_run":true}`)
	if expect(t, whole, 200, ""); fmt.Sprint(whole.json["scope"]) != "map[whole:true]" {
		t.Fatalf("prefix \"\": %s", whole.body)
	}
	expect(t, c.post(false, wb+"/rewind", `{"target":"snapshot:before"}`), 400, "InvalidArguments")
	// A path list that came out empty names no file: refused, not the whole workbench.
	empty := c.post(false, wb+"/rewind", `{"target":"snapshot:before","paths":[],"dry_run":true}`)
	if expect(t, empty, 400, "InvalidArguments"); empty.json["details"].(map[string]any)["field"] != "paths" {
		t.Fatalf("paths []: %s", empty.body)
	}
	expect(t, c.post(true, "/v1/agents/a1/workbenches/nope/rewind", `{"target":"snapshot:before","dry_run":true}`), 404, "NotFound")
}

// A principal of another tenant gets the answer of a missing workbench, byte for byte.
func TestRewindOfAnotherTenantAnswersLikeAMissingWorkbench(t *testing.T) {
	srv := twoTenantServer(t)
	expect(t, do(t, "PUT", srv.URL+"/v1/agents/a/workbenches/w/files/x.txt", strings.NewReader("x")), 201, "")
	rewindAs := func(agent string) response {
		return do(t, "POST", srv.URL+"/v1/agents/"+agent+"/workbenches/w/rewind",
			strings.NewReader(`{"target":"time:2999-01-01T00:00:00Z","dry_run":true}`), "Content-Type", "application/json", "X-Tenant", "other")
	}
	hidden, missing := rewindAs("a"), rewindAs("nobody")
	expect(t, hidden, 404, "NotFound")
	if strings.ReplaceAll(string(hidden.body), `\"a\"`, `\"nobody\"`) != string(missing.body) {
		t.Fatalf("another tenant's workbench answers %s, a missing root %s", hidden.body, missing.body)
	}
}

// twoTenantServer serves the REST API of an in-process node to two principals with every
// scope: "owner", who may use root a, and, on a request with X-Tenant: other, "other",
// who may use only root b.
func twoTenantServer(t *testing.T) *httptest.Server {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{})
	h := rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := auth.Principal{ID: "owner", Agents: []string{"a"}, Scopes: auth.Scopes}
		if r.Header.Get("X-Tenant") == "other" {
			p = auth.Principal{ID: "other", Agents: []string{"b"}, Scopes: auth.Scopes}
		}
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A rewind's prefix is matched as a key's path prefixes are (workbench.RewindScope): a
// prefix naming a file takes that file, component-wise ("outputs/r" is not
// "outputs/r.txt"), and its guard covers the file. A commit or restore manifest is no
// prefix, as it is no path of a rewind.
func TestRewindPrefixNamingAFileTakesIt(t *testing.T) {
	c, wb := rewoundFile(t)

	if p := rewindPreview(t, c, wb, "outputs/r"); fmt.Sprint(p.json["counts"]) != "map[added:0 changed:0 removed:0]" {
		t.Fatalf("prefix outputs/r took a file it does not name: %s", p.body)
	}
	file := rewindPreview(t, c, wb, "outputs/r.txt")
	if fmt.Sprint(file.json["counts"]) != "map[added:0 changed:1 removed:0]" || fmt.Sprint(file.json["scope"]) != "map[prefix:outputs/r.txt]" {
		t.Fatalf("prefix naming a file: %s", file.body)
	}
	// A write to the file between the preview and the apply: the guard covers it.
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r3\n"), 200, "")
	stale := c.post(true, wb+"/rewind", fmt.Sprintf(`{"target":"snapshot:before","prefix":"outputs/r.txt","token":%q}`, file.json["token"]))
	if expect(t, stale, 409, "Conflict"); fmt.Sprint(stale.json["details"].(map[string]any)["paths"]) != "[outputs/r.txt]" {
		t.Fatalf("stale apply: %s", stale.body)
	}
	file = rewindPreview(t, c, wb, "outputs/r.txt")
	expect(t, c.post(true, wb+"/rewind", fmt.Sprintf(`{"target":"snapshot:before","prefix":"outputs/r.txt","token":%q}`, file.json["token"])), 200, "")
	if r := c.call(true, "GET", wb+"/files/outputs/r.txt", ""); string(r.body) != "r1\n" {
		t.Fatalf("outputs/r.txt after its rewind = %q", r.body)
	}
	r := c.post(false, wb+"/rewind", `{"target":"snapshot:before","prefix":"metadata/run_manifest.json","dry_run":true}`)
	if expect(t, r, 400, "InvalidArguments"); r.json["details"].(map[string]any)["field"] != "prefix" {
		t.Fatalf("prefix naming the run manifest: %s", r.body)
	}
}

// A trailing "/" on a rewind's prefix is dropped, as on a key's path prefixes: "outputs/"
// and "outputs" are one scope, so a preview under one is applied under the other. "/" and
// "outputs//" are still refused naming prefix.
func TestRewindPrefixTrailingSlash(t *testing.T) {
	c, wb := rewoundFile(t)
	dir := rewindPreview(t, c, wb, "outputs/")
	if fmt.Sprint(dir.json["counts"]) != "map[added:0 changed:1 removed:0]" || fmt.Sprint(dir.json["scope"]) != "map[prefix:outputs]" {
		t.Fatalf("prefix outputs/: %s", dir.body)
	}
	expect(t, c.post(true, wb+"/rewind", fmt.Sprintf(`{"target":"snapshot:before","prefix":"outputs","token":%q}`, dir.json["token"])), 200, "")
	if r := c.call(true, "GET", wb+"/files/outputs/r.txt", ""); string(r.body) != "r1\n" {
		t.Fatalf("outputs/r.txt after the rewind = %q", r.body)
	}
	for _, bad := range []string{"/", "outputs//"} {
		r := c.post(false, wb+"/rewind", fmt.Sprintf(`{"target":"snapshot:before","prefix":%q,"dry_run":true}`, bad))
		if expect(t, r, 400, "InvalidArguments"); r.json["details"].(map[string]any)["field"] != "prefix" {
			t.Fatalf("prefix %q: %s", bad, r.body)
		}
	}
}

// rewoundFile is a checked REST server whose workbench wb holds outputs/r.txt written
// twice, "r1\n" then "r2\n", with snapshot "before" between the two.
func rewoundFile(t *testing.T) (*checker, string) {
	t.Helper()
	c := newChecker(t)
	wb := "/v1/agents/a1/workbenches/w1"
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r1\n"), 201, "")
	expect(t, c.post(true, wb+"/snapshots", `{"name":"before"}`), 201, "")
	expect(t, c.call(true, "PUT", wb+"/files/outputs/r.txt", "r2\n"), 200, "")
	return c, wb
}

// rewindPreview previews a rewind of wb's prefix to snapshot "before".
func rewindPreview(t *testing.T, c *checker, wb, prefix string) response {
	t.Helper()
	p := c.post(true, wb+"/rewind", fmt.Sprintf(`{"target":"snapshot:before","prefix":%q,"dry_run":true}`, prefix))
	expect(t, p, 200, "")
	return p
}
