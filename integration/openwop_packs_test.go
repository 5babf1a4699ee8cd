package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/workbench"
)

// Issue 18's acceptance on real processes: the seed's positive example (draft P, inert;
// revise to P'; apply; readback RFC 8785-equal to P' and not to P) through `cairn serve`
// with keys, and the readback surviving kill -9 of the node and a leader failover on a
// 3-node cluster.

const (
	owPackName  = "private.tenant-a.helper"
	owAgentID   = "private.tenant-a.helper.main"
	owPackScope = "workspace:read,workspace:write,review"
)

func owAgentPack(version, prompt string) map[string]any {
	return map[string]any{"kind": "node", "name": owPackName, "version": version,
		"engines": map[string]any{"openwop": ">=2.0.0 <3.0.0"},
		"runtime": map[string]any{"language": "remote", "entry": "https://agents.example.com/helper"},
		"agents":  []any{map[string]any{"agentId": owAgentID, "persona": "Helper", "modelClass": "general", "systemPrompt": prompt}}}
}

// owPackKeys makes tenant A's key with the review scope (it applies) and tenant B's.
func owPackKeys(t *testing.T, store ...string) (a, b string) {
	t.Helper()
	mk := func(tenant, scopes string) string {
		return framework.CreateKey(t, cairnRaceBin, nil, "packs-"+tenant,
			append(store, "--tenant", tenant, "--workspace", "main", "--scope", scopes)...).Secret
	}
	return mk("tenant-a", owPackScope), mk("tenant-b", owPackScope)
}

// owPackSeed runs the seed's positive example and answers the installed artifact P'.
func owPackSeed(t *testing.T, a, b owClient) []byte {
	t.Helper()
	p := owAgentPack("1.0.0", "You help.")
	created := a.do(http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": p, "title": "helper"})
	if created.status != http.StatusCreated || created.json["state"] != "draft" {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	id := created.json["id"].(string)
	for _, path := range []string{"/installed-packs/" + owPackName, "/agents/" + owAgentID} {
		if r := a.do(http.MethodGet, path, nil); r.status != http.StatusNotFound {
			t.Fatalf("%s before apply: %d %s", path, r.status, r.body)
		}
	}
	p2 := owAgentPack("1.0.1", "You help, carefully.")
	if r := a.do(http.MethodPatch, "/proposals/"+id, map[string]any{"artifact": p2}); r.status != http.StatusOK || r.json["state"] != "revised" {
		t.Fatalf("revise: %d %s", r.status, r.body)
	}
	ap := a.do(http.MethodPost, "/proposals/"+id+":apply", map[string]any{})
	want := map[string]any{"kind": "agent-pack", "operationId": "getInstalledPack", "id": owPackName, "version": "1.0.1"}
	if ap.status != http.StatusOK || !reflect.DeepEqual(ap.json["installedArtifact"], want) {
		t.Fatalf("apply: %d %s", ap.status, ap.body)
	}
	installed, _ := json.Marshal(p2)
	owReadback(t, a, installed)
	old, _ := json.Marshal(p)
	if eq, _ := workbench.JCSEqual(a.do(http.MethodGet, "/installed-packs/"+owPackName, nil).body, old); eq {
		t.Fatal("the readback equals the superseded draft")
	}
	for _, path := range []string{"/installed-packs/" + owPackName, "/agents/" + owAgentID, "/proposals/" + id} {
		if r := b.do(http.MethodGet, path, nil); r.status != http.StatusNotFound {
			t.Fatalf("tenant B %s: %d %s", path, r.status, r.body)
		}
	}
	return installed
}

// owReadback checks that the pack reads back RFC 8785-equal to installed and that its
// agent resolves.
func owReadback(t *testing.T, a owClient, installed []byte) {
	t.Helper()
	rb := a.do(http.MethodGet, "/installed-packs/"+owPackName, nil)
	if eq, ok := workbench.JCSEqual(rb.body, installed); rb.status != http.StatusOK || !eq || !ok {
		t.Fatalf("readback: %d %s, want RFC 8785-equal to %s", rb.status, rb.body, installed)
	}
	if r := a.do(http.MethodGet, "/agents/"+owAgentID, nil); r.status != http.StatusOK || r.json["packName"] != owPackName {
		t.Fatalf("agent: %d %s", r.status, r.body)
	}
}

func TestOpenWOPPackReadbackSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	keyA, keyB := owPackKeys(t, "--data-dir", dir)
	shipped := filepath.Join(t.TempDir(), "packs.json")
	const shippedManifest = `{"kind":"node","name":"private.host.shipped","version":"1.0.0","engines":{"openwop":">=2.0.0 <3.0.0"},` +
		`"runtime":{"language":"remote","entry":"https://agents.example.com/shipped"},` +
		`"agents":[{"agentId":"private.host.shipped.main","persona":"Shipped","modelClass":"general","systemPrompt":"Shipped."}]}`
	if err := os.WriteFile(shipped, []byte(`{"packs":[{"kind":"agent-pack","manifest":`+shippedManifest+`}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := framework.StartProcess(t, cairnBin, filepath.Join(dir), "--auth", "required", "--openwop-packs-file", shipped)
	nodes := func() []string { return []string{s.URL} }
	a, b := owClient{t: t, nodes: nodes, key: keyA}, owClient{t: t, nodes: nodes, key: keyB}
	installed := owPackSeed(t, a, b)
	// The shipped pack: every tenant reads it back byte for byte; no proposal replaces it.
	for _, c := range []owClient{a, b} {
		if r := c.do(http.MethodGet, "/installed-packs/private.host.shipped", nil); r.status != http.StatusOK || string(r.body) != shippedManifest {
			t.Fatalf("shipped readback: %d %s", r.status, r.body)
		}
	}
	over := a.do(http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": map[string]any{"kind": "node",
		"name": "private.host.shipped", "version": "2.0.0", "engines": map[string]any{"openwop": ">=2.0.0 <3.0.0"},
		"runtime": map[string]any{"language": "remote", "entry": "https://x.example.com"},
		"agents":  []any{map[string]any{"agentId": "private.host.shipped.two", "persona": "P", "modelClass": "general", "systemPrompt": "p"}}}})
	if r := a.do(http.MethodPost, "/proposals/"+over.json["id"].(string)+":apply", nil); r.status != http.StatusConflict ||
		r.json["details"].(map[string]any)["reason"] != "read-only" {
		t.Fatalf("replacing a shipped pack: %d %s", r.status, r.body)
	}
	// The packs workbench is not writable through REST. keyA is bound to tenant-a·main, so
	// on REST the packs workbench is outside its reach and answers as a missing one.
	rest := s.URL + "/v1/agents/tenant-a/workbenches/openwop-packs/files/packs/private.tenant-a.sneaky"
	if r := doHTTP(t, http.MethodPut, rest, strings.NewReader(`{"name":"private.tenant-a.sneaky"}`), framework.Bearer(keyA)...); r.status != http.StatusNotFound {
		t.Fatalf("a REST write into the packs workbench: %d %s", r.status, r.body)
	}
	s.Kill()
	s.Restart()
	owReadback(t, a, installed)
	// The install rules hold across the restart: the same version again is refused.
	again := a.do(http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": owAgentPack("1.0.1", "again")})
	if r := a.do(http.MethodPost, "/proposals/"+again.json["id"].(string)+":apply", nil); r.status != http.StatusConflict ||
		r.json["details"].(map[string]any)["reason"] != "version-not-greater" {
		t.Fatalf("the same version after a restart: %d %s", r.status, r.body)
	}
}

func TestOpenWOPPackReadbackAcrossALeaderFailover(t *testing.T) {
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 0, Shards: 1}, "--auth", "required")
	keyA, keyB := owPackKeys(t, "--etcd", pc.Stores.Etcd)
	for range 3 {
		pc.AddNode()
	}
	nodes := pc.LiveURLs
	a, b := owClient{t: t, nodes: nodes, key: keyA}, owClient{t: t, nodes: nodes, key: keyB}
	installed := owPackSeed(t, a, b)
	leader := shardLeader(t, pc.Nodes, 0, 3)
	t.Logf("killing the shard leader %s", leader.URL)
	leader.Kill()
	for _, s := range pc.Nodes {
		if !s.Running() {
			continue
		}
		one := owClient{t: t, nodes: func() []string { return []string{s.URL} }, key: keyA}
		owReadback(t, one, installed)
	}
	// A higher version installs on the new leader and replaces the readback.
	next := owAgentPack("1.1.0", "You help, on the new leader.")
	created := a.do(http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": next})
	if r := a.do(http.MethodPost, "/proposals/"+created.json["id"].(string)+":apply", nil); r.status != http.StatusOK {
		t.Fatalf("apply after the failover: %d %s", r.status, r.body)
	}
	nb, _ := json.Marshal(next)
	owReadback(t, a, nb)
}
