package server

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/auth"
)

// The first key of an embedded node is made before the node ever started: the data
// directory does not exist yet (README: running a node reachable from other hosts).
func TestDataDirKeysBeforeTheFirstStart(t *testing.T) {
	cfg := testConfig(t)
	cfg.DataDir = filepath.Join(cfg.DataDir, "fresh", "cairn-data")
	cfg.Auth = ops.AuthRequired
	token := createKeys(t, cfg.DataDir, auth.KeySpec{Name: "admin", AllAgents: true, Scopes: auth.Scopes})[0]
	_, base := serveNode(t, cfg)
	if code, _, b := send(t, http.MethodPut, base+"/v1/agents/a/workbenches/w", map[string]string{"Authorization": "Bearer " + token}, ""); code != http.StatusCreated {
		t.Fatalf("the first key on the node's first start: %d %s", code, b)
	}

	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDataDirKeys(file); err == nil {
		t.Fatal("a file opened as a data directory")
	}
}

// createKeys creates a key of each spec in the key file of dataDir (OpenDataDirKeys),
// closes the file again so that a node can start on it, and returns the keys' tokens in
// spec order.
func createKeys(t *testing.T, dataDir string, specs ...auth.KeySpec) []string {
	t.Helper()
	keys, err := OpenDataDirKeys(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]string, len(specs))
	for i, spec := range specs {
		k, token, err := auth.NewKey(spec, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.Create(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		tokens[i] = token
	}
	if err := keys.Close(); err != nil {
		t.Fatal(err)
	}
	return tokens
}

// A request with two Authorization headers is refused, whichever of them is valid: a
// proxy in front could authorize one while this node acts on the other.
func TestTwoCredentialsAreRefused(t *testing.T) {
	cfg := testConfig(t)
	cfg.Auth = ops.AuthRequired
	tokens := createKeys(t, cfg.DataDir, auth.KeySpec{Name: "a", Agents: []string{"a"}, Scopes: auth.Scopes},
		auth.KeySpec{Name: "b", Agents: []string{"b"}, Scopes: auth.Scopes})
	_, base := serveNode(t, cfg)
	one := func(token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, base+"/v1/agents/a/workbenches/w", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range []string{token, tokens[0]} {
			if tok != "" {
				req.Header.Add("Authorization", "Bearer "+tok)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := one(""); code != http.StatusCreated {
		t.Fatalf("one valid key: %d, want 201", code)
	}
	for _, first := range []string{tokens[1], tokens[0]} {
		if code := one(first); code != http.StatusUnauthorized {
			t.Errorf("two Authorization headers: %d, want 401", code)
		}
	}
}
