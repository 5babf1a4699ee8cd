package rest_test

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/api/workbench"
	"github.com/cairnstore/cairn/api/workbench/workbenchtest"
)

// The authorization matrix (issue 14, item 3): every REST route with the principals of
// workbenchtest (read-only on a, write-only on a, read-write on b only, everything), on
// two nodes: full holds roots b and a, twin holds the same root b (same commands, same
// shard versions) and no root a, and signs cursors with another key. Root a on twin is
// the baseline "a root that does not exist".

// accessNode serves a node's REST handler behind the test principal middleware.
func accessNode(t *testing.T, cursorKey []byte) *httptest.Server {
	t.Helper()
	n := workbenchtest.New(t, workbench.Config{InlineMaxBytes: 4096, CursorKey: cursorKey})
	srv := httptest.NewServer(workbenchtest.WithPrincipals(rest.NewHandler(n.Service, rest.Options{Ready: n.Shard.Ready, GC: n.Workers})))
	t.Cleanup(srv.Close)
	return srv
}

// as sends a request for principal p (its id; "" sends none).
func as(t *testing.T, srv *httptest.Server, p, method, target, body string, headers ...string) response {
	t.Helper()
	if p != "" {
		headers = append(headers, workbenchtest.PrincipalHeader, p)
	}
	var r *strings.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	if r == nil {
		return send(t, method, srv.URL+target, nil, headers...)
	}
	return send(t, method, srv.URL+target, r, headers...)
}

// sameAnswer fails unless got and want have the same status, headers (but Date) and
// body bytes.
func sameAnswer(t *testing.T, what string, got, want response) {
	t.Helper()
	if got.status != want.status || string(got.body) != string(want.body) {
		t.Errorf("%s:\n got %d %s\nwant %d %s", what, got.status, got.body, want.status, want.body)
		return
	}
	g, w := got.header.Clone(), want.header.Clone()
	g.Del("Date")
	w.Del("Date")
	if fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("%s: headers\n got %v\nwant %v", what, g, w)
	}
}

func mustStatus(t *testing.T, what string, r response, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.status, status, r.body)
	}
	return r
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

// accessFixture is the state the matrix runs on: what full holds, and the ids a caller
// of another root could have learnt (cursors, snapshot ids, an operation id, a commit
// identity).
type accessFixture struct {
	full, twin    *httptest.Server
	snapID, opID  string
	commitID      string
	cursors       map[string]string // route kind → a first page's next_cursor, minted in root a by Everything
	cursorTargets map[string]func(agent, cursor string) (method, target, body string)
}

const all = "k-all" // workbenchtest.Everything

func newAccessFixture(t *testing.T) *accessFixture {
	f := &accessFixture{full: accessNode(t, nil), twin: accessNode(t, []byte("another cursor key, 32 bytes...."))}
	// Root b, the same on both nodes: the principal of root b works there.
	for _, srv := range []*httptest.Server{f.full, f.twin} {
		mustStatus(t, "b: put", as(t, srv, all, "PUT", "/v1/agents/b/workbenches/w/files/input/dir/x.txt", "hello b\nhello again\n"), 201)
		mustStatus(t, "b: put", as(t, srv, all, "PUT", "/v1/agents/b/workbenches/w/files/input/dir/y.txt", "y"), 201)
	}
	// Root a, on full only.
	full := f.full
	mustStatus(t, "a: put", as(t, full, all, "PUT", "/v1/agents/a/workbenches/w/files/input/dir/x.txt", "hello x\nhello again\n"), 201)
	mustStatus(t, "a: put", as(t, full, all, "PUT", "/v1/agents/a/workbenches/w/files/input/dir/y.txt", "y"), 201)
	snap := mustStatus(t, "a: snapshot", as(t, full, all, "POST", "/v1/agents/a/workbenches/w/snapshots", `{"name":"s1"}`), 201)
	f.snapID = fmt.Sprint(snap.json["snapshot_id"])
	mustStatus(t, "a: snapshot", as(t, full, all, "POST", "/v1/agents/a/workbenches/w/snapshots", `{"name":"s2"}`), 201)
	commit := mustStatus(t, "a: commit", as(t, full, all, "POST", "/v1/agents/a/workbenches/w/commit", toolBodies["/v1/agents/{agent}/workbenches/{id}/commit"]), 200)
	f.commitID = commit.json["commit_identity"].(string)
	restore := mustStatus(t, "a: restore", as(t, full, all, "POST", "/v1/agents/a/workbenches/w/restore", `{"destination_id":"w2","at_snapshot":"s1"}`), 200)
	f.opID = restore.json["operation_id"].(string)

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
		r := mustStatus(t, "a: first page of "+kind, as(t, full, all, m, u, b), 200)
		c, _ := r.json["next_cursor"].(string)
		if c == "" {
			t.Fatalf("%s: no next_cursor on the first page: %s", kind, r.body)
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

// accessRequest is one request of the matrix, on root a.
type accessRequest struct {
	route          string // the servedRoutes path it exercises
	method, target string
	body           string
	headers        []string
	// creates: on a root that does not exist the request succeeds (it creates the root);
	// every other write fails there without changing anything.
	creates bool
}

func (r accessRequest) write() bool {
	return r.method != "GET" && r.method != "HEAD" && !readOnlyPost(r.route)
}

// readOnlyPost: the POST routes that only read (queries with a JSON body).
func readOnlyPost(route string) bool {
	for _, s := range []string{"/grep", "/search", "/aggregate", "/catalog", "/find"} {
		if strings.HasSuffix(route, s) {
			return true
		}
	}
	return false
}

func (f *accessFixture) requests() []accessRequest {
	const wb = "/v1/agents/{agent}/workbenches/{id}"
	a := "/v1/agents/a/workbenches/w"
	file := a + "/files/input/dir/x.txt"
	reqs := []accessRequest{
		{route: wb, method: "GET", target: a},
		{route: wb, method: "HEAD", target: a},
		{route: wb, method: "GET", target: a + "?at_snapshot=s1"},
		{route: wb, method: "GET", target: a + "?at_snapshot=" + f.snapID},
		{route: wb + "/list", method: "GET", target: a + "/list?path=input/dir"},
		{route: wb + "/list", method: "HEAD", target: a + "/list?path=input/dir"},
		{route: wb + "/list", method: "GET", target: a + "/list?path=input&at_snapshot=" + f.snapID},
		{route: wb + "/files/{path}", method: "GET", target: file},
		{route: wb + "/files/{path}", method: "HEAD", target: file},
		{route: wb + "/files/{path}", method: "GET", target: file, headers: []string{"Range", "bytes=0-3"}},
		{route: wb + "/files/{path}", method: "GET", target: file + "?at_snapshot=s1"},
		{route: wb + "/files/{path}", method: "GET", target: a + "/files/input/dir/missing.txt"},
		{route: wb + "/grep", method: "POST", target: a + "/grep", body: `{"pattern":"hello","recursive":true}`},
		{route: wb + "/snapshots", method: "GET", target: a + "/snapshots"},
		{route: wb + "/snapshots", method: "HEAD", target: a + "/snapshots"},
		{route: wb + "/snapshots", method: "GET", target: a + "/snapshots?limit=5"},
		{route: "/v1/agents/{agent}/search", method: "POST", target: "/v1/agents/a/search", body: toolBodies["/v1/agents/{agent}/search"]},
		{route: "/v1/agents/{agent}/search", method: "POST", target: "/v1/agents/a/search", body: `{"id":"w","facets":["artifact.ext"]}`},
		{route: "/v1/agents/{agent}/aggregate", method: "POST", target: "/v1/agents/a/aggregate", body: toolBodies["/v1/agents/{agent}/aggregate"]},
		{route: "/v1/agents/{agent}/catalog", method: "POST", target: "/v1/agents/a/catalog", body: `{"include_facets":true}`},
		{route: "/v1/agents/{agent}/find", method: "POST", target: "/v1/agents/a/find", body: `{"include_manifest":true}`},
		{route: "/v1/agents/{agent}/restores/{operation_id}", method: "GET", target: "/v1/agents/a/restores/" + f.opID},
		{route: "/v1/agents/{agent}/workbenches", method: "GET", target: "/v1/agents/a/workbenches"},
		{route: "/v1/agents/{agent}/workbenches", method: "HEAD", target: "/v1/agents/a/workbenches"},
		{route: "/v1/agents/{agent}/usage", method: "GET", target: "/v1/agents/a/usage"},
		{route: "/v1/agents/{agent}/usage", method: "HEAD", target: "/v1/agents/a/usage"},

		{route: wb, method: "PUT", target: "/v1/agents/a/workbenches/w9", creates: true},
		{route: wb + "/files/{path}", method: "PUT", target: file, body: "new", creates: true},
		{route: wb + "/files/{path}", method: "POST", target: file + "?append", body: "more", creates: true},
		{route: wb + "/files/{path}", method: "DELETE", target: file},
		{route: wb, method: "DELETE", target: "/v1/agents/a/workbenches/w"},
		{route: wb + "/commit", method: "POST", target: a + "/commit", body: toolBodies[wb+"/commit"], creates: true},
		{route: wb + "/snapshots", method: "POST", target: a + "/snapshots", body: `{"name":"s3"}`},
		{route: wb + "/snapshots/renew", method: "POST", target: a + "/snapshots/renew", body: `{"name":"s1","ttl_days":9}`},
		{route: wb + "/snapshots/retire", method: "POST", target: a + "/snapshots/retire", body: `{"name":"s2"}`},
		{route: wb + "/restore", method: "POST", target: a + "/restore", body: `{"destination_id":"w3","at_snapshot":"s1"}`},
		{route: wb + "/restore", method: "POST", target: a + "/restore", body: `{"destination_id":"w4","at_commit":"` + f.commitID + `"}`},
	}
	for kind, target := range f.cursorTargets {
		m, u, b := target("a", f.cursors[kind])
		route := map[string]string{"list": wb + "/list", "snapshots": wb + "/snapshots", "search": "/v1/agents/{agent}/search",
			"find": "/v1/agents/{agent}/find", "grep": wb + "/grep"}[kind]
		reqs = append(reqs, accessRequest{route: route, method: m, target: u, body: b})
	}
	return reqs
}

func (r accessRequest) send(t *testing.T, srv *httptest.Server, p string) response {
	t.Helper()
	return as(t, srv, p, r.method, r.target, r.body, r.headers...)
}

func permissionDenied(p, verb, scope string) string {
	return fmt.Sprintf(`{"status":"error","code":"PermissionDenied","details":{"scope":"%s"},"message":"principal \"%s\" may not %s agent root \"a\": it lacks the %s scope","retryable":false}`+"\n", scope, p, verb, scope)
}

func TestAccessMatrixOverEveryRoute(t *testing.T) {
	f := newAccessFixture(t)
	reqs := f.requests()
	// Every route of a root is in the matrix (MCP has its own, api/mcp).
	covered := map[string]bool{}
	for _, r := range reqs {
		covered[r.method+" "+r.route] = true
	}
	for _, r := range servedRoutes {
		if strings.HasPrefix(r.path, "/v1/agents/") && !strings.HasSuffix(r.path, "/mcp") && !covered[r.method+" "+r.path] {
			t.Errorf("%s %s: not in the matrix", r.method, r.path)
		}
	}
	missingWorkbench := mustStatus(t, "twin: a's workbench", as(t, f.twin, all, "GET", "/v1/agents/a/workbenches/w", ""), 404)
	if want := `{"status":"error","code":"NotFound","details":{},"message":"workbench \"w\" does not exist","retryable":false}` + "\n"; string(missingWorkbench.body) != want {
		t.Fatalf("a missing root's workbench: %s", missingWorkbench.body)
	}

	// Reads first: nothing changes either node until the writes below.
	for _, r := range reqs {
		if r.write() {
			continue
		}
		name := r.method + " " + r.target
		baseline := r.send(t, f.full, all)
		if baseline.status >= 300 && !strings.Contains(r.target, "missing.txt") {
			t.Errorf("%s: everything: %d %s", name, baseline.status, baseline.body)
		}
		if !strings.Contains(r.target, "cursor=") && !strings.Contains(r.body, `"cursor"`) {
			// A cursor is bound to the principal it was issued to: the read-only key
			// reading with its own first page is in TestAccessCursors.
			sameAnswer(t, name+": read-only key", r.send(t, f.full, "k-ro"), baseline)
		}
		missing := r.send(t, f.twin, all)
		sameAnswer(t, name+": another root's key vs a root that does not exist", r.send(t, f.full, "k-b"), missing)
		sameAnswer(t, name+": another root's key, the same on the twin", r.send(t, f.twin, "k-b"), missing)
		wo := r.send(t, f.full, "k-wo")
		if r.method == "HEAD" {
			mustStatus(t, name+": write-only key", wo, 403)
		} else if string(wo.body) != permissionDenied("k-wo", "read", "workspace:read") || wo.status != 403 {
			t.Errorf("%s: write-only key: %d %s", name, wo.status, wo.body)
		}
	}
	// Writes: the read-only key is refused with 403, another root's with the NotFound a
	// root that does not exist answers (for a write that fails there: the same bytes).
	for _, r := range reqs {
		if !r.write() {
			continue
		}
		name := r.method + " " + r.target
		ro := r.send(t, f.full, "k-ro")
		if ro.status != 403 || string(ro.body) != permissionDenied("k-ro", "change", "workspace:write") {
			t.Errorf("%s: read-only key: %d %s", name, ro.status, ro.body)
		}
		other := r.send(t, f.full, "k-b")
		if r.creates {
			want := missingWorkbench
			if strings.HasSuffix(r.target, "/w9") {
				want = mustStatus(t, "twin: w9", as(t, f.twin, all, "GET", "/v1/agents/a/workbenches/w9", ""), 404)
			}
			sameAnswer(t, name+": another root's key", other, want)
			continue
		}
		sameAnswer(t, name+": another root's key vs a root that does not exist", other, r.send(t, f.twin, all))
	}
	// Nothing of the refused writes happened.
	after := mustStatus(t, "full: file", as(t, f.full, all, "GET", "/v1/agents/a/workbenches/w/files/input/dir/x.txt", ""), 200)
	if string(after.body) != "hello x\nhello again\n" {
		t.Errorf("the file changed: %q", after.body)
	}
	mustStatus(t, "full: w9", as(t, f.full, all, "GET", "/v1/agents/a/workbenches/w9", ""), 404)
	mustStatus(t, "twin: root a", as(t, f.twin, all, "GET", "/v1/agents/a/workbenches/w", ""), 404)
	// The write-only key writes (and everything's too).
	mustStatus(t, "write-only key writes", as(t, f.full, "k-wo", "PUT", "/v1/agents/a/workbenches/w/files/input/new.txt", "n"), 201)
	mustStatus(t, "no principal (the local operator) writes", as(t, f.full, "", "PUT", "/v1/agents/a/workbenches/w/files/input/new2.txt", "n"), 201)
}

// TestAccessCursors: a cursor works for the principal and root it was issued for; in
// another root, or for another principal, it fails exactly as a forged one does.
func TestAccessCursors(t *testing.T) {
	f := newAccessFixture(t)
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range f.cursors {
			if !yield(k) {
				return
			}
		}
	})
	for _, kind := range kinds {
		target := f.cursorTargets[kind]
		c := f.cursors[kind]
		send := func(srv *httptest.Server, p, agent, cursor string) response {
			m, u, b := target(agent, cursor)
			return as(t, srv, p, m, u, b)
		}
		// The issuing principal reads the second page; the read-only key its own.
		second := mustStatus(t, kind+": second page", send(f.full, all, "a", c), 200)
		first := mustStatus(t, kind+": read-only first page", send(f.full, "k-ro", "a", ""), 200)
		roCursor, _ := first.json["next_cursor"].(string)
		sameAnswer(t, kind+": read-only key, its own cursor", send(f.full, "k-ro", "a", roCursor), second)
		forged := send(f.full, all, "a", forge(c))
		if forged.status != 400 || forged.json["code"] != "InvalidArguments" {
			t.Fatalf("%s: a forged cursor: %d %s", kind, forged.status, forged.body)
		}
		sameAnswer(t, kind+": another principal's cursor", send(f.full, "k-ro", "a", c), send(f.full, "k-ro", "a", forge(c)))
		sameAnswer(t, kind+": a cursor of root a in root b", send(f.full, all, "b", c), send(f.full, all, "b", forge(c)))
		sameAnswer(t, kind+": root a's cursor, by another root's key", send(f.full, "k-b", "a", c), send(f.twin, all, "a", c))
		sameAnswer(t, kind+": root a's cursor, in its own root b", send(f.full, "k-b", "b", c), send(f.full, "k-b", "b", forge(c)))
	}
}

// TestAccessIdsOfAnotherRoot: snapshot ids, operation ids and commit identities of root a,
// used in root b by b's key, answer as ids that exist nowhere (root b on twin).
func TestAccessIdsOfAnotherRoot(t *testing.T) {
	f := newAccessFixture(t)
	b := "/v1/agents/b/workbenches/w"
	for _, r := range []accessRequest{
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
		got := r.send(t, f.full, "k-b")
		if got.status < 400 {
			t.Errorf("%s %s: %d %s", r.method, r.target, got.status, got.body)
		}
		sameAnswer(t, r.method+" "+r.target, got, r.send(t, f.twin, "k-b"))
	}
}
