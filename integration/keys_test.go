package integration

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/workbench/auth/authtest"
)

// TestAPIKeysOnAnEmbeddedNode drives key management with the real binary: the first admin
// key made offline on the data directory, a node that requires keys, keys made and revoked
// through its admin listener, and keys that survive kill -9.
func TestAPIKeysOnAnEmbeddedNode(t *testing.T) {
	dir := t.TempDir()
	admin := framework.CreateKey(t, cairnRaceBin, nil, "operator", "--data-dir", dir,
		"--all-agents", "--scope", "admin,workspace:read,workspace:write")
	plain := mustCLI(t, cliOptions{}, "admin", "key", "create", "--data-dir", dir, "--name", "reader", "--agent", "a", "--scope", "workspace:read")
	lines := strings.Split(strings.TrimSpace(plain.stdout), "\n")
	reader := lines[len(lines)-1]
	if !strings.HasPrefix(reader, "cairn_") {
		t.Fatalf("the last line is not the key:\n%s", plain)
	}

	s := framework.StartProcess(t, cairnBin, dir, "--auth", "required")
	wb := s.URL + "/v1/agents/a/workbenches/w"

	if r := runCLI(t, cliOptions{}, "admin", "key", "list", "--data-dir", dir); r.code == 0 || !strings.Contains(r.stderr, "in use") {
		t.Fatalf("offline key management on a running node's data directory must fail:\n%s", r)
	}
	if r := doHTTP(t, http.MethodGet, wb, nil); r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") ||
		!strings.Contains(string(r.body), `"code":"Unauthenticated"`) {
		t.Fatalf("no key: %d %v %s", r.status, r.header, r.body)
	}
	if r := doHTTP(t, http.MethodPut, wb, nil, framework.Bearer(admin.Secret)...); r.status != http.StatusCreated {
		t.Fatalf("create a workbench with the admin key: %d %s", r.status, r.body)
	}
	if r := doHTTP(t, http.MethodGet, wb, nil, framework.Bearer(reader)...); r.status != http.StatusOK {
		t.Fatalf("read with the reader key: %d %s", r.status, r.body)
	}

	online := func(key string, args ...string) cliResult {
		return runCLI(t, cliOptions{env: []string{"CAIRN_API_KEY=" + key}},
			append([]string{"admin", "key", "--admin-server", s.AdminURL}, args...)...)
	}
	if r := online("", "list"); r.code == 0 || !strings.Contains(r.stderr, "Unauthenticated") {
		t.Fatalf("list without a key:\n%s", r)
	}
	if r := online(reader, "list"); r.code == 0 || !strings.Contains(r.stderr, "PermissionDenied") {
		t.Fatalf("list with a key without the admin scope:\n%s", r)
	}
	ci := framework.CreateKey(t, cairnRaceBin, []string{"CAIRN_API_KEY=" + admin.Secret}, "ci", "--admin-server", s.AdminURL,
		"--agent", "a", "--scope", "workspace:read", "--expires", "30d")
	if r := doHTTP(t, http.MethodGet, wb, nil, framework.Bearer(ci.Secret)...); r.status != http.StatusOK {
		t.Fatalf("the key made online: %d %s", r.status, r.body)
	}
	list := online(admin.Secret, "list")
	if list.code != 0 || !strings.Contains(list.stdout, ci.ID) || strings.Contains(list.stdout, "cairn_") {
		t.Fatalf("list must show the new key's id and no secret:\n%s", list)
	}
	if r := online(admin.Secret, "revoke", ci.ID); r.code != 0 || !strings.Contains(r.stdout, "revoked "+ci.ID) {
		t.Fatalf("revoke:\n%s", r)
	}
	if r := doHTTP(t, http.MethodGet, wb, nil, framework.Bearer(ci.Secret)...); r.status != http.StatusUnauthorized {
		t.Fatalf("the revoked key: %d %s", r.status, r.body)
	}

	s.Kill()
	s.Restart()
	wb = s.URL + "/v1/agents/a/workbenches/w"
	if r := doHTTP(t, http.MethodGet, wb, nil, framework.Bearer(reader)...); r.status != http.StatusOK {
		t.Fatalf("the reader key after kill -9: %d %s", r.status, r.body)
	}
	if r := doHTTP(t, http.MethodGet, wb, nil, framework.Bearer(ci.Secret)...); r.status != http.StatusUnauthorized {
		t.Fatalf("the revoked key after kill -9: %d %s", r.status, r.body)
	}
	for _, secret := range []string{admin.Secret, reader, ci.Secret} {
		if strings.Contains(s.Output(), secret[len("cairn_")+16:]) {
			t.Fatal("the server log holds a key's secret")
		}
	}
}

// TestMCPStdioProxyWithAnAPIKey: `cairn mcp --server URL --api-key K` in front of a node
// that requires keys acts for K's principal: a read-only key reads and is refused
// PermissionDenied on a write, another root's key sees the root as missing, and without a
// live key the proxy does not start (the node's 401), never showing the key.
func TestMCPStdioProxyWithAnAPIKey(t *testing.T) {
	dir := t.TempDir()
	keyFor := func(name string, args ...string) string {
		return framework.CreateKey(t, cairnRaceBin, nil, name, append([]string{"--data-dir", dir}, args...)...).Secret
	}
	writer := keyFor("writer", "--agent", "a", "--scope", "workspace:read,workspace:write")
	reader := keyFor("reader", "--agent", "a", "--scope", "workspace:read")
	other := keyFor("other", "--agent", "b", "--scope", "workspace:read,workspace:write")
	s := framework.StartProcess(t, cairnBin, dir, "--auth", "required")

	proxy := func(key string) mcpCaller {
		cs, closeSession := connectStdio(t, "mcp", "--agent", "a", "--server", s.URL, "--api-key", key)
		t.Cleanup(closeSession)
		return mcpCaller{t: t, cs: cs}
	}
	put := map[string]any{"id": "w", "section": "input", "path": "x.txt", "text": "hello"}
	read := map[string]any{"id": "w", "section": "input", "path": "x.txt"}
	proxy(writer).ok("workbench_put_file", put)
	ro := proxy(reader)
	if r := ro.ok("workbench_read", read); r.list(t, "items")[0].(map[string]any)["value"] != "hello" {
		t.Errorf("the reader key through the proxy: %v", r)
	}
	if r, isErr := ro.call("workbench_put_file", put); !isErr || r.str("code") != "PermissionDenied" {
		t.Errorf("a write with the reader key through the proxy: %v", r)
	}
	if r, isErr := proxy(other).call("workbench_read", read); !isErr || r.str("code") != "NotFound" {
		t.Errorf("another root's key through the proxy: %v", r)
	}
	for name, key := range map[string]string{"no key": "", "a wrong secret": authtest.WrongSecret(reader)} {
		r := runCLI(t, cliOptions{stdin: strings.NewReader("")}, "mcp", "--agent", "a", "--server", s.URL, "--api-key", key)
		if r.code == 0 || !strings.Contains(r.stderr, "401") && !strings.Contains(r.stderr, "Unauthorized") {
			t.Errorf("the proxy with %s:\n%s", name, r)
		}
		if key != "" && strings.Contains(r.stderr, key[len("cairn_")+16:]) {
			t.Errorf("the proxy with %s shows the key:\n%s", name, r)
		}
	}
}
