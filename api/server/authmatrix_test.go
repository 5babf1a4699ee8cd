package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/internal/httpcall"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/auth"
	"github.com/cairnstore/cairn/workbench/auth/authtest"
)

// The authorization matrix of issue 14 (acceptance: every REST route and every MCP tool
// with {no key, bad key, revoked key, expired key, read-only key, key of another root,
// admin key}), through the assembled node: two embedded nodes (Open) that require keys
// (--auth required) and hold the same API keys in their key files. full holds roots b and
// a; twin holds the same root b and no root a, and signs cursors with its own key. Root a
// on twin is the baseline "a root that does not exist".
//
// The columns (matrixKeys): the five credentials that authenticate nobody are answered
// 401 before routing; the others are the principals of a key:
//
//	read-only key       root a, workspace:read
//	write-only key      root a, workspace:write
//	another root's key  root b, workspace:read and workspace:write
//	bound key           only workbench "other" of root a (--tenant a --workspace other),
//	                    workspace:read, workspace:write and review
//	admin key           every root, every scope (the operator)
//	prefix-bound key    root a's paths at or below "outputs" (issue 31), workspace:read,
//	                    workspace:write and review; its expired twin is answered 401 like
//	                    an unknown key (authmatrix_prefix_test.go checks what it sees)

// The matrix's columns.
const (
	keyNone      = "no key"
	keyMalformed = "malformed key"
	keyBad       = "wrong secret"
	keyRevoked   = "revoked key"
	keyExpired   = "expired key"
	keyRO        = "read-only key"
	keyWO        = "write-only key"
	keyOther     = "another root's key"
	keyBound     = "a key bound to another workbench"
	keyAdmin     = "admin key"
	keyPrefix    = "a key bound to root a's outputs"
	keyPrefixExp = "an expired key bound to root a's outputs"
)

// unauthenticatedKeys are the columns answered 401: none names a live key.
var unauthenticatedKeys = []string{keyNone, keyMalformed, keyBad, keyRevoked, keyExpired, keyPrefixExp}

// keySpecs are the keys the matrix stores (the revoked one is revoked through the admin
// route once the nodes run; the expired one is stored already expired).
var keySpecs = map[string]auth.KeySpec{
	keyRO:    {Name: "read-only on a", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead}},
	keyWO:    {Name: "write-only on a", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeWrite}},
	keyOther: {Name: "read-write on b", Agents: []string{"b"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}},
	keyBound: {Name: "bound to a/other", Tenant: "a", Workspace: "other",
		Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeReview}},
	keyAdmin:   {Name: "operator", AllAgents: true, Scopes: auth.Scopes},
	keyRevoked: {Name: "revoked", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}},
	keyExpired: {Name: "expired", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}},
	keyPrefix: {Name: "a's outputs", Agents: []string{"a"}, Prefixes: []string{"outputs/"},
		Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeReview}},
	keyPrefixExp: {Name: "a's outputs, expired", Agents: []string{"a"}, Prefixes: []string{"outputs/"},
		Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}},
}

// matrixNode is one served node of the matrix.
type matrixNode struct {
	name, url, adminURL string
	s3URL               string // the S3 gateway's, when it serves one
}

// matrix is the two nodes and the Authorization header of every column ("" for none).
type matrix struct {
	full, twin *matrixNode
	authz      map[string]string
	ids        map[string]string // key id by column, for the columns that have a key
}

// newMatrix makes the keys, stores them in two data directories and serves a node that
// requires keys on each, then revokes the revoked key through each node's admin route.
func newMatrix(t *testing.T) *matrix {
	t.Helper()
	now := time.Now()
	m := &matrix{authz: map[string]string{keyNone: "", keyMalformed: "Bearer cairn_not-a-key"}, ids: map[string]string{}}
	var keys []auth.Key
	for name, spec := range keySpecs {
		k, token, err := auth.NewKey(spec, now)
		if err != nil {
			t.Fatal(err)
		}
		if name == keyExpired || name == keyPrefixExp {
			k.ExpiresAt = now.Add(-time.Minute)
		}
		keys = append(keys, k)
		m.authz[name], m.ids[name] = "Bearer "+token, k.ID
	}
	// The read-only key's id with another secret of the same form.
	m.authz[keyBad] = authtest.WrongSecret(m.authz[keyRO])

	m.full, m.twin = serveKeyed(t, "full", keys, nil), serveKeyed(t, "twin", keys, nil)
	for _, n := range []*matrixNode{m.full, m.twin} {
		r := m.send(t, n.adminURL, keyAdmin, "POST", KeysRevokePath, `{"id":"`+m.ids[keyRevoked]+`"}`)
		if r.status != http.StatusOK || r.json["state"] != "revoked" {
			t.Fatalf("%s: revoke through the admin route: %d %s", n.name, r.status, r.body)
		}
	}
	return m
}

// serveKeyed serves a node that requires keys and holds keys, its configuration edited
// by edit when not nil.
func serveKeyed(t *testing.T, name string, keys []auth.Key, edit func(*ops.Config)) *matrixNode {
	t.Helper()
	cfg := testConfig(t)
	cfg.Auth = ops.AuthRequired
	if edit != nil {
		edit(&cfg)
	}
	s, err := OpenDataDirKeys(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := s.Create(t.Context(), k); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n, url := serveNode(t, cfg)
	mn := &matrixNode{name: name, url: url, adminURL: "http://" + n.AdminAddr().String()}
	if a := n.S3Addr(); a != nil {
		mn.s3URL = "http://" + a.String()
	}
	return mn
}

// reply is a fully read answer; json holds a JSON body's object.
type reply struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

// send sends one request to base+target with column key's credentials.
func (m *matrix) send(t *testing.T, base, key, method, target, body string, headers ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	authz, ok := m.authz[key]
	if !ok {
		t.Fatalf("no column %q", key)
	}
	if authz != "" {
		headers = append([]string{"Authorization", authz}, headers...)
	}
	a := httpcall.Do(t, httpcall.New(t, method, base+target, rd), headers...)
	b := a.Body
	r := reply{status: a.Status, header: a.Header, body: b}
	if strings.HasPrefix(a.Header.Get("Content-Type"), "application/json") && method != http.MethodHead {
		if err := json.Unmarshal(b, &r.json); err != nil {
			t.Fatalf("%s %s: not JSON: %q", method, target, b)
		}
	}
	return r
}

// adminKey makes a key from body (a KeyRequest) on the full node's admin listener, with
// the admin column's credentials, and makes it column name (m.authz and m.ids). It
// returns the admin's answer, which holds the key's secret.
func (m *matrix) adminKey(t *testing.T, name, body string) reply {
	t.Helper()
	k := mustReply(t, "admin: the "+name+" key", m.send(t, m.full.adminURL, keyAdmin, "POST", KeysPath, body), 201)
	m.authz[name], m.ids[name] = "Bearer "+k.json["secret"].(string), k.json["id"].(string)
	return k
}

// on sends to node n's client listener.
func (m *matrix) on(t *testing.T, n *matrixNode, key, method, target, body string, headers ...string) reply {
	t.Helper()
	return m.send(t, n.url, key, method, target, body, headers...)
}

// sameReply fails unless got and want have the same status, headers (but Date) and body
// bytes.
func sameReply(t *testing.T, what string, got, want reply) {
	t.Helper()
	g, w := got.header.Clone(), want.header.Clone()
	g.Del("Date")
	w.Del("Date")
	if got.status != want.status || string(got.body) != string(want.body) || fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("%s:\n got %d %v %s\nwant %d %v %s", what, got.status, g, got.body, want.status, w, want.body)
	}
}

func mustReply(t *testing.T, what string, r reply, status int) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.status, status, r.body)
	}
	return r
}

// The exact 401 answers (RFC 6750 §3): no key, and a key that names no live key.
const (
	noKeyBody      = `{"status":"error","code":"Unauthenticated","details":{},"message":"this server requires an API key: send Authorization: Bearer cairn_…","retryable":false}` + "\n"
	invalidKeyBody = `{"status":"error","code":"Unauthenticated","details":{},"message":"the API key is not valid (malformed, unknown, revoked or expired)","retryable":false}` + "\n"
)

// wantUnauthenticated fails unless r is the exact 401 of column key (a HEAD answer has
// no body).
func wantUnauthenticated(t *testing.T, what, key, method string, r reply) {
	t.Helper()
	challenge, body := `Bearer realm="cairn", error="invalid_token"`, invalidKeyBody
	if key == keyNone {
		challenge, body = `Bearer realm="cairn"`, noKeyBody
	}
	if method == http.MethodHead {
		body = ""
	}
	if r.status != http.StatusUnauthorized || string(r.body) != body || r.header.Get("WWW-Authenticate") != challenge ||
		r.header.Get("Content-Type") != "application/json" {
		t.Errorf("%s: %s: got %d %v %s, want 401 %q %s", what, key, r.status, r.header, r.body, challenge, body)
	}
}

// permissionDenied is the exact 403 of principal id lacking scope on root a.
func permissionDenied(id, verb string, scope auth.Scope) string {
	return fmt.Sprintf(`{"status":"error","code":"PermissionDenied","details":{"scope":"%s"},"message":"principal \"%s\" may not %s agent root \"a\": it lacks the %s scope","retryable":false}`+"\n", scope, id, verb, scope)
}
