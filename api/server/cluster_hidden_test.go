package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/ops"
)

// hiddenCluster is two nodes that require keys, one shard of one replica: node a hosts
// it, node b hosts nothing. Root "alice" holds a file; the keys are the operator's (every
// root) and bob's (root "bob" only, every scope but review), which may not use alice.
type hiddenCluster struct {
	a, b          *testClusterNode
	operator, bob string
}

func startHiddenCluster(t *testing.T) hiddenCluster {
	t.Helper()
	cb := startClusterBackends(t)
	boot, err := OpenEtcdKeys(t.Context(), []string{cb.etcd})
	if err != nil {
		t.Fatal(err)
	}
	admin := client.NewInProcessAdmin(KeyAdminHandler(boot))
	op, err := admin.CreateKey(t.Context(), client.KeyRequest{Name: "operator", AllAgents: true,
		Scopes: []string{"admin", "workspace:read", "workspace:write"}})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := admin.CreateKey(t.Context(), client.KeyRequest{Name: "bob", Agents: []string{"bob"},
		Scopes: []string{"admin", "workspace:read", "workspace:write"}})
	boot.Close()
	if err != nil {
		t.Fatal(err)
	}
	config := func() ops.Config {
		cfg := cb.config(t)
		cfg.Shards, cfg.Replication = 1, 1
		cfg.Auth = ops.AuthRequired
		return cfg
	}
	nodes := startLedCluster(t, config, 1)
	a, b := nodes[0], nodes[1]
	hc := hiddenCluster{a: a, b: b, operator: op.Secret, bob: bob.Secret}
	retry.SucceedsSoon(t, "alice's file written through a", func() error {
		if code, body := hc.send(t, http.MethodPut, a.url+"/v1/agents/alice/workbenches/w/files/input/f", op.Secret, []byte("alice's")); code/100 != 2 {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	if b.replica(0) != nil {
		t.Fatal("node b hosts a replica; the test needs a node without one")
	}
	return hc
}

// send sends one request with key and returns its status and body.
func (hiddenCluster) send(t *testing.T, method, u, key string, body []byte) (int, []byte) {
	code, _, b := sendWith(t, method, u, key, body)
	return code, b
}

// sendWith sends one request with key, and the header pairs kv, and returns its status,
// headers and body.
func sendWith(t *testing.T, method, u, key string, body []byte, kv ...string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, u, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// A root a key may not use answers that key's admin routes of one root exactly as a root
// that was never written, through a node that holds no replica of its shard too: the
// admin listener serves them there without forwarding, and they read the root's shard
// only for a key that may see it (a hidden root is read as a root never placed), so bob
// learns from neither the answer nor its delay that alice exists (it was 503
// RoutingUnavailable, after a 3 s wait, for alice and at once the answer of a missing
// root for zelda, a root of the same name length never written).
func TestClusterHiddenRootAdminRoutesAnswerAsAMissingOneOnANodeWithoutAReplica(t *testing.T) {
	hc := startHiddenCluster(t)
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/admin/retention?agent=%s", ""},
		{http.MethodGet, "/v1/admin/quota?agent=%s", ""},
		{http.MethodPut, "/v1/admin/retention", `{"agent":"%s","versions":5}`},
		{http.MethodPut, "/v1/admin/quota", `{"agent":"%s","max_files":5}`},
		{http.MethodPost, "/v1/admin/purge", `{"agent":"%s"}`},
	} {
		answer := func(agent string) string {
			var body []byte
			if r.body != "" {
				body = fmt.Appendf(nil, r.body, agent)
			}
			code, b := hc.send(t, r.method, hc.b.adminURL+strings.ReplaceAll(r.path, "%s", agent), hc.bob, body)
			return fmt.Sprintf("%d %s", code, strings.ReplaceAll(string(b), agent, "AGENT"))
		}
		if got, want := answer("alice"), answer("zelda"); got != want {
			t.Errorf("%s %s through b: alice answers %s, a root never written %s", r.method, r.path, got, want)
		}
	}
	// The routes still serve alice's root to a key that may use it, through a.
	if code, b := hc.send(t, http.MethodGet, hc.a.adminURL+"/v1/admin/quota?agent=alice", hc.operator, nil); code != http.StatusOK || !strings.Contains(string(b), `"files":1`) {
		t.Fatalf("alice's quota through a, operator key: %d %s", code, b)
	}
}

// A root a key may not use answers that key's client requests exactly as a root that was
// never written through a node that holds no replica of its shard: status, body and
// headers, Cairn-Served-By included, which names the node that received the request for
// both. The node answers them itself instead of forwarding them to the shard's leader
// (that answer named the leader, and a PUT's kept the connection open where the missing
// root's closed it).
func TestClusterHiddenRootClientRequestsAnswerAsAMissingOneOnANodeWithoutAReplica(t *testing.T) {
	hc := startHiddenCluster(t)
	mcpCall := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_stat","arguments":{"id":"w","path":"input/f"}}}`
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/agents/%s/workbenches/w/files/input/f", ""},
		{http.MethodGet, "/v1/agents/%s/workbenches", ""},
		{http.MethodPut, "/v1/agents/%s/workbenches/w/files/input/g", "bob's"},
		{http.MethodPost, "/v1/agents/%s/search", `{"predicates":[]}`},
		{http.MethodPost, "/v1/agents/%s/mcp", mcpCall},
	} {
		answer := func(agent string) string {
			var body []byte
			if r.body != "" {
				body = []byte(r.body)
			}
			code, h, b := sendWith(t, r.method, hc.b.url+strings.ReplaceAll(r.path, "%s", agent), hc.bob, body,
				"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-11-25")
			h.Del("Date")
			h.Del("X-Request-Id")
			return fmt.Sprintf("%d %v %s", code, h, strings.ReplaceAll(string(b), agent, "AGENT"))
		}
		got, want := answer("alice"), answer("zelda")
		if got != want {
			t.Errorf("%s %s through b: alice answers\n%s\na root never written\n%s", r.method, r.path, got, want)
		}
		if code := want[:3]; code != "200" && code != "201" && code != "404" {
			t.Errorf("%s %s through b: a root never written answers %s", r.method, r.path, want)
		}
		if !strings.Contains(want, hc.b.nodeID) {
			t.Errorf("%s %s through b: the answer does not name b (%s): %s", r.method, r.path, hc.b.nodeID, want)
		}
	}
	// Alice's own requests through b still reach her root's shard.
	req := "/v1/agents/alice/workbenches/w/files/input/f"
	if code, h, b := sendWith(t, http.MethodGet, hc.b.url+req, hc.operator, nil); code != http.StatusOK || string(b) != "alice's" || h.Get(ServedByHeader) != hc.a.nodeID {
		t.Fatalf("alice's file through b, operator key: %d %q served by %q", code, b, h.Get(ServedByHeader))
	}
}
