package server

import (
	"net/http"
	"strings"
	"testing"
)

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
	search := mustReply(t, "prefix: search", m.on(t, m.full, keyPrefix, "POST", "/v1/agents/a/search", `{"predicates":[{"field":"artifact.ext","op":"eq","value":"txt"}]}`), 200)
	if s := string(search.body); !strings.Contains(s, "mine.txt") || strings.Contains(s, "secret.txt") {
		t.Errorf("its search: %s", s)
	}
	feed := mustReply(t, "prefix: feed", m.on(t, m.full, keyPrefix, "GET", "/v1/agents/a/events?follow=false", ""), 200)
	if s := string(feed.body); !strings.Contains(s, "mine.txt") || strings.Contains(s, "secret.txt") {
		t.Errorf("its change feed: %s", s)
	}
	// Writes outside: the same refusal for an existing and a missing path.
	over := m.on(t, m.full, keyPrefix, "PUT", w+"/files/input/secret.txt", "mine now")
	fresh := m.on(t, m.full, keyPrefix, "PUT", w+"/files/input/absent.txt", "mine now")
	sameReply(t, "a write outside: existing vs missing", over, fresh)
	mustReply(t, "prefix: overwrite outside", over, 403)
	if got := mustReply(t, "admin: get outside", m.on(t, m.full, keyAdmin, "GET", w+"/files/input/secret.txt", ""), 200); string(got.body) != "secret" {
		t.Errorf("the file outside after a refused write: %q", got.body)
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
