package server

import (
	"strings"
	"testing"
)

// TestAuthBoundKeyReachesItsWorkbenchOnly: a key made with --tenant a --workspace other
// (issue 25) works in workbench other of root a through REST, MCP, the change feed and
// OpenWOP alike, and sees nothing of root a's workbench w, whose files it can neither
// read nor overwrite (the matrix checks every route and tool answers as for a missing
// workbench; this checks what the key does see).
func TestAuthBoundKeyReachesItsWorkbenchOnly(t *testing.T) {
	m := newMatrix(t)
	const w, other = "/v1/agents/a/workbenches/w", "/v1/agents/a/workbenches/other"
	mustReply(t, "admin: put w", m.on(t, m.full, keyAdmin, "PUT", w+"/files/input/secret.txt", "secret"), 201)
	mustReply(t, "bound: put other", m.on(t, m.full, keyBound, "PUT", other+"/files/input/mine.txt", "mine"), 201)

	if got := mustReply(t, "bound: get other", m.on(t, m.full, keyBound, "GET", other+"/files/input/mine.txt", ""), 200); string(got.body) != "mine" {
		t.Errorf("its own file: %q", got.body)
	}
	mustReply(t, "bound: get w", m.on(t, m.full, keyBound, "GET", w+"/files/input/secret.txt", ""), 404)
	mustReply(t, "bound: overwrite w", m.on(t, m.full, keyBound, "PUT", w+"/files/input/secret.txt", "mine now"), 404)
	if got := mustReply(t, "admin: get w", m.on(t, m.full, keyAdmin, "GET", w+"/files/input/secret.txt", ""), 200); string(got.body) != "secret" {
		t.Errorf("w's file after the bound key's refused write: %q", got.body)
	}

	list := mustReply(t, "bound: workbenches", m.on(t, m.full, keyBound, "GET", "/v1/agents/a/workbenches", ""), 200)
	if s := string(list.body); !strings.Contains(s, `"other"`) || strings.Contains(s, `"w"`) {
		t.Errorf("its workbench list: %s", s)
	}
	m.wantSearchAndFeed(t, keyBound, "mine.txt", "secret.txt")

	// MCP: the session of root a reaches workbench other only.
	cs, err := m.connect(t, m.full, keyBound, "a")
	if err != nil {
		t.Fatal(err)
	}
	if a := callTool(t, cs, "workbench_read", map[string]any{"id": "other", "section": "input", "path": "mine.txt"}); a.isErr {
		t.Errorf("MCP read of its own file: %s", a.raw)
	}
	if a := callTool(t, cs, "workbench_read", map[string]any{"id": "w", "section": "input", "path": "secret.txt"}); !a.isErr || a.code != "NotFound" {
		t.Errorf("MCP read of w: %s", a.raw)
	}
	if a := callTool(t, cs, "workbench_put_file", map[string]any{"id": "w", "section": "input", "path": "secret.txt", "text": "x", "replace": true}); !a.isErr || a.code != "NotFound" {
		t.Errorf("MCP overwrite of w: %s", a.raw)
	}

	// OpenWOP: the owner is the key's tenant·workspace, the same files.
	wop := mustReply(t, "bound: OpenWOP get", m.on(t, m.full, keyBound, "GET", "/v1/host/workspace/files/input/mine.txt", ""), 200)
	if wop.json["content"] != "mine" {
		t.Errorf("OpenWOP read of its own file: %s", wop.body)
	}
}

// TestAuthBoundKeyCannotForkOrRestoreIntoAnotherWorkbench: a key bound to workbench other
// may snapshot it, but a fork or a restore of it makes a workbench the key would not reach:
// refused as a workbench it cannot create (404 naming the new name, as a PUT into another
// workbench is), the same whether that name is free or taken by a workbench the key cannot
// see, before anything is read or written: no snapshot of other is pinned and retired.
func TestAuthBoundKeyCannotForkOrRestoreIntoAnotherWorkbench(t *testing.T) {
	m := newMatrix(t)
	const other = "/v1/agents/a/workbenches/other"
	mustReply(t, "admin: put w", m.on(t, m.full, keyAdmin, "PUT", "/v1/agents/a/workbenches/w/files/input/secret.txt", "secret"), 201)
	mustReply(t, "bound: put other", m.on(t, m.full, keyBound, "PUT", other+"/files/input/mine.txt", "mine"), 201)
	mustReply(t, "bound: snapshot other", m.on(t, m.full, keyBound, "POST", other+"/snapshots", `{"name":"s1"}`), 201)
	for _, c := range []struct{ what, route, taken, free string }{
		{"live fork", "/fork", `{"fork":"w"}`, `{"fork":"w9"}`},
		{"fork at a snapshot", "/fork", `{"fork":"w","at":"snapshot:s1"}`, `{"fork":"w9","at":"snapshot:s1"}`},
		{"restore", "/restore", `{"destination_id":"w","at_snapshot":"s1"}`, `{"destination_id":"w9","at_snapshot":"s1"}`},
	} {
		taken := m.on(t, m.full, keyBound, "POST", other+c.route, c.taken)
		free := m.on(t, m.full, keyBound, "POST", other+c.route, c.free)
		for _, r := range []reply{taken, free} {
			if msg, _ := r.json["message"].(string); r.status != 404 || r.json["code"] != "NotFound" || strings.Contains(msg, `"other"`) {
				t.Errorf("bound key's %s of its own workbench: %d %s", c.what, r.status, r.body)
			}
		}
		if !strings.Contains(string(free.body), `w9`) {
			t.Errorf("bound key's %s: the answer does not name the workbench it would make: %s", c.what, free.body)
		}
	}
	snaps := mustReply(t, "admin: snapshots of other", m.on(t, m.full, keyAdmin, "GET", other+"/snapshots", ""), 200)
	if s := string(snaps.body); strings.Count(s, `"snapshot_id"`) != 1 || strings.Contains(s, "fork") {
		t.Errorf("the refused forks left snapshots of other behind: %s", s)
	}
}

// wantSearchAndFeed fails unless column key's root-wide search of root a and its change
// feed (the server-sent events of /events, read to the end) tell of file mine and never
// of file hidden.
func (m *matrix) wantSearchAndFeed(t *testing.T, key, mine, hidden string) {
	t.Helper()
	search := mustReply(t, key+": search", m.on(t, m.full, key, "POST", "/v1/agents/a/search", `{"predicates":[{"field":"artifact.ext","op":"eq","value":"txt"}]}`), 200)
	if s := string(search.body); !strings.Contains(s, mine) || strings.Contains(s, hidden) {
		t.Errorf("%s: its root-wide search: %s", key, s)
	}
	feed := mustReply(t, key+": feed", m.on(t, m.full, key, "GET", "/v1/agents/a/events?follow=false", "", "Accept", "text/event-stream"), 200)
	if s := string(feed.body); !strings.HasPrefix(feed.header.Get("Content-Type"), "text/event-stream") || !strings.Contains(s, mine) || strings.Contains(s, hidden) {
		t.Errorf("%s: its change feed (%s): %s", key, feed.header.Get("Content-Type"), s)
	}
}

// TestAuthPrefixTenantKeyOverOpenWOP: a key bound to OpenWOP tenant a, workspace other and
// the prefix outputs (issue 31) works in host.workspace below outputs; a file of the same
// workspace outside it answers byte for byte as a missing file to GET, PUT and DELETE,
// and its listing leaves the file out.
func TestAuthPrefixTenantKeyOverOpenWOP(t *testing.T) {
	m := newMatrix(t)
	m.adminKey(t, "wop", `{"name":"wop outputs","tenant":"a","workspace":"other","prefixes":["outputs/"],"scopes":["workspace:read","workspace:write"]}`)
	const other, files = "/v1/agents/a/workbenches/other/files/", "/v1/host/workspace/files/"
	mustReply(t, "admin: put outside", m.on(t, m.full, keyAdmin, "PUT", other+"input/secret.txt", "secret"), 201)
	mustReply(t, "wop: put inside", m.on(t, m.full, "wop", "PUT", files+"outputs/mine.txt", `{"content":"mine"}`, "Content-Type", "application/json"), 200)
	if got := mustReply(t, "wop: get inside", m.on(t, m.full, "wop", "GET", files+"outputs/mine.txt", ""), 200); got.json["content"] != "mine" {
		t.Errorf("its own file: %s", got.body)
	}
	for _, c := range []struct{ method, body string }{{"GET", ""}, {"PUT", `{"content":"mine now"}`}, {"DELETE", ""}} {
		hidden := m.on(t, m.full, "wop", c.method, files+"input/secret.txt", c.body, "Content-Type", "application/json")
		missing := m.on(t, m.full, "wop", c.method, files+"input/absent.txt", c.body, "Content-Type", "application/json")
		missing.body = []byte(strings.ReplaceAll(string(missing.body), "absent", "secret"))
		sameReply(t, c.method+" of a file outside the prefixes vs a missing one", hidden, missing)
		if hidden.status < 400 {
			t.Errorf("%s outside the prefixes: %d %s", c.method, hidden.status, hidden.body)
		}
	}
	list := mustReply(t, "wop: list", m.on(t, m.full, "wop", "GET", "/v1/host/workspace/files", ""), 200)
	if s := string(list.body); !strings.Contains(s, "outputs/mine.txt") || strings.Contains(s, "secret") {
		t.Errorf("its listing: %s", s)
	}
	if got := mustReply(t, "admin: get outside", m.on(t, m.full, keyAdmin, "GET", other+"input/secret.txt", ""), 200); string(got.body) != "secret" {
		t.Errorf("the file outside after the refused writes: %q", got.body)
	}
}
