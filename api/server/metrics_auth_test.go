package server

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/auth"
)

// serveWithKeys serves a node of cfg whose key file holds a read key of root a and an
// admin key of every root; it returns the client and admin base URLs (over loopback) and the
// Authorization header of each key by name.
func serveWithKeys(t *testing.T, cfg ops.Config) (client, admin string, authz map[string]string) {
	t.Helper()
	tokens := createKeys(t, cfg.DataDir,
		auth.KeySpec{Name: "read", Agents: []string{"a"}, Scopes: []auth.Scope{auth.ScopeRead}},
		auth.KeySpec{Name: "admin", AllAgents: true, Scopes: []auth.Scope{auth.ScopeAdmin}})
	authz = map[string]string{"read": "Bearer " + tokens[0], "admin": "Bearer " + tokens[1]}
	n, url := serveNode(t, cfg)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
	_, adminPort, _ := net.SplitHostPort(n.AdminAddr().String())
	return "http://127.0.0.1:" + port, "http://127.0.0.1:" + adminPort, authz
}

func getAuthz(t *testing.T, url, authz string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b.String()
}

// TestMetricsBeyondLoopbackNeedAnAdminKey (issue 25): on listeners bound beyond loopback,
// /metrics, which names every key's id and request counts, answers only a key with the
// admin scope, also to a connection from loopback (a reverse proxy on the node's host).
func TestMetricsBeyondLoopbackNeedAnAdminKey(t *testing.T) {
	cfg := testConfig(t)
	cfg.Listen, cfg.AdminListen, cfg.InsecurePlaintext = "0.0.0.0:0", "0.0.0.0:0", true
	client, admin, authz := serveWithKeys(t, cfg)
	getAuthz(t, client+"/v1/agents/a/usage", authz["read"]) // a principal's request, counted
	for _, base := range []string{client, admin} {
		if status, body := getAuthz(t, base+"/metrics", ""); status != 401 || strings.Contains(body, "cairn_principal_requests_total") {
			t.Errorf("%s/metrics without a key: %d %.200s", base, status, body)
		}
		if status, body := getAuthz(t, base+"/metrics", authz["read"]); status != 403 ||
			body != `{"status":"error","code":"PermissionDenied","details":{"scope":"admin"},"message":"/metrics needs a key with the admin scope","retryable":false}`+"\n" {
			t.Errorf("%s/metrics with a read key: %d %.200s", base, status, body)
		}
		if status, body := getAuthz(t, base+"/metrics", authz["admin"]); status != 200 || !strings.Contains(body, "cairn_principal_requests_total") {
			t.Errorf("%s/metrics with an admin key: %d %.200s", base, status, body)
		}
	}
}

// TestAdminListenerBeyondLoopbackNeedsKeys: with --auth auto, a client listener on
// loopback and an admin listener beyond it, the admin listener still requires keys
// (its routes create keys) and its /metrics an admin key; the loopback client listener
// keeps serving without one.
func TestAdminListenerBeyondLoopbackNeedsKeys(t *testing.T) {
	cfg := testConfig(t)
	cfg.AdminListen, cfg.InsecurePlaintext = "0.0.0.0:0", true
	client, admin, authz := serveWithKeys(t, cfg)
	if status, body := getAuthz(t, admin+KeysPath, ""); status != 401 {
		t.Errorf("the key list without a key: %d %.200s", status, body)
	}
	if status, body := getAuthz(t, admin+"/metrics", ""); status != 401 {
		t.Errorf("the admin listener's /metrics without a key: %d %.200s", status, body)
	}
	if status, body := getAuthz(t, admin+KeysPath, authz["admin"]); status != 200 {
		t.Errorf("the key list with the admin key: %d %.200s", status, body)
	}
	if status, body := getAuthz(t, client+"/metrics", ""); status != 200 {
		t.Errorf("the loopback client listener's /metrics: %d %.200s", status, body)
	}
}
