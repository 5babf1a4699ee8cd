package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/auth/authtest"
)

// getWith sends GET u with key and returns the status.
func getWith(t *testing.T, u, key string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// keyAnswersWithin sends GETs of u with key until one answers want, for at most
// authtest.RevocationBound; what names the awaited state in the failure.
func keyAnswersWithin(t *testing.T, what, u, key string, want int) {
	t.Helper()
	retry.Within(t, authtest.RevocationBound, what, func() error {
		if code := getWith(t, u, key); code != want {
			return fmt.Errorf("status %d, want %d", code, want)
		}
		return nil
	})
}

// A 3-node cluster that requires keys: the first admin key is made straight in etcd (the
// bootstrap path of cairn admin key create --etcd), a key created through node 1 works on
// node 3, revoked through node 2 it fails on node 1 within 5 s, and keys outlive a restart
// of every node. One shard with one replica, so two of the nodes forward every request:
// the principal crosses the peer port.
func TestClusterKeysAcrossNodes(t *testing.T) {
	cb := startClusterBackends(t)

	boot, err := OpenEtcdKeys(t.Context(), []string{cb.etcd})
	if err != nil {
		t.Fatal(err)
	}
	root, err := client.NewInProcessAdmin(KeyAdminHandler(boot)).CreateKey(t.Context(),
		client.KeyRequest{Name: "operator", AllAgents: true, Scopes: []string{"admin", "workspace:read", "workspace:write"}})
	boot.Close()
	if err != nil {
		t.Fatal(err)
	}

	cfgs := make([]ops.Config, 3)
	nodes := make([]*testClusterNode, 3)
	for i := range cfgs {
		cfgs[i] = cb.config(t)
		cfgs[i].Shards, cfgs[i].Replication = 1, 1
		cfgs[i].Auth = ops.AuthRequired
		nodes[i] = startClusterNode(t, cfgs[i])
	}
	wb := func(n *testClusterNode) string { return n.url + "/v1/agents/keyed/workbenches/w" }
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, wb(nodes[0]), nil)
	req.Header.Set("Authorization", "Bearer "+root.Secret)
	retry.SucceedsSoon(t, "create the workbench through node 1", func() error {
		resp, err := http.DefaultClient.Do(req.Clone(t.Context()))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})

	adminOf := func(n *testClusterNode) *client.Admin {
		return client.NewAdmin(n.adminURL, nil).WithAPIKey(root.Secret)
	}
	k, err := adminOf(nodes[0]).CreateKey(t.Context(), client.KeyRequest{Name: "ci", Agents: []string{"keyed"}, Scopes: []string{"workspace:read"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		keyAnswersWithin(t, fmt.Sprintf("the new key on node %d", i+1), wb(n), k.Secret, http.StatusOK)
	}
	if _, err := adminOf(nodes[1]).RevokeKey(t.Context(), k.ID); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		keyAnswersWithin(t, fmt.Sprintf("the revocation on node %d", i+1), wb(n), k.Secret, http.StatusUnauthorized)
	}

	for _, n := range nodes {
		n.shutdown()
	}
	for i := range nodes {
		nodes[i] = startClusterNode(t, cfgs[i])
	}
	for i, n := range nodes {
		retry.SucceedsSoon(t, fmt.Sprintf("node %d after the restart", i+1), func() error {
			if code := getWith(t, wb(n), root.Secret); code != http.StatusOK {
				return fmt.Errorf("the operator key: status %d", code)
			}
			if code := getWith(t, wb(n), k.Secret); code != http.StatusUnauthorized {
				return fmt.Errorf("the revoked key: status %d", code)
			}
			return nil
		})
	}
	list, err := adminOf(nodes[2]).ListKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Keys) != 2 || strings.Contains(string(list.Raw), "cairn_") {
		t.Fatalf("keys after the restart: %s", list.Raw)
	}
}
