package server

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestAuthMatrixPrefixKeyOverEveryMCPTool is the prefix-bound column of the MCP matrix
// (authmatrix_test.go) over every tool of the cairn profile (the 18 Workbench tools and
// Cairn's own): inside root a's outputs the key works; a call naming a path below input,
// where the admin key wrote, answers byte for byte as the same call naming a missing
// path; a call without a path tells nothing of input's files; an operation on a whole
// workbench (snapshots included) is PermissionDenied naming the key's prefixes.
func TestAuthMatrixPrefixKeyOverEveryMCPTool(t *testing.T) {
	m := newMatrix(t)
	admin, prefix := m.toolsOf(t, keyAdmin, "/v1/agents/a/mcp/cairn"), m.toolsOf(t, keyPrefix, "/v1/agents/a/mcp/cairn")
	ok := func(who string, a toolAnswer) map[string]any {
		t.Helper()
		if a.isErr {
			t.Fatalf("%s: %s", who, a.raw)
		}
		return a.res
	}
	ok("admin: put", admin("workbench_put_file", map[string]any{"id": "w", "section": "input", "path": "dir/x.txt", "text": "hello x\n"}))
	ok("admin: put", admin("workbench_put_file", map[string]any{"id": "w", "section": "input", "path": "dir/y.txt", "text": "y"}))
	ok("prefix: put", prefix("workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "o.txt", "text": "hello o\n"}))
	ok("admin: snapshot", admin("workbench_snapshot", map[string]any{"id": "w", "name": "s1"}))
	hiddenID := ok("admin: propose", admin("cairn_propose", map[string]any{"id": "w", "path": "input/dir/x.txt", "text": "v2", "request_id": "r1"}))["proposal_id"].(string)
	mineID := ok("prefix: propose", prefix("cairn_propose", map[string]any{"id": "w", "path": "outputs/o.txt", "text": "v2", "request_id": "r2"}))["proposal_id"].(string)
	gen := ok("admin: history", admin("cairn_history", map[string]any{"id": "w", "section": "input", "path": "dir/x.txt"}))["versions"].([]any)[0].(map[string]any)["generation"]
	missingID := hiddenID[:len(hiddenID)-1] + map[bool]string{true: "0", false: "1"}[!strings.HasSuffix(hiddenID, "0")]

	covered := map[string]bool{}
	// Calls naming a path (or proposal) outside the prefixes: the same answer as for a
	// missing one once the name is swapped back; the calls run in this order, so the
	// refused writes leave the fixture as it is.
	file := map[string]any{"id": "w", "section": "input", "path": "dir/x.txt"}
	qualified := map[string]any{"id": "w", "path": "input/dir/x.txt"}
	hidden := []struct {
		tool string
		args map[string]any
	}{
		{"workbench_stat", file},
		{"workbench_read", file},
		{"workbench_read", with(file, "at_snapshot", "s1")},
		{"workbench_list", map[string]any{"id": "w", "section": "input", "path": "dir"}},
		{"workbench_grep", with(file, "pattern", "hello", "recursive", false)},
		{"cairn_history", file},
		{"cairn_read_at", with(file, "generation", gen)},
		{"cairn_diff", with(qualified, "from", "snapshot:s1")},
		{"cairn_proposals", with(qualified, "proposal_id", hiddenID)},
		{"cairn_decide", map[string]any{"id": "w", "proposal_id": hiddenID, "disposition": "reject", "submission_id": "d1"}},
		{"workbench_put_file", with(file, "text", "mine now", "replace", true)},
		{"workbench_append", with(file, "text", "more")},
		{"workbench_edit", with(file, "old_string", "hello x", "new_string", "bye")},
		{"cairn_propose", with(qualified, "text", "v3", "request_id", "r3")},
		{"cairn_rewind", map[string]any{"id": "w", "target": "snapshot:s1", "paths": []string{"input/dir/x.txt"}, "dry_run": true}},
	}
	toMissing := strings.NewReplacer("x.txt", "q.txt", `"dir"`, `"dxr"`, hiddenID, missingID)
	fromMissing := strings.NewReplacer("q.txt", "x.txt", "dxr", "dir", missingID, hiddenID)
	for _, c := range hidden {
		covered[c.tool] = true
		missingArgs := map[string]any{}
		for k, v := range c.args {
			if s, isStr := v.(string); isStr {
				v = toMissing.Replace(s)
			} else if ss, isSlice := v.([]string); isSlice {
				v = []string{toMissing.Replace(ss[0])}
			}
			missingArgs[k] = v
		}
		got, missing := prefix(c.tool, c.args), prefix(c.tool, missingArgs)
		// A rewind preview's token signs the digest of its plan (whose scope holds the
		// path's name) and when it was issued: the rest of the answer is compared.
		got.raw, missing.raw = anyToken.ReplaceAllString(got.raw, "TOKEN"), anyToken.ReplaceAllString(missing.raw, "TOKEN")
		if want := fromMissing.Replace(missing.raw); got.raw != want || !got.isErr && c.tool != "cairn_rewind" {
			t.Errorf("%s %v: a hidden path vs a missing one:\n got %s\nwant %s", c.tool, c.args, got.raw, want)
		}
	}

	// A write outside the prefixes, even one that reads first (a replace, an edit), is
	// refused as a write (README: 403 naming the prefixes), not answered missing.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"workbench_put_file", with(file, "text", "mine now", "replace", true)},
		{"workbench_put_file", with(file, "text", "mine now")},
		{"workbench_append", with(file, "text", "more")},
		{"workbench_edit", with(file, "old_string", "hello x", "new_string", "bye")},
	} {
		a := prefix(c.tool, c.args)
		details, _ := a.res["details"].(map[string]any)
		if !a.isErr || a.code != "PermissionDenied" || fmt.Sprint(details["prefixes"]) != "[outputs]" {
			t.Errorf("%s %v outside the prefixes: %s", c.tool, c.args, a.raw)
		}
	}

	// Inside the prefixes the key works.
	inside := map[string]any{"id": "w", "section": "outputs", "path": "o.txt"}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"workbench_stat", inside},
		{"workbench_read", inside},
		{"workbench_list", map[string]any{"id": "w", "section": "outputs"}},
		{"workbench_grep", with(inside, "pattern", "hello", "recursive", false)},
		{"cairn_history", inside},
		{"cairn_diff", map[string]any{"id": "w", "path": "outputs/o.txt", "from": "snapshot:s1"}},
		{"cairn_proposals", map[string]any{"id": "w", "proposal_id": mineID}},
		{"cairn_decide", map[string]any{"id": "w", "proposal_id": mineID, "disposition": "reject", "submission_id": "d2"}},
		{"workbench_edit", with(inside, "old_string", "hello o", "new_string", "bye o")},
		{"workbench_append", with(inside, "text", "more")},
		{"workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "p.txt", "text": "p"}},
		{"cairn_propose", map[string]any{"id": "w", "path": "outputs/p.txt", "text": "p2", "request_id": "r4"}},
		{"cairn_rewind", map[string]any{"id": "w", "target": "snapshot:s1", "paths": []string{"outputs/o.txt"}, "dry_run": true}},
	} {
		ok(c.tool+" inside the prefixes", prefix(c.tool, c.args))
	}
	if r := ok("admin: read", admin("workbench_read", file)); !strings.Contains(fmt.Sprint(r["items"]), "hello x") {
		t.Errorf("the hidden file after the refused writes: %v", r)
	}

	// Calls that name no path: nothing of input's files, whatever they answer.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"workbench_list", map[string]any{"id": "w"}},
		{"workbench_list", map[string]any{"id": "w", "section": "input"}},
		{"workbench_stat", map[string]any{"id": "w"}},
		{"workbench_grep", map[string]any{"id": "w", "pattern": "hello", "recursive": true}},
		{"workbench_search", map[string]any{"predicates": []any{map[string]any{"field": "artifact.ext", "op": "eq", "value": "txt"}}}},
		{"workbench_aggregate", map[string]any{"measures": []any{map[string]any{"name": "n", "op": "count"}}, "group_by": []string{"artifact.path"}}},
		{"workbench_catalog", map[string]any{"include_facets": true}},
		{"workbench_find", map[string]any{"include_manifest": true}},
		{"workbench_snapshot_list", map[string]any{"id": "w"}},
		{"cairn_workbench_list", map[string]any{}},
		{"cairn_proposals", map[string]any{"id": "w"}},
		{"cairn_diff", map[string]any{"id": "w", "from": "snapshot:s1"}},
		{"workbench_create", map[string]any{"id": "w9"}},
	} {
		covered[c.tool] = true
		a := prefix(c.tool, c.args)
		wantNoFixtureText(t, c.tool+" by a prefix-bound key", strings.ReplaceAll(a.raw, `\"pattern\":\"hello\"`, ""))
	}

	// An operation on a whole workbench: PermissionDenied naming the prefixes.
	digest := "sha256:" + strings.Repeat("a", 64)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"workbench_commit", map[string]any{"id": "w", "manifest": map[string]any{"run": 1}, "content_digest_uri": digest}},
		{"workbench_restore", map[string]any{"id": "w", "destination_id": "w3", "at_snapshot": "s1"}},
		{"cairn_fork", map[string]any{"id": "w", "fork": "f1"}},
		{"cairn_workbench_delete", map[string]any{"id": "w"}},
		{"workbench_snapshot", map[string]any{"id": "w", "name": "s2"}},
		{"workbench_snapshot_renew", map[string]any{"id": "w", "name": "s1", "ttl_days": 9}},
		{"workbench_snapshot_retire", map[string]any{"id": "w", "name": "s1"}},
	} {
		covered[c.tool] = true
		a := prefix(c.tool, c.args)
		details, _ := a.res["details"].(map[string]any)
		if !a.isErr || a.code != "PermissionDenied" || fmt.Sprint(details["prefixes"]) != "[outputs]" {
			t.Errorf("%s by a prefix-bound key: %s", c.tool, a.raw)
		}
	}
	// A rewind of the whole workbench is refused, its preview too (no token an apply
	// could never take), naming the key's prefixes.
	covered["cairn_rewind"] = true
	for _, args := range []map[string]any{
		{"id": "w", "target": "snapshot:s1", "dry_run": true},
		{"id": "w", "target": "snapshot:s1", "token": strings.Repeat("A", 43) + "." + strings.Repeat("B", 22), "request_id": "rw3"},
	} {
		a := prefix("cairn_rewind", args)
		details, _ := a.res["details"].(map[string]any)
		if !a.isErr || a.code != "PermissionDenied" || fmt.Sprint(details["prefixes"]) != "[outputs]" {
			t.Errorf("a prefix-bound key's rewind of the whole workbench (%v): %s", args, a.raw)
		}
		wantNoFixtureText(t, "a prefix-bound key's rewind of the whole workbench", a.raw)
	}
	// Merging or discarding a fork made by the admin key: the fork is a whole workbench
	// too; the answer names no path.
	ok("admin: fork", admin("cairn_fork", map[string]any{"id": "w", "fork": "f2"}))
	for _, tool := range []string{"cairn_merge", "cairn_discard"} {
		covered[tool] = true
		a := prefix(tool, map[string]any{"id": "f2", "request_id": "m1"})
		if !a.isErr {
			t.Errorf("%s of a fork by a prefix-bound key: %s", tool, a.raw)
		}
		wantNoFixtureText(t, tool+" by a prefix-bound key", a.raw)
	}

	listed, err := func() ([]string, error) {
		cs, err := m.connectTo(t, m.full, keyPrefix, "/v1/agents/a/mcp/cairn")
		if err != nil {
			return nil, err
		}
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return names, nil
	}()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range listed {
		// Working documents are not files of a workbench: no path prefix applies.
		if !covered[name] && !strings.HasPrefix(name, "cairn_document") {
			t.Errorf("%s: not in the prefix-bound column", name)
		}
	}
	if len(covered) < 30 {
		t.Errorf("the column covers %d tools", len(covered))
	}
}

// TestAuthPrefixKeySeesItsPathsOnly: a key bound to root a's outputs (issue 31) reads and
// writes below outputs; a file outside answers byte for byte as a missing one on every
// read route (file, stat, history, diff), listings and searches leave it out, a write
// outside is refused alike whether the path exists or not, and the key mints a narrower
// key, never a broader one; revoking it stops the key it minted.
func TestAuthPrefixKeySeesItsPathsOnly(t *testing.T) {
	m := newMatrix(t)
	const w = "/v1/agents/a/workbenches/w"
	mustReply(t, "admin: put outside", m.on(t, m.full, keyAdmin, "PUT", w+"/files/input/secret.txt", "secret"), 201)
	mustReply(t, "admin: put outside", m.on(t, m.full, keyAdmin, "PUT", w+"/files/input/dir/s.txt", "s"), 201)
	mustReply(t, "prefix: put inside", m.on(t, m.full, keyPrefix, "PUT", w+"/files/outputs/run1/mine.txt", "mine"), 201)
	if got := mustReply(t, "prefix: get inside", m.on(t, m.full, keyPrefix, "GET", w+"/files/outputs/run1/mine.txt", ""), 200); string(got.body) != "mine" {
		t.Errorf("its own file: %q", got.body)
	}
	// The hidden path and a missing one of the same length: the answers are the same bytes
	// once the name is swapped.
	for _, route := range []struct{ method, hidden, missing string }{
		{"GET", w + "/files/input/secret.txt", w + "/files/input/absent.txt"},
		{"HEAD", w + "/files/input/secret.txt", w + "/files/input/absent.txt"},
		{"GET", w + "/history?path=input/secret.txt", w + "/history?path=input/absent.txt"},
		{"GET", w + "/diff?path=input/secret.txt&from=live", w + "/diff?path=input/absent.txt&from=live"},
		{"GET", w + "/list?path=input/dir", w + "/list?path=input/dxr"},
	} {
		hidden := m.on(t, m.full, keyPrefix, route.method, route.hidden, "")
		missing := m.on(t, m.full, keyPrefix, route.method, route.missing, "")
		missing.body = []byte(strings.NewReplacer("absent", "secret", "dxr", "dir").Replace(string(missing.body)))
		sameReply(t, route.method+" "+route.hidden+": hidden vs missing", hidden, missing)
		if hidden.status < 400 {
			t.Errorf("%s %s: %d %s, want the missing path's error", route.method, route.hidden, hidden.status, hidden.body)
		}
	}
	top := mustReply(t, "prefix: list top", m.on(t, m.full, keyPrefix, "GET", w+"/list", ""), 200)
	// Sections always list; input holds nothing the key sees.
	if s := string(top.body); !strings.Contains(s, `{"entry_count":0,"kind":"directory","name":"input"`) || !strings.Contains(s, `{"entry_count":1,"kind":"directory","name":"outputs"`) {
		t.Errorf("its top listing: %s", s)
	}
	m.wantSearchAndFeed(t, keyPrefix, "mine.txt", "secret.txt")
	// Deciding the admin's proposal on a hidden path answers as deciding a proposal that
	// does not exist; the proposal stays pending.
	p := mustReply(t, "admin: propose outside", m.on(t, m.full, keyAdmin, "POST", w+"/proposals", `{"path":"input/secret.txt","text":"v2","request_id":"r1"}`), 201)
	id := p.json["proposal_id"].(string)
	missingID := strings.Map(func(r rune) rune { return map[bool]rune{true: 'b', false: 'a'}[r == 'a'] }, id[len(id)-1:])
	missingID = id[:len(id)-1] + missingID
	decide := func(id string) reply {
		return m.on(t, m.full, keyPrefix, "POST", w+"/proposals/"+id+"/decision", `{"disposition":"accept","submission_id":"s1"}`)
	}
	hiddenDecision, missingDecision := decide(id), decide(missingID)
	missingDecision.body = []byte(strings.ReplaceAll(string(missingDecision.body), missingID, id))
	sameReply(t, "deciding a hidden proposal vs a missing one", hiddenDecision, missingDecision)
	mustReply(t, "prefix: decide a hidden proposal", hiddenDecision, 404)
	if got := mustReply(t, "admin: proposal", m.on(t, m.full, keyAdmin, "GET", w+"/proposals/"+id, ""), 200); got.json["state"] != "pending" {
		t.Errorf("the hidden proposal after the refused decision: %v", got.json)
	}
	// Writes outside: the same refusal for an existing and a missing path.
	over := m.on(t, m.full, keyPrefix, "PUT", w+"/files/input/secret.txt", "mine now")
	fresh := m.on(t, m.full, keyPrefix, "PUT", w+"/files/input/absent.txt", "mine now")
	sameReply(t, "a write outside: existing vs missing", over, fresh)
	mustReply(t, "prefix: overwrite outside", over, 403)
	if got := mustReply(t, "admin: get outside", m.on(t, m.full, keyAdmin, "GET", w+"/files/input/secret.txt", ""), 200); string(got.body) != "secret" {
		t.Errorf("the file outside after a refused write: %q", got.body)
	}

	// A prefix that names no section would make a key that sees nothing: refused at
	// creation and at minting.
	for _, r := range []reply{
		m.send(t, m.full.adminURL, keyAdmin, "POST", KeysPath, `{"name":"typo","agents":["a"],"prefixes":["outptus/run1/"],"scopes":["workspace:read"]}`),
		m.on(t, m.full, keyAdmin, "POST", MintPath, `{"name":"typo","agents":["a"],"prefixes":["outptus/run1/"],"scopes":["workspace:read"]}`),
	} {
		if r.status != http.StatusBadRequest || r.json["details"].(map[string]any)["field"] != "prefixes" || !strings.Contains(string(r.body), "outptus") {
			t.Errorf("a prefix outside the sections: %d %s", r.status, r.body)
		}
	}
	// Minting: narrower is accepted, broader refused, and the minted key stops with its minter.
	broad := m.on(t, m.full, keyPrefix, "POST", MintPath, `{"name":"sub","agents":["a"],"prefixes":["input/"],"scopes":["workspace:read"]}`)
	if broad.status != http.StatusForbidden || broad.json["code"] != "PermissionDenied" {
		t.Errorf("a broader minted key: %d %s", broad.status, broad.body)
	}
	sub := mustReply(t, "prefix: mint", m.on(t, m.full, keyPrefix, "POST", MintPath, `{"name":"sub","agents":["a"],"prefixes":["outputs/run1/"],"scopes":["workspace:read"],"expires_at":"2099-01-01T00:00:00Z"}`), 201)
	m.authz["sub"] = "Bearer " + sub.json["secret"].(string)
	if got := mustReply(t, "sub: get inside", m.on(t, m.full, "sub", "GET", w+"/files/outputs/run1/mine.txt", ""), 200); string(got.body) != "mine" {
		t.Errorf("the minted key's read: %q", got.body)
	}
	mustReply(t, "sub: write", m.on(t, m.full, "sub", "PUT", w+"/files/outputs/run1/x.txt", "x"), 403)
	mustReply(t, "revoke the minter", m.send(t, m.full.adminURL, keyAdmin, "POST", KeysRevokePath, `{"id":"`+m.ids[keyPrefix]+`"}`), 200)
	wantUnauthenticated(t, "the minted key after its minter's revocation", "sub", "GET",
		m.on(t, m.full, "sub", "GET", w+"/files/outputs/run1/mine.txt", ""))
}

// anyToken matches a rewind or merge token in a tool answer.
var anyToken = regexp.MustCompile(`[A-Za-z0-9_-]{40,}\.[A-Za-z0-9_-]{16,}`)

// wantNoFixtureText fails when s tells anything of root a's files below input (their
// names, directory or contents).
// toolsOf connects an MCP session of key to the full node's endpoint at path and returns
// a caller of its tools.
func (m *matrix) toolsOf(t *testing.T, key, path string) func(tool string, args map[string]any) toolAnswer {
	t.Helper()
	cs, err := m.connectTo(t, m.full, key, path)
	if err != nil {
		t.Fatalf("%s: connect: %v", key, err)
	}
	return func(tool string, args map[string]any) toolAnswer { t.Helper(); return callTool(t, cs, tool, args) }
}

func wantNoFixtureText(t *testing.T, what, s string) {
	t.Helper()
	for _, name := range []string{"x.txt", "y.txt", "input/dir", "hello x", `"dir"`, `\"dir\"`} {
		if strings.Contains(s, name) {
			t.Errorf("%s: the answer tells of %s: %s", what, name, s)
		}
	}
}

// TestAuthPartialKeyEvidenceAnswersAsMissing: a proposal's evidence is resolved in what
// the proposer's key reaches. A prefix-bound key naming a file outside its prefixes, and
// a key bound to one workbench naming another, get byte for byte the answer of a file or
// workbench that does not exist, and nothing of what they name.
func TestAuthPartialKeyEvidenceAnswersAsMissing(t *testing.T) {
	m := newMatrix(t)
	const w = "/v1/agents/a/workbenches/w"
	put := mustReply(t, "admin: put outside", m.on(t, m.full, keyAdmin, "PUT", w+"/files/input/secret.txt", "secret"), 201)
	hist := mustReply(t, "admin: history", m.on(t, m.full, keyAdmin, "GET", w+"/history?path=input/secret.txt", ""), 200)
	gen := fmt.Sprint(hist.json["versions"].([]any)[0].(map[string]any)["generation"])
	mustReply(t, "admin: snapshot", m.on(t, m.full, keyAdmin, "POST", w+"/snapshots", `{"name":"s1"}`), 201)
	mustReply(t, "bound: put", m.on(t, m.full, keyBound, "PUT", "/v1/agents/a/workbenches/other/files/outputs/b.txt", "b"), 201)
	propose := func(key, ws, request, evidence string) reply {
		return m.on(t, m.full, key, "POST", "/v1/agents/a/workbenches/"+ws+"/proposals",
			`{"path":"outputs/run1/ok.txt","text":"ok","request_id":"`+request+`","evidence":[`+evidence+`]}`)
	}
	for _, c := range []struct {
		what, key, ws, hidden, missing string
		swap                           *strings.Replacer
	}{
		{"a file outside the prefixes", keyPrefix, "w",
			`{"kind":"file","path":"input/secret.txt","generation":` + gen + `}`,
			`{"kind":"file","path":"input/absent.txt","generation":` + gen + `}`, strings.NewReplacer("absent", "secret")},
		{"a file of another workbench", keyBound, "other",
			`{"kind":"file","workbench":"w","path":"input/secret.txt","generation":` + gen + `}`,
			`{"kind":"file","workbench":"v","path":"input/secret.txt","generation":` + gen + `}`, strings.NewReplacer(`\"v\"`, `\"w\"`)},
		{"a snapshot of another workbench", keyBound, "other",
			`{"kind":"snapshot","workbench":"w","snapshot_id":1}`,
			`{"kind":"snapshot","workbench":"v","snapshot_id":1}`, strings.NewReplacer(`\"v\"`, `\"w\"`)},
	} {
		hidden, missing := propose(c.key, c.ws, "h"+c.ws+c.hidden[9:13], c.hidden), propose(c.key, c.ws, "m"+c.ws+c.missing[9:13], c.missing)
		missing.body = []byte(c.swap.Replace(string(missing.body)))
		sameReply(t, c.what+": hidden vs missing", hidden, missing)
		if hidden.status != http.StatusNotFound {
			t.Errorf("%s: %d %s, want the missing one's NotFound", c.what, hidden.status, hidden.body)
		}
		if d, ok := put.json["digest_uri"].(string); ok && strings.Contains(string(hidden.body), d) {
			t.Errorf("%s: the answer tells the hidden file's digest: %s", c.what, hidden.body)
		}
	}
	// Evidence the key reaches still resolves.
	mustReply(t, "prefix: propose with its own evidence", propose(keyPrefix, "w", "o", ""), 201)
}

// TestAuthPrefixKeyRewindOutsideIsRefused: a rewind by a prefix-bound key whose scope
// names a path or a prefix outside its prefixes, or no scope (the whole workbench), is
// PermissionDenied naming them, preview and apply alike, before anything is read: the same bytes whether the path exists or
// not, so no answer (a token, a staleness Conflict) tells of a hidden path.
func TestAuthPrefixKeyRewindOutsideIsRefused(t *testing.T) {
	m := newMatrix(t)
	const w = "/v1/agents/a/workbenches/w"
	mustReply(t, "admin: put outside", m.on(t, m.full, keyAdmin, "PUT", w+"/files/input/secret.txt", "secret"), 201)
	mustReply(t, "prefix: put inside", m.on(t, m.full, keyPrefix, "PUT", w+"/files/outputs/run1/mine.txt", "mine"), 201)
	mustReply(t, "admin: snapshot", m.on(t, m.full, keyAdmin, "POST", w+"/snapshots", `{"name":"s1"}`), 201)
	rewind := func(scope, rest string) reply {
		return m.on(t, m.full, keyPrefix, "POST", w+"/rewind", `{"target":"snapshot:s1",`+scope+rest+`}`, "Idempotency-Key", "rw1")
	}
	for _, step := range []struct{ what, rest string }{
		{"a preview", `,"dry_run":true`},
		{"an apply", `,"token":"` + strings.Repeat("A", 43) + `.` + strings.Repeat("B", 22) + `"`},
	} {
		hidden := rewind(`"paths":["input/secret.txt"]`, step.rest)
		missing := rewind(`"paths":["input/absent.txt"]`, step.rest)
		sameReply(t, step.what+" of a hidden path vs a missing one", hidden, missing)
		unscoped := rewind(`"prefix":null`, step.rest)
		for _, r := range []reply{hidden, missing, unscoped, rewind(`"prefix":"input"`, step.rest), rewind(`"paths":["outputs/run1/mine.txt","input/absent.txt"]`, step.rest)} {
			details, _ := r.json["details"].(map[string]any)
			if r.status != http.StatusForbidden || r.json["code"] != "PermissionDenied" || fmt.Sprint(details["prefixes"]) != "[outputs]" {
				t.Errorf("%s outside the prefixes: %d %s", step.what, r.status, r.body)
			}
		}
	}
	mustReply(t, "prefix: preview inside", rewind(`"prefix":"outputs/run1"`, `,"dry_run":true`), 200)
}

// TestAuthPrefixKeySnapshotsAreWholeWorkbench: a snapshot holds every path of its
// workbench, and a fork's base is one, so minting, renewing and retiring a snapshot are
// whole-workbench operations a prefix-bound key is refused (PermissionDenied naming its
// prefixes, the same for the operator's snapshot, a fork's pin and a missing one), and
// its listings leave out the snapshots a fork pinned, whose annotation names the fork.
func TestAuthPrefixKeySnapshotsAreWholeWorkbench(t *testing.T) {
	m := newMatrix(t)
	const w = "/v1/agents/a/workbenches/w"
	mustReply(t, "admin: put", m.on(t, m.full, keyAdmin, "PUT", w+"/files/input/secret.txt", "secret"), 201)
	mustReply(t, "admin: snapshot", m.on(t, m.full, keyAdmin, "POST", w+"/snapshots", `{"name":"s1"}`), 201)
	mustReply(t, "admin: fork", m.on(t, m.full, keyAdmin, "POST", w+"/fork", `{"fork":"hiddenfork"}`, "Idempotency-Key", "f1"), 200)
	admin := mustReply(t, "admin: list", m.on(t, m.full, keyAdmin, "GET", w+"/snapshots", ""), 200)
	if !strings.Contains(string(admin.body), "hiddenfork") {
		t.Fatalf("the operator's listing shows no fork pin: %s", admin.body)
	}
	pin := fmt.Sprint(admin.json["snapshots"].([]any)[1].(map[string]any)["snapshot_id"])
	for _, c := range []struct{ what, method, target, body string }{
		{"a mint", "POST", w + "/snapshots", `{"name":"mine"}`},
		{"a renew of the operator's snapshot", "POST", w + "/snapshots/renew", `{"name":"s1","ttl_days":9}`},
		{"a renew of the fork's pin", "POST", w + "/snapshots/renew", `{"snapshot_id":` + pin + `,"ttl_days":9}`},
		{"a retire of the operator's snapshot", "POST", w + "/snapshots/retire", `{"name":"s1"}`},
		{"a retire of the fork's pin", "POST", w + "/snapshots/retire", `{"snapshot_id":` + pin + `}`},
		{"a retire of a missing snapshot", "POST", w + "/snapshots/retire", `{"name":"nosuch"}`},
	} {
		r := m.on(t, m.full, keyPrefix, c.method, c.target, c.body)
		details, _ := r.json["details"].(map[string]any)
		if r.status != http.StatusForbidden || r.json["code"] != "PermissionDenied" || fmt.Sprint(details["prefixes"]) != "[outputs]" {
			t.Errorf("%s by a prefix-bound key: %d %s", c.what, r.status, r.body)
		}
	}
	after := mustReply(t, "admin: list after", m.on(t, m.full, keyAdmin, "GET", w+"/snapshots", ""), 200)
	sameReply(t, "the operator's listing after the refused calls", after, admin)
	for _, target := range []string{w + "/snapshots", w + "/snapshots?limit=10"} {
		r := mustReply(t, "prefix: list", m.on(t, m.full, keyPrefix, "GET", target, ""), 200)
		if s := string(r.body); strings.Contains(s, "hiddenfork") || strings.Contains(s, "pinned_by_fork") || !strings.Contains(s, `"s1"`) {
			t.Errorf("a prefix-bound key's listing %s: %s", target, s)
		}
	}
}

// TestAuthPrefixKeyFindsCommitsWithoutTheirManifest: a key bound to outputs sees a
// committed workbench's commit (prefixes bind paths, not the workbench's own records),
// but the run manifest is a path outside its prefixes: workbench_find lists the
// workbench with its commit and no manifest, and a pattern never matches the hidden
// bytes. It used to read the manifest as the key and fail the whole call as NotFound.
func TestAuthPrefixKeyFindsCommitsWithoutTheirManifest(t *testing.T) {
	m := newMatrix(t)
	admin, prefix := m.toolsOf(t, keyAdmin, "/v1/agents/a/mcp"), m.toolsOf(t, keyPrefix, "/v1/agents/a/mcp")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"workbench_put_file", map[string]any{"id": "w", "section": "outputs", "path": "o.txt", "text": "o"}},
		{"workbench_commit", map[string]any{"id": "w", "manifest": map[string]any{"task": "secret-task"}, "content_digest_uri": "sha256:" + strings.Repeat("a", 64)}},
	} {
		if a := admin(c.tool, c.args); a.isErr {
			t.Fatalf("admin: %s: %s", c.tool, a.raw)
		}
	}
	whole := admin("workbench_find", map[string]any{"include_manifest": true})
	identity := whole.res["matches"].([]any)[0].(map[string]any)["commit_identity"]
	if whole.isErr || identity == nil || !strings.Contains(whole.raw, "secret-task") {
		t.Fatalf("the admin's find: %s", whole.raw)
	}

	got := prefix("workbench_find", map[string]any{"include_manifest": true})
	if got.isErr || got.res["match_count"] != float64(1) {
		t.Fatalf("a prefix-bound key's find: %s", got.raw)
	}
	match := got.res["matches"].([]any)[0].(map[string]any)
	if match["committed"] != true || match["commit_identity"] != identity || match["manifest"] != nil || match["manifest_summary"] != nil {
		t.Errorf("a prefix-bound key's match: %v, want the commit %v without its manifest", match, identity)
	}
	if strings.Contains(got.raw, "secret-task") {
		t.Errorf("a prefix-bound key's find shows the hidden manifest: %s", got.raw)
	}
	if a := prefix("workbench_find", map[string]any{"manifest_pattern": "secret"}); a.isErr || a.res["match_count"] != float64(0) {
		t.Errorf("a pattern over the hidden manifest: %s", a.raw)
	}
	if a := prefix("workbench_find", map[string]any{"committed": true}); a.isErr || a.res["match_count"] != float64(1) {
		t.Errorf("committed workbenches: %s", a.raw)
	}
}
