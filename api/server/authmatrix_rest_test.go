package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/workbench/auth"
)

// The REST columns of the authorization matrix (authmatrix_test.go), over every route
// api/rest/openapi.json documents and the key routes of the admin listener.

// documentedRoutes returns every "METHOD /path" of api/rest/openapi.json, sorted.
func documentedRoutes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(rest.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for p, item := range doc.Paths {
		for m := range item {
			if slices.Contains([]string{"get", "head", "put", "post", "delete", "patch"}, m) {
				out = append(out, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(out)
	if len(out) < 30 {
		t.Fatalf("openapi.json documents %d operations: the walk is broken", len(out))
	}
	return out
}

// fillRoute puts values into a route template's parameters.
func fillRoute(route, agent string) string {
	return strings.NewReplacer("{agent}", agent, "{id}", "w", "{path}", "input/dir/x.txt", "{operation_id}", "op-1").Replace(route)
}

// restFixture is the state the REST matrix runs on: root b on both nodes, root a on full
// with two snapshots, a commit and a restore, and the ids a caller of another root could
// have learnt (cursors, a snapshot id, an operation id, a commit identity).
type restFixture struct {
	*matrix
	snapID, opID, commitID string
	proposalID             string            // a pending proposal of root a's w
	cursors                map[string]string // route kind → a first page's next_cursor, minted in root a by the admin key
	cursorTargets          map[string]func(agent, cursor string) (method, target, body string)
}

const commitBody = `{"manifest":{"run":1},"content_digest_uri":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`

func newRESTFixture(t *testing.T) *restFixture {
	t.Helper()
	f := &restFixture{matrix: newMatrix(t)}
	for _, n := range []*matrixNode{f.full, f.twin} {
		mustReply(t, n.name+": b: put", f.on(t, n, keyAdmin, "PUT", "/v1/agents/b/workbenches/w/files/input/dir/x.txt", "hello b\nhello again\n"), 201)
		mustReply(t, n.name+": b: put", f.on(t, n, keyAdmin, "PUT", "/v1/agents/b/workbenches/w/files/input/dir/y.txt", "y"), 201)
	}
	full := f.full
	admin := func(what, method, target, body string, status int) reply {
		t.Helper()
		return mustReply(t, "a: "+what, f.on(t, full, keyAdmin, method, target, body), status)
	}
	admin("put", "PUT", "/v1/agents/a/workbenches/w/files/input/dir/x.txt", "hello x\nhello again\n", 201)
	admin("put", "PUT", "/v1/agents/a/workbenches/w/files/input/dir/y.txt", "y", 201)
	f.snapID = fmt.Sprint(admin("snapshot", "POST", "/v1/agents/a/workbenches/w/snapshots", `{"name":"s1"}`, 201).json["snapshot_id"])
	admin("snapshot", "POST", "/v1/agents/a/workbenches/w/snapshots", `{"name":"s2"}`, 201)
	f.commitID, _ = admin("commit", "POST", "/v1/agents/a/workbenches/w/commit", commitBody, 200).json["commit_identity"].(string)
	f.opID, _ = admin("restore", "POST", "/v1/agents/a/workbenches/w/restore", `{"destination_id":"w2","at_snapshot":"s1"}`, 200).json["operation_id"].(string)
	f.proposalID, _ = admin("propose", "POST", "/v1/agents/a/workbenches/w/proposals", `{"path":"input/dir/x.txt","text":"proposed","request_id":"fixture"}`, 201).json["proposal_id"].(string)

	f.cursorTargets = map[string]func(agent, cursor string) (string, string, string){
		"list": func(agent, c string) (string, string, string) {
			return "GET", "/v1/agents/" + agent + "/workbenches/w/list?path=input/dir&limit=1" + cursorQuery(c), ""
		},
		"snapshots": func(agent, c string) (string, string, string) {
			return "GET", "/v1/agents/" + agent + "/workbenches/w/snapshots?limit=1" + cursorQuery(c), ""
		},
		"search": func(agent, c string) (string, string, string) {
			return "POST", "/v1/agents/" + agent + "/search", `{"predicates":[{"field":"artifact.name","op":"eq","value":"x.txt"}],"limit":1` + cursorField(c) + `}`
		},
		"find": func(agent, c string) (string, string, string) {
			return "POST", "/v1/agents/" + agent + "/find", `{"limit":1` + cursorField(c) + `}`
		},
		"grep": func(agent, c string) (string, string, string) {
			return "POST", "/v1/agents/" + agent + "/workbenches/w/grep", `{"pattern":"hello","recursive":true,"limit":1` + cursorField(c) + `}`
		},
	}
	f.cursors = map[string]string{}
	for kind, target := range f.cursorTargets {
		m, u, b := target("a", "")
		c, _ := admin("first page of "+kind, m, u, b, 200).json["next_cursor"].(string)
		if c == "" {
			t.Fatalf("%s: no next_cursor on the first page", kind)
		}
		f.cursors[kind] = c
	}
	return f
}

func cursorQuery(c string) string {
	if c == "" {
		return ""
	}
	return "&cursor=" + url.QueryEscape(c)
}

func cursorField(c string) string {
	if c == "" {
		return ""
	}
	return `,"cursor":"` + c + `"`
}

// restRequest is one request of the matrix, on root a.
type restRequest struct {
	route          string // the documented route it exercises
	method, target string
	body           string
	headers        []string
	// creates: on a root that does not exist the request succeeds (it creates the root);
	// every other write fails there without changing anything.
	creates bool
	// status is what the admin key gets (0: 200).
	status int
}

func (r restRequest) write() bool {
	return r.method != "GET" && r.method != "HEAD" && !readOnlyPost(r.route)
}

func (r restRequest) cursor() bool {
	return strings.Contains(r.target, "cursor=") || strings.Contains(r.body, `"cursor"`)
}

func (r restRequest) String() string { return r.method + " " + r.target }

// readOnlyPost: the POST routes that only read (queries with a JSON body).
func readOnlyPost(route string) bool {
	for _, s := range []string{"/grep", "/search", "/aggregate", "/catalog", "/find"} {
		if strings.HasSuffix(route, s) {
			return true
		}
	}
	return false
}

func (f *restFixture) send(t *testing.T, n *matrixNode, key string, r restRequest) reply {
	t.Helper()
	return f.on(t, n, key, r.method, r.target, r.body, r.headers...)
}

// requests are the matrix's requests on root a: every read first, then the writes in an
// order in which each succeeds for the admin key.
func (f *restFixture) requests() []restRequest {
	const wb = "/v1/agents/{agent}/workbenches/{id}"
	a := "/v1/agents/a/workbenches/w"
	file := a + "/files/input/dir/x.txt"
	reqs := []restRequest{
		{route: wb, method: "GET", target: a},
		{route: wb, method: "HEAD", target: a},
		{route: wb, method: "GET", target: a + "?at_snapshot=s1"},
		{route: wb, method: "GET", target: a + "?at_snapshot=" + f.snapID},
		{route: wb + "/list", method: "GET", target: a + "/list?path=input/dir"},
		{route: wb + "/list", method: "HEAD", target: a + "/list?path=input/dir"},
		{route: wb + "/list", method: "GET", target: a + "/list?path=input&at_snapshot=" + f.snapID},
		{route: wb + "/files/{path}", method: "GET", target: file},
		{route: wb + "/files/{path}", method: "HEAD", target: file},
		{route: wb + "/files/{path}", method: "GET", target: file, headers: []string{"Range", "bytes=0-3"}, status: 206},
		{route: wb + "/files/{path}", method: "GET", target: file + "?at_snapshot=s1"},
		{route: wb + "/files/{path}", method: "GET", target: a + "/files/input/dir/missing.txt", status: 404},
		{route: wb + "/history", method: "GET", target: a + "/history?path=input/dir/x.txt"},
		{route: wb + "/grep", method: "POST", target: a + "/grep", body: `{"pattern":"hello","recursive":true}`},
		{route: wb + "/snapshots", method: "GET", target: a + "/snapshots"},
		{route: wb + "/snapshots", method: "HEAD", target: a + "/snapshots"},
		{route: wb + "/snapshots", method: "GET", target: a + "/snapshots?limit=5"},
		{route: wb + "/commits", method: "GET", target: a + "/commits"},
		{route: wb + "/commits", method: "HEAD", target: a + "/commits"},
		{route: wb + "/commits", method: "GET", target: a + "/commits?limit=5"},
		{route: "/v1/agents/{agent}/search", method: "POST", target: "/v1/agents/a/search", body: `{"predicates":[{"field":"artifact.ext","op":"eq","value":"txt"}]}`},
		{route: "/v1/agents/{agent}/search", method: "POST", target: "/v1/agents/a/search", body: `{"id":"w","facets":["artifact.ext"]}`},
		{route: "/v1/agents/{agent}/aggregate", method: "POST", target: "/v1/agents/a/aggregate", body: `{"measures":[{"name":"n","op":"count"}]}`},
		{route: "/v1/agents/{agent}/catalog", method: "POST", target: "/v1/agents/a/catalog", body: `{"include_facets":true}`},
		{route: "/v1/agents/{agent}/find", method: "POST", target: "/v1/agents/a/find", body: `{"include_manifest":true}`},
		{route: "/v1/agents/{agent}/restores/{operation_id}", method: "GET", target: "/v1/agents/a/restores/" + f.opID},
		{route: "/v1/agents/{agent}/workbenches", method: "GET", target: "/v1/agents/a/workbenches"},
		{route: "/v1/agents/{agent}/workbenches", method: "HEAD", target: "/v1/agents/a/workbenches"},
		{route: "/v1/agents/{agent}/usage", method: "GET", target: "/v1/agents/a/usage"},
		{route: "/v1/agents/{agent}/usage", method: "HEAD", target: "/v1/agents/a/usage"},
		{route: wb + "/proposals", method: "GET", target: a + "/proposals?state=pending"},
		{route: wb + "/proposals", method: "HEAD", target: a + "/proposals"},
		{route: wb + "/proposals/{proposal_id}", method: "GET", target: a + "/proposals/" + f.proposalID + "?include_body=true"},
		{route: wb + "/proposals/{proposal_id}", method: "HEAD", target: a + "/proposals/" + f.proposalID},
		{route: wb + "/judgments", method: "GET", target: a + "/judgments"},
		{route: wb + "/judgments", method: "HEAD", target: a + "/judgments"},
		{route: wb + "/diff", method: "GET", target: a + "/diff?path=input/dir/x.txt&from=live"},
		{route: wb + "/diff", method: "HEAD", target: a + "/diff?from=live"},
		// The change feed, up to what it holds (a followed stream would never end).
		{route: "/v1/agents/{agent}/events", method: "GET", target: "/v1/agents/a/events?follow=false"},
	}
	route := map[string]string{"list": wb + "/list", "snapshots": wb + "/snapshots", "search": "/v1/agents/{agent}/search",
		"find": "/v1/agents/{agent}/find", "grep": wb + "/grep"}
	for _, kind := range slices.Sorted(mapKeys(f.cursors)) {
		m, u, b := f.cursorTargets[kind]("a", f.cursors[kind])
		reqs = append(reqs, restRequest{route: route[kind], method: m, target: u, body: b})
	}
	return append(reqs,
		restRequest{route: wb, method: "PUT", target: "/v1/agents/a/workbenches/w9", creates: true, status: 201},
		restRequest{route: wb + "/files/{path}", method: "PUT", target: file, body: "new", creates: true},
		restRequest{route: wb + "/files/{path}", method: "POST", target: file + "?append", body: "more", creates: true},
		restRequest{route: wb + "/snapshots", method: "POST", target: a + "/snapshots", body: `{"name":"s3"}`, status: 201},
		restRequest{route: wb + "/snapshots/renew", method: "POST", target: a + "/snapshots/renew", body: `{"name":"s1","ttl_days":9}`},
		restRequest{route: wb + "/snapshots/retire", method: "POST", target: a + "/snapshots/retire", body: `{"name":"s2"}`},
		restRequest{route: wb + "/restore", method: "POST", target: a + "/restore", body: `{"destination_id":"w3","at_snapshot":"s1"}`},
		restRequest{route: wb + "/restore", method: "POST", target: a + "/restore", body: `{"destination_id":"w4","at_commit":"` + f.commitID + `"}`},
		restRequest{route: wb + "/proposals", method: "POST", target: a + "/proposals", body: `{"path":"input/dir/p.txt","text":"p","request_id":"matrix"}`, status: 201},
		restRequest{route: wb + "/proposals/{proposal_id}/decision", method: "POST", target: a + "/proposals/" + f.proposalID + "/decision", body: `{"disposition":"reject","submission_id":"matrix"}`},
		// Attempts: a rewind's preview, a fork of w, its merge's preview, its discard.
		restRequest{route: wb + "/rewind", method: "POST", target: a + "/rewind", body: `{"target":"snapshot:s1","dry_run":true}`},
		restRequest{route: wb + "/fork", method: "POST", target: a + "/fork", body: `{"fork":"wf","at":"snapshot:s1"}`},
		restRequest{route: wb + "/merge", method: "POST", target: "/v1/agents/a/workbenches/wf/merge", body: `{"dry_run":true}`},
		restRequest{route: wb + "/discard", method: "POST", target: "/v1/agents/a/workbenches/wf/discard"},
		restRequest{route: wb + "/files/{path}", method: "DELETE", target: file},
		restRequest{route: wb, method: "DELETE", target: "/v1/agents/a/workbenches/w"},
		restRequest{route: wb + "/commit", method: "POST", target: a + "/commit", body: commitBody, creates: true},
	)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestAuthMatrixOverEveryRESTRoute: every route of a root with every column.
func TestAuthMatrixOverEveryRESTRoute(t *testing.T) {
	f := newRESTFixture(t)
	reqs := f.requests()
	covered := map[string]bool{}
	for _, r := range reqs {
		covered[r.method+" "+r.route] = true
	}
	for _, op := range documentedRoutes(t) {
		method, path, _ := strings.Cut(op, " ")
		if strings.HasPrefix(path, "/v1/agents/") && !strings.HasSuffix(path, "/mcp") && !covered[method+" "+path] {
			t.Errorf("%s: not in the matrix", op)
		}
	}
	missingWorkbench := mustReply(t, "twin: a's workbench", f.on(t, f.twin, keyAdmin, "GET", "/v1/agents/a/workbenches/w", ""), 404)
	if want := `{"status":"error","code":"NotFound","details":{},"message":"workbench \"w\" does not exist","retryable":false}` + "\n"; string(missingWorkbench.body) != want {
		t.Fatalf("a missing root's workbench: %s", missingWorkbench.body)
	}
	cells := 0
	unauthenticated := func(r restRequest) {
		t.Helper()
		for _, key := range unauthenticatedKeys {
			got := f.send(t, f.full, key, r)
			wantUnauthenticated(t, r.String(), key, r.method, got)
			sameReply(t, r.String()+": "+key+": an existing root vs a missing one", got, f.send(t, f.twin, key, r))
			cells += 2
		}
	}

	// Reads first: nothing changes either node until the writes below.
	for _, r := range reqs {
		if r.write() {
			continue
		}
		baseline := f.send(t, f.full, keyAdmin, r)
		if want := max(r.status, 200); baseline.status != want {
			t.Errorf("%s: admin key: %d %s, want %d", r, baseline.status, baseline.body, want)
		}
		if !r.cursor() {
			// A cursor is bound to the principal it was issued to: the read-only key
			// reading with its own first page is in TestAuthCursors.
			sameReply(t, r.String()+": read-only key", f.send(t, f.full, keyRO, r), baseline)
			cells++
		}
		missing := f.send(t, f.twin, keyAdmin, r)
		sameReply(t, r.String()+": another root's key vs a root that does not exist", f.send(t, f.full, keyOther, r), missing)
		switch bound := f.send(t, f.full, keyBound, r); {
		case rootWide(r.route):
			wantRootWideDenied(t, r.String(), f.ids[keyBound], r.method, bound)
		case r.route == "/v1/agents/{agent}/events":
			// The key's own root exists: its feed is open, and holds nothing the key reaches.
			if bound.status != 200 || strings.Contains(string(bound.body), "data:") {
				t.Errorf("%s: a key bound to another workbench follows root a's feed: %d %s", r, bound.status, bound.body)
			}
		default:
			// Root-wide queries read the key's own root, which exists: its shard version
			// is all they tell of it.
			sameReplyBut(t, r.String()+": a key bound to another workbench vs a root that does not exist", bound, missing, "read_version")
		}
		sameReply(t, r.String()+": another root's key, the same on the twin", f.send(t, f.twin, keyOther, r), missing)
		// A key bound to root a's outputs, where the fixture holds nothing: no route tells
		// it of a file below input, and root-wide records are refused.
		prefix := f.send(t, f.full, keyPrefix, r)
		if rootWide(r.route) {
			mustReply(t, r.String()+": a prefix-bound key asks for a root-wide record", prefix, 403)
		}
		wantNoFixturePath(t, r.String()+": a prefix-bound key", prefix)
		wo := f.send(t, f.full, keyWO, r)
		if r.method == "HEAD" {
			mustReply(t, r.String()+": write-only key", wo, 403)
		} else if wo.status != 403 || string(wo.body) != permissionDenied(f.ids[keyWO], "read", auth.ScopeRead) {
			t.Errorf("%s: write-only key: %d %s", r, wo.status, wo.body)
		}
		unauthenticated(r)
		cells += 5
	}
	// Writes: the read-only key is refused with 403, another root's with the NotFound a
	// root that does not exist answers (for a write that fails there: the same bytes).
	for _, r := range reqs {
		if !r.write() {
			continue
		}
		ro := f.send(t, f.full, keyRO, r)
		if ro.status != 403 || string(ro.body) != permissionDenied(f.ids[keyRO], "change", auth.ScopeWrite) {
			t.Errorf("%s: read-only key: %d %s", r, ro.status, ro.body)
		}
		other, bound := f.send(t, f.full, keyOther, r), f.send(t, f.full, keyBound, r)
		if r.creates {
			want := missingWorkbench
			if strings.HasSuffix(r.target, "/w9") {
				want = mustReply(t, "twin: w9", f.on(t, f.twin, keyAdmin, "GET", "/v1/agents/a/workbenches/w9", ""), 404)
			}
			sameReply(t, r.String()+": another root's key", other, want)
			sameReply(t, r.String()+": a key bound to another workbench", bound, want)
		} else {
			missing := f.send(t, f.twin, keyAdmin, r)
			sameReply(t, r.String()+": another root's key vs a root that does not exist", other, missing)
			sameReply(t, r.String()+": a key bound to another workbench vs a root that does not exist", bound, missing)
		}
		// A prefix-bound key's write that names a path outside its prefixes, or acts on
		// a whole workbench, is refused; a write it may do is left out here (it would
		// change the fixture the admin key's writes below expect).
		if !strings.HasSuffix(r.target, "/w9") && !strings.Contains(r.route, "/snapshots") {
			if p := f.send(t, f.full, keyPrefix, r); strings.Contains(r.body, `"dry_run":true`) {
				wantNoFixturePath(t, r.String()+": a prefix-bound key's preview", p)
			} else if p.status != 403 && p.status != 404 {
				t.Errorf("%s: a prefix-bound key: %d %s, want 403 or 404", r, p.status, p.body)
			}
		}
		unauthenticated(r)
		cells += 4
	}
	// Nothing of the refused writes happened.
	after := mustReply(t, "full: file", f.on(t, f.full, keyAdmin, "GET", "/v1/agents/a/workbenches/w/files/input/dir/x.txt", ""), 200)
	if string(after.body) != "hello x\nhello again\n" {
		t.Errorf("the file changed: %q", after.body)
	}
	mustReply(t, "full: w9", f.on(t, f.full, keyAdmin, "GET", "/v1/agents/a/workbenches/w9", ""), 404)
	mustReply(t, "twin: root a", f.on(t, f.twin, keyAdmin, "GET", "/v1/agents/a/workbenches/w", ""), 404)
	// The admin key's writes succeed, in order; the write-only key writes too.
	for _, r := range reqs {
		if !r.write() {
			continue
		}
		if got, want := f.send(t, f.full, keyAdmin, r), max(r.status, 200); got.status != want {
			t.Errorf("%s: admin key: %d %s, want %d", r, got.status, got.body, want)
		}
		cells++
	}
	mustReply(t, "write-only key writes", f.on(t, f.full, keyWO, "PUT", "/v1/agents/a/workbenches/w/files/input/new.txt", "n"), 201)
	t.Logf("REST matrix: %d requests, %d checked cells", len(reqs), cells)
}

// wantNoFixturePath fails when r tells anything of root a's files below input (their
// names, directory or contents).
func wantNoFixturePath(t *testing.T, what string, r reply) {
	t.Helper()
	body := strings.ReplaceAll(string(r.body), `"pattern":"hello"`, "") // grep echoes its own pattern
	for _, s := range []string{"x.txt", "y.txt", "input/dir", "hello", `"dir"`} {
		if strings.Contains(body, s) {
			t.Errorf("%s: the answer tells of %s: %d %s", what, s, r.status, r.body)
		}
	}
}

// sameReplyBut is sameReply for JSON answers, but for the top-level field named ignore
// (and the Content-Length it changes).
func sameReplyBut(t *testing.T, what string, got, want reply, ignore string) {
	t.Helper()
	if got.json == nil || want.json == nil {
		sameReply(t, what, got, want)
		return
	}
	g, w := got.header.Clone(), want.header.Clone()
	for _, h := range []http.Header{g, w} {
		h.Del("Date")
		h.Del("Content-Length")
	}
	gj, wj := maps.Clone(got.json), maps.Clone(want.json)
	delete(gj, ignore)
	delete(wj, ignore)
	if got.status != want.status || fmt.Sprint(gj) != fmt.Sprint(wj) || fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("%s (but %s):\n got %d %v %s\nwant %d %v %s", what, ignore, got.status, g, got.body, want.status, w, want.body)
	}
}

// rootWide: the routes of a root's root-wide records, which a key that reaches one
// workbench of the root may not read (PermissionDenied).
func rootWide(route string) bool { return route == "/v1/agents/{agent}/usage" }

// wantRootWideDenied fails unless r is the 403 of principal id, bound to workbench "other"
// of root a, asking for a root-wide record (a HEAD answer has no body).
func wantRootWideDenied(t *testing.T, what, id, method string, r reply) {
	t.Helper()
	want := fmt.Sprintf(`{"status":"error","code":"PermissionDenied","details":{"workbench":"other"},"message":"principal \"%s\" may use only workbench \"other\" of agent root \"a\": its usage needs a key for the whole root","retryable":false}`+"\n", id)
	if method == "HEAD" {
		want = ""
	}
	if r.status != 403 || string(r.body) != want {
		t.Errorf("%s: a key bound to another workbench: %d %s, want 403 %s", what, r.status, r.body, want)
	}
}

// TestAuthMatrixUnauthenticatedOnEveryRoute: every documented operation, on the client
// listener, with every credential that names no live key: 401 before routing, the same on
// a node with and without the root; only the probes (and /metrics over loopback) are open.
func TestAuthMatrixUnauthenticatedOnEveryRoute(t *testing.T) {
	m := newMatrix(t)
	open := map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /metrics": true}
	n := 0
	for _, op := range append(documentedRoutes(t), "GET /v1/no/such/route", "POST /v1/agents/a/no-such-route") {
		method, path, _ := strings.Cut(op, " ")
		target := fillRoute(path, "a")
		for _, key := range unauthenticatedKeys {
			got := m.on(t, m.full, key, method, target, "")
			n++
			if open[op] {
				if got.status != 200 {
					t.Errorf("%s: %s: %d, want the open route's 200", op, key, got.status)
				}
				continue
			}
			wantUnauthenticated(t, op, key, method, got)
			sameReply(t, op+": "+key+": a missing root", m.on(t, m.full, key, method, fillRoute(path, "zz"), ""), got)
			sameReply(t, op+": "+key+": the twin", m.on(t, m.twin, key, method, target, ""), got)
		}
	}
	t.Logf("%d operations × %d credentials", n/len(unauthenticatedKeys), len(unauthenticatedKeys))
}

// TestAuthMatrixOverEveryAdminRoute: the admin listener's routes (openapi.json's
// /v1/admin/... and the key routes): 401 before routing for no live key, 403 for a key
// without the admin scope, served for the admin key.
func TestAuthMatrixOverEveryAdminRoute(t *testing.T) {
	m := newMatrix(t)
	// want is the admin key's status when it is not a 2xx success: a cluster-only route
	// of the matrix's embedded node answers its own 404 (not the unknown route's).
	type adminRequest struct {
		method, path, body string
		want               int
	}
	throwaway := func() string {
		r := m.send(t, m.full.adminURL, keyAdmin, "POST", KeysPath, `{"name":"throwaway","agents":["a"],"scopes":["workspace:read"]}`)
		id, _ := r.json["id"].(string)
		if r.status != 201 || id == "" {
			t.Fatalf("create a key: %d %s", r.status, r.body)
		}
		return id
	}
	reqs := []adminRequest{
		{"POST", "/v1/admin/gc", `{"dry_run":true}`, 0},
		{"GET", KeysPath, "", 0},
		{"POST", KeysPath, `{"name":"made by the matrix","agents":["a"],"scopes":["workspace:read"]}`, 0},
		{"POST", KeysRevokePath, "", 0}, // body: a fresh key's id, per request
		{"GET", "/v1/admin/quota?agent=zz", "", 0},
		{"PUT", "/v1/admin/quota", `{"agent":"zz","max_files":100}`, 0},
		{"GET", "/v1/admin/retention?agent=zz", "", 0},
		{"PUT", "/v1/admin/retention", `{"agent":"zz","versions":5}`, 0},
		{"POST", "/v1/admin/purge", `{"agent":"zz"}`, 0},
		// The matrix's nodes are embedded: every cluster route answers 409 not_a_cluster.
		{"GET", ShardRecoveryPath + "?shard=0&node=n", "", 409},
		{"POST", ShardRecoveryPath, `{"shard":0,"node":"n"}`, 409},
		{"POST", "/v1/admin/cluster/shards", `{"add":1,"expect_shards":1}`, 409},
		{"POST", "/v1/admin/cluster/root-moves", `{"root":"zz","to":1}`, 409},
		{"GET", "/v1/admin/cluster/root-moves", "", 409},
		{"GET", ClusterStatusPath, "", 409},
		{"POST", LeavingPath, `{"node":"n"}`, 409},
		{"GET", RebalancePath, "", 409},
		{"POST", RebalancePath, `{"enabled":true}`, 409},
	}
	covered := map[string]bool{} // "METHOD path" and path
	for _, r := range reqs {
		path, _, _ := strings.Cut(r.path, "?")
		covered[r.method+" "+path], covered[path] = true, true
	}
	for _, op := range documentedRoutes(t) {
		if _, path, _ := strings.Cut(op, " "); strings.HasPrefix(path, "/v1/admin/") && !covered[op] {
			t.Errorf("%s: not in the matrix", op)
		}
	}
	for path := range keyRoutes(nil) {
		if !covered[path] {
			t.Errorf("key route %s: not in the matrix", path)
		}
	}
	const forbidden = `{"status":"error","code":"PermissionDenied","details":{"scope":"admin"},"message":"admin routes need a key with the admin scope","retryable":false}` + "\n"
	cells := 0
	for _, r := range reqs {
		body := func() string {
			if r.path == KeysRevokePath {
				return `{"id":"` + throwaway() + `"}`
			}
			return r.body
		}
		what := r.method + " " + r.path
		for _, key := range unauthenticatedKeys {
			got := m.send(t, m.full.adminURL, key, r.method, r.path, body())
			wantUnauthenticated(t, what, key, r.method, got)
			sameReply(t, what+": "+key+": an unknown admin route", m.send(t, m.full.adminURL, key, r.method, "/v1/admin/no-such-route", ""), got)
			cells++
		}
		for _, key := range []string{keyRO, keyWO, keyOther} {
			got := m.send(t, m.full.adminURL, key, r.method, r.path, body())
			if got.status != 403 || string(got.body) != forbidden {
				t.Errorf("%s: %s: %d %s", what, key, got.status, got.body)
			}
			cells++
		}
		got := m.send(t, m.full.adminURL, keyAdmin, r.method, r.path, body())
		switch {
		case r.want == 409:
			if d, _ := got.json["details"].(map[string]any); got.status != 409 || d["reason"] != "not_a_cluster" {
				t.Errorf("%s: admin key: %d %s, want 409 not_a_cluster", what, got.status, got.body)
			}
		case r.want != 0:
			unknown := m.send(t, m.full.adminURL, keyAdmin, r.method, "/v1/admin/no-such-route", "")
			if got.status != r.want || got.json["code"] != "NotFound" || string(got.body) == string(unknown.body) {
				t.Errorf("%s: admin key: %d %s, want the route's own %d", what, got.status, got.body, r.want)
			}
		case got.status/100 != 2 || got.json["status"] != "success" && r.path != "/v1/admin/gc":
			t.Errorf("%s: admin key: %d %s", what, got.status, got.body)
		}
		cells++
	}
	// The admin listener's routes are not on the client listener, whatever the key.
	mustReply(t, "admin GC on the client listener", m.on(t, m.full, keyAdmin, "POST", "/v1/admin/gc", `{"dry_run":true}`), 404)
	t.Logf("admin matrix: %d requests, %d checked cells", len(reqs), cells)
}

// TestAuthCursors: a cursor works for the principal and root it was issued for; in
// another root, or for another principal, it fails exactly as a forged one does.
func TestAuthCursors(t *testing.T) {
	f := newRESTFixture(t)
	for _, kind := range slices.Sorted(mapKeys(f.cursors)) {
		target := f.cursorTargets[kind]
		c := f.cursors[kind]
		send := func(n *matrixNode, key, agent, cursor string) reply {
			m, u, b := target(agent, cursor)
			return f.on(t, n, key, m, u, b)
		}
		// The issuing principal reads the second page; the read-only key its own.
		second := mustReply(t, kind+": second page", send(f.full, keyAdmin, "a", c), 200)
		first := mustReply(t, kind+": read-only first page", send(f.full, keyRO, "a", ""), 200)
		roCursor, _ := first.json["next_cursor"].(string)
		sameReply(t, kind+": read-only key, its own cursor", send(f.full, keyRO, "a", roCursor), second)
		forged := send(f.full, keyAdmin, "a", forge(c))
		if forged.status != 400 || forged.json["code"] != "InvalidArguments" {
			t.Fatalf("%s: a forged cursor: %d %s", kind, forged.status, forged.body)
		}
		sameReply(t, kind+": another principal's cursor", send(f.full, keyRO, "a", c), send(f.full, keyRO, "a", forge(c)))
		sameReply(t, kind+": a cursor of root a in root b", send(f.full, keyAdmin, "b", c), send(f.full, keyAdmin, "b", forge(c)))
		sameReply(t, kind+": root a's cursor, by another root's key", send(f.full, keyOther, "a", c), send(f.twin, keyAdmin, "a", c))
		sameReply(t, kind+": root a's cursor, in its own root b", send(f.full, keyOther, "b", c), send(f.full, keyOther, "b", forge(c)))
	}
}

// forge breaks a cursor's signature, keeping its form.
func forge(cursor string) string {
	payload, sig, _ := strings.Cut(cursor, ".")
	b := []byte(sig)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return payload + "." + string(b)
}

// TestAuthIdsOfAnotherRoot: snapshot ids, operation ids and commit identities of root a,
// used in root b by b's key, answer as ids that exist nowhere (root b on twin).
func TestAuthIdsOfAnotherRoot(t *testing.T) {
	f := newRESTFixture(t)
	b := "/v1/agents/b/workbenches/w"
	for _, r := range []restRequest{
		{method: "GET", target: b + "/files/input/dir/x.txt?at_snapshot=" + f.snapID},
		{method: "GET", target: b + "?at_snapshot=" + f.snapID},
		{method: "GET", target: b + "/list?at_snapshot=" + f.snapID},
		{method: "GET", target: b + "/files/input/dir/x.txt?at_snapshot=s1"},
		{method: "POST", target: b + "/snapshots/renew", body: `{"snapshot_id":` + f.snapID + `}`},
		{method: "POST", target: b + "/snapshots/retire", body: `{"snapshot_id":` + f.snapID + `}`},
		{method: "POST", target: b + "/restore", body: `{"destination_id":"w5","at_snapshot":` + f.snapID + `}`},
		{method: "POST", target: b + "/restore", body: `{"destination_id":"w5","at_commit":"` + f.commitID + `"}`},
		{method: "GET", target: "/v1/agents/b/restores/" + f.opID},
	} {
		got := f.send(t, f.full, keyOther, r)
		if got.status < 400 {
			t.Errorf("%s: %d %s", r, got.status, got.body)
		}
		sameReply(t, r.String(), got, f.send(t, f.twin, keyOther, r))
	}
}
