package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAForkMintsAKeyBoundToIt: a fork asked with mint_key, through REST and through MCP's
// cairn_fork, answers a new key bound to the fork: the forking key's workspace scopes,
// its expiry (or an earlier one asked for), recorded as minted by it. The fork's key
// works in the fork and sees its parent as a workbench that does not exist; a later
// expiry than the forking key's is refused before the fork is made; revoking the forking
// key stops the fork's.
func TestAForkMintsAKeyBoundToIt(t *testing.T) {
	m := newMatrix(t)
	expires := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	m.adminKey(t, "owner", `{"name":"owner","agents":["a"],"scopes":["workspace:read","workspace:write","review"],"expires_at":"`+expires.Format(time.RFC3339)+`"}`)
	const wbs = "/v1/agents/a/workbenches/"
	mustReply(t, "owner: put", m.on(t, m.full, "owner", "PUT", wbs+"w/files/input/x.txt", "x"), 201)

	// A key that would outlive the owner's: refused, and no fork is made.
	late := m.on(t, m.full, "owner", "POST", wbs+"w/fork", `{"fork":"f0","mint_key":true,"key_expires_at":"`+expires.Add(time.Hour).Format(time.RFC3339)+`"}`)
	if late.status != 403 || late.json["code"] != "PermissionDenied" || late.json["details"].(map[string]any)["field"] != "key_expires_at" {
		t.Errorf("a fork key outliving the owner's: %d %s", late.status, late.body)
	}
	mustReply(t, "owner: the refused fork", m.on(t, m.full, "owner", "GET", wbs+"f0/files/input/x.txt", ""), 404)
	if r := m.on(t, m.full, "owner", "POST", wbs+"w/fork", `{"fork":"f0","key_expires_at":"2030-01-01T00:00:00Z"}`); r.status != 400 || !strings.Contains(string(r.body), "key_expires_at") {
		t.Errorf("key_expires_at without mint_key: %d %s", r.status, r.body)
	}

	fork := mustReply(t, "owner: fork with a key", m.on(t, m.full, "owner", "POST", wbs+"w/fork", `{"fork":"f1","mint_key":true}`), 200)
	key, _ := fork.json["key"].(map[string]any)
	if key == nil || key["workbench"] != "f1" || key["minted_by"] != m.ids["owner"] || key["expires_at"] != expires.Format(time.RFC3339) ||
		strings.Join(anyStrings(key["scopes"]), ",") != "workspace:read,workspace:write,review" || key["secret"] == nil {
		t.Fatalf("the fork's key: %s", fork.body)
	}
	m.authz["f1"] = "Bearer " + key["secret"].(string)
	if got := mustReply(t, "f1 key: read the fork", m.on(t, m.full, "f1", "GET", wbs+"f1/files/input/x.txt", ""), 200); string(got.body) != "x" {
		t.Errorf("the fork's file: %q", got.body)
	}
	mustReply(t, "f1 key: write the fork", m.on(t, m.full, "f1", "PUT", wbs+"f1/files/outputs/y.txt", "y"), 201)
	parent, missing := m.on(t, m.full, "f1", "GET", wbs+"w/files/input/x.txt", ""), m.on(t, m.full, "f1", "GET", wbs+"q/files/input/x.txt", "")
	missing.body = []byte(strings.ReplaceAll(string(missing.body), `\"q\"`, `\"w\"`))
	sameReply(t, "the fork key reads the parent vs a workbench that does not exist", parent, missing)

	// A fork with a key under an Idempotency-Key, retried: the retry answers the first
	// fork, replayed, and mints no second key (the first answer carried the secret).
	keys := func() int {
		l := mustReply(t, "admin: list keys", m.send(t, m.full.adminURL, keyAdmin, "GET", KeysPath, ""), 200)
		return len(l.json["keys"].([]any))
	}
	before := keys()
	first := mustReply(t, "owner: keyed fork with a key", m.on(t, m.full, "owner", "POST", wbs+"w/fork", `{"fork":"f3","mint_key":true}`, "Idempotency-Key", "fork-f3"), 200)
	again := mustReply(t, "owner: the same fork again", m.on(t, m.full, "owner", "POST", wbs+"w/fork", `{"fork":"f3","mint_key":true}`, "Idempotency-Key", "fork-f3"), 200)
	if k, _ := first.json["key"].(map[string]any); k == nil || k["workbench"] != "f3" || first.json["replayed"] != false {
		t.Errorf("the keyed fork's first answer: %s", first.body)
	}
	if again.json["replayed"] != true || again.json["key"] != nil || again.json["fork_id"] != "f3" {
		t.Errorf("the keyed fork's replay: %s", again.body)
	}
	if n := keys(); n != before+1 {
		t.Errorf("keys after a fork with a key and its replay: %d, want %d", n, before+1)
	}

	// MCP: cairn_fork with mint_key and an earlier expiry.
	cs, err := m.connectTo(t, m.full, "owner", "/v1/agents/a/mcp/cairn")
	if err != nil {
		t.Fatal(err)
	}
	early := expires.Add(-time.Hour)
	a := callTool(t, cs, "cairn_fork", map[string]any{"id": "w", "fork": "f2", "mint_key": true, "key_expires_at": early.Format(time.RFC3339)})
	mk, _ := a.res["key"].(map[string]any)
	if a.isErr || mk == nil || mk["workbench"] != "f2" || mk["expires_at"] != early.Format(time.RFC3339) || mk["minted_by"] != m.ids["owner"] {
		t.Fatalf("cairn_fork with mint_key: %s", a.raw)
	}
	m.authz["f2"] = "Bearer " + mk["secret"].(string)
	mustReply(t, "f2 key: read its fork", m.on(t, m.full, "f2", "GET", wbs+"f2/files/input/x.txt", ""), 200)
	mustReply(t, "f2 key: f1 is not its", m.on(t, m.full, "f2", "GET", wbs+"f1/files/input/x.txt", ""), 404)

	// The fork's key is the fork's owner's too: it mints a narrower one for its fork.
	sub := mustReply(t, "f1 key: mint for its fork", m.on(t, m.full, "f1", "POST", MintPath,
		`{"name":"sub","agents":["a"],"workbench":"f1","prefixes":["outputs/"],"scopes":["workspace:read"],"expires_at":"`+early.Format(time.RFC3339)+`"}`), 201)
	m.authz["sub"] = "Bearer " + sub.json["secret"].(string)
	mustReply(t, "sub: read below outputs", m.on(t, m.full, "sub", "GET", wbs+"f1/files/outputs/y.txt", ""), 200)

	mustReply(t, "revoke the owner", m.send(t, m.full.adminURL, keyAdmin, "POST", KeysRevokePath, `{"id":"`+m.ids["owner"]+`"}`), 200)
	for _, k := range []string{"f1", "f2", "sub"} {
		wantUnauthenticated(t, "a fork's key after its owner's revocation", k, "GET", m.on(t, m.full, k, "GET", wbs+"f1/files/input/x.txt", ""))
	}
}

// TestAForksKeyDiscardsItsForkAndItsPin: the key a fork answers with mint_key, bound to
// the fork alone, discards the fork, and the discard releases the fork's pin on the parent
// (which that key cannot see): the owner finds it retired, by the fork's key through the
// discard. The answer tells the fork's key nothing of the parent's snapshots.
func TestAForksKeyDiscardsItsForkAndItsPin(t *testing.T) {
	m := newMatrix(t)
	m.adminKey(t, "owner", `{"name":"owner","agents":["a"],"scopes":["workspace:read","workspace:write"]}`)
	const wbs = "/v1/agents/a/workbenches/"
	mustReply(t, "owner: put", m.on(t, m.full, "owner", "PUT", wbs+"w1/files/input/x.txt", "x"), 201)
	fork := mustReply(t, "owner: fork with a key", m.on(t, m.full, "owner", "POST", wbs+"w1/fork", `{"fork":"fk1","mint_key":true}`), 200)
	key := fork.json["key"].(map[string]any)
	m.authz["fk1"] = "Bearer " + key["secret"].(string)
	pin := fork.json["pinned_snapshot_id"]

	d := mustReply(t, "fk1 key: discard its fork", m.on(t, m.full, "fk1", "POST", wbs+"fk1/discard", ""), 200)
	if d.json["deleted"] != true || d.json["retired_snapshot_id"] != nil {
		t.Fatalf("the discard by the fork's key: %s", d.body)
	}
	list := mustReply(t, "owner: the parent's snapshots", m.on(t, m.full, "owner", "GET", wbs+"w1/snapshots", ""), 200)
	var found map[string]any
	for _, s := range list.json["snapshots"].([]any) {
		if s := s.(map[string]any); s["snapshot_id"] == pin {
			found = s
		}
	}
	if found == nil || found["state"] != "retired" || found["retired_by"] != key["id"].(string)+" via rest/discard" {
		t.Fatalf("the pin %v after the fork's key discarded the fork: %v (%s)", pin, found, list.body)
	}

	// The fork's key ended with its fork: a key binds a workbench by name, so a live one
	// would reach the next fork of that name, made for another sub-agent.
	mustReply(t, "owner: fork fk1 again", m.on(t, m.full, "owner", "POST", wbs+"w1/fork", `{"fork":"fk1"}`), 200)
	mustReply(t, "owner: put into the new fk1", m.on(t, m.full, "owner", "PUT", wbs+"fk1/files/input/private.txt", "private"), 201)
	for _, r := range []reply{
		m.on(t, m.full, "fk1", "GET", wbs+"fk1/files/input/private.txt", ""),
		m.on(t, m.full, "fk1", "DELETE", wbs+"fk1/files/input/private.txt", ""),
	} {
		if r.status != http.StatusUnauthorized {
			t.Errorf("the discarded fork's key on the next fk1: %d %s, want 401", r.status, r.body)
		}
	}
	keys := mustReply(t, "admin: keys", m.send(t, m.full.adminURL, keyAdmin, "GET", KeysPath, ""), 200)
	if s := string(keys.body); !strings.Contains(s, key["id"].(string)) || strings.Count(s, `"revoked_at"`) < 1 {
		t.Errorf("the fork's key is not listed as revoked: %s", s)
	}
	// The owner's own key, which made the fork, stays.
	mustReply(t, "owner: read the new fk1", m.on(t, m.full, "owner", "GET", wbs+"fk1/files/input/private.txt", ""), 200)
}

// anyStrings is a JSON array of strings as []string.
func anyStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// TestAStreamEndsWithItsKey: a change-feed stream opened by a key reads nothing written
// after that key is revoked — by the fork's discard, which revokes the fork's key, here
// followed by another principal's workbench of the same name — and ends with an
// Unauthenticated error frame instead.
func TestAStreamEndsWithItsKey(t *testing.T) {
	m := newMatrix(t)
	m.adminKey(t, "owner", `{"name":"owner","agents":["a"],"scopes":["workspace:read","workspace:write"]}`)
	const wbs = "/v1/agents/a/workbenches/"
	mustReply(t, "owner: put", m.on(t, m.full, "owner", "PUT", wbs+"run/files/outputs/r.md", "x"), 201)
	fork := mustReply(t, "owner: fork with a key", m.on(t, m.full, "owner", "POST", wbs+"run/fork", `{"fork":"kfx","mint_key":true}`), 200)
	m.authz["kfx"] = "Bearer " + fork.json["key"].(map[string]any)["secret"].(string)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", m.full.url+"/v1/agents/a/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", m.authz["kfx"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the fork key's stream: %d", resp.StatusCode)
	}
	body := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body) // until the node ends the stream, or the deadline
		body <- string(b)
	}()
	mustReply(t, "kfx key: discard its fork", m.on(t, m.full, "kfx", "POST", wbs+"kfx/discard", ""), 200)
	mustReply(t, "owner: a later workbench of the same name", m.on(t, m.full, "owner", "PUT", wbs+"kfx/files/input/later.txt", "later"), 201)
	got := <-body
	if ctx.Err() != nil {
		t.Fatalf("the stream of a revoked key went on until the test's deadline: %q", got)
	}
	if strings.Contains(got, "later.txt") {
		t.Errorf("the stream of a revoked key carried an event written after the revocation: %q", got)
	}
	if !strings.Contains(got, "event: error") || !strings.Contains(got, "Unauthenticated") {
		t.Errorf("the stream ended without an Unauthenticated error frame: %q", got)
	}
}
