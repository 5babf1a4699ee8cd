package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/internal/retry"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/auth"
)

// adminOnce sends one admin request with key, without retrying, and fails the test when
// no answer comes within 10 s (a node waiting for a replica it does not have waits 30 s).
func adminOnce(t *testing.T, method, u, key string, body []byte) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// A cluster of two nodes, one shard with one replica on node a: node b holds no replica,
// so the admin routes of one root through b must reach a. They answer at once: a root's
// usage, quotas and retention read and set, its purge; and an admin key bound to another
// root gets, for the root it may not use, exactly the answer of a root never written.
func TestClusterAdminRoutesOfARootAnswerThroughANodeWithoutItsShard(t *testing.T) {
	cb := startClusterBackends(t)
	boot, err := OpenEtcdKeys(t.Context(), []string{cb.etcd})
	if err != nil {
		t.Fatal(err)
	}
	keys := client.NewInProcessAdmin(KeyAdminHandler(boot))
	operator, err := keys.CreateKey(t.Context(), client.KeyRequest{Name: "operator", AllAgents: true,
		Scopes: []string{"admin", "workspace:read", "workspace:write"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := keys.CreateKey(t.Context(), client.KeyRequest{Name: "other", Agents: []string{"other"}, Scopes: []string{"admin"}})
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
	a := startClusterNode(t, config())
	retry.Within(t, 30*time.Second, "node a leads the only shard", func() error {
		if r := a.replica(0); r == nil || !r.Ready() {
			return errors.New("not yet")
		}
		return nil
	})
	b := startClusterNode(t, config())

	ws := b.url + "/v1/agents/acme/workbenches/w1"
	retry.SucceedsSoon(t, "create a workbench and a file of acme through b", func() error {
		for _, u := range []string{ws, ws + "/files/input/f"} {
			if code, body := adminOnce(t, http.MethodPut, u, operator.Secret, []byte("x")); code/100 != 2 {
				return fmt.Errorf("%s: %d %s", u, code, body)
			}
		}
		return nil
	})
	if code, body := adminOnce(t, http.MethodPut, b.adminURL+"/v1/admin/quota", operator.Secret, []byte(`{"agent":"acme","max_files":10}`)); code != http.StatusOK {
		t.Fatalf("set acme's quota through b: %d %s", code, body)
	}
	if b.replica(0) != nil {
		t.Fatal("node b hosts a replica; the test needs a node without one")
	}

	code, body := adminOnce(t, http.MethodGet, b.adminURL+"/v1/admin/quota?agent=acme", operator.Secret, nil)
	var usage struct {
		Usage struct{ Files int64 } `json:"usage"`
		Quota struct {
			Files *int64 `json:"files"`
		} `json:"quota"`
	}
	if err := json.Unmarshal(body, &usage); code != http.StatusOK || err != nil || usage.Usage.Files != 1 || usage.Quota.Files == nil || *usage.Quota.Files != 10 {
		t.Fatalf("acme's usage through b: %d %s", code, body)
	}
	if code, body := adminOnce(t, http.MethodGet, b.adminURL+"/v1/admin/retention?agent=acme", operator.Secret, nil); code != http.StatusOK {
		t.Fatalf("acme's retention through b: %d %s", code, body)
	}

	if code, body := adminOnce(t, http.MethodPut, b.adminURL+"/v1/admin/retention", operator.Secret, []byte(`{"agent":"acme","versions":7}`)); code != http.StatusOK || !strings.Contains(string(body), `"versions":7`) {
		t.Fatalf("set acme's retention through b: %d %s", code, body)
	}

	// Another root's admin key: acme is hidden from it, and reads as a root never written.
	for _, route := range []string{"quota", "retention"} {
		hiddenCode, hidden := adminOnce(t, http.MethodGet, b.adminURL+"/v1/admin/"+route+"?agent=acme", other.Secret, nil)
		missingCode, missing := adminOnce(t, http.MethodGet, b.adminURL+"/v1/admin/"+route+"?agent=nobody", other.Secret, nil)
		if hiddenCode != missingCode || !bytes.Equal(hidden, bytes.ReplaceAll(missing, []byte(`"nobody"`), []byte(`"acme"`))) {
			t.Fatalf("%s of a hidden root through b: %d %s\nof a root never written: %d %s", route, hiddenCode, hidden, missingCode, missing)
		}
	}
	if code, body := adminOnce(t, http.MethodPost, b.adminURL+"/v1/admin/purge", operator.Secret, []byte(`{"agent":"acme"}`)); code != http.StatusOK || !strings.Contains(string(body), `"deleted_workbenches":1`) {
		t.Fatalf("purge acme through b: %d %s", code, body)
	}
	// A malformed read is answered with the route's own error, wherever it is served.
	if code, body := adminOnce(t, http.MethodGet, b.adminURL+"/v1/admin/quota?agent=acme&agent=x", operator.Secret, nil); code != http.StatusBadRequest || !strings.Contains(string(body), "agent") {
		t.Fatalf("a repeated agent parameter through b: %d %s", code, body)
	}
}

// The peer port serves, of the admin routes, only the requests of one root an admin
// listener forwards, with their bodies whole, and only to a principal with the admin
// scope.
func TestPeerPortServesOnlyForwardedAdminRequestsOfOneRoot(t *testing.T) {
	served, body := 0, ""
	h := peerAdmin{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
		b, _ := io.ReadAll(r.Body)
		body = string(b)
	})}
	for _, c := range []struct {
		method, target, body string
		scopes               []auth.Scope
		want                 int
	}{
		{http.MethodGet, "/v1/admin/quota?agent=acme", "", []auth.Scope{auth.ScopeAdmin}, http.StatusOK},
		{http.MethodGet, "/v1/admin/retention?agent=acme", "", []auth.Scope{auth.ScopeAdmin}, http.StatusOK},
		{http.MethodGet, "/v1/admin/quota?agent=acme", "", []auth.Scope{auth.ScopeRead}, http.StatusForbidden},
		{http.MethodPut, "/v1/admin/quota", `{"agent":"acme","max_files":1}`, []auth.Scope{auth.ScopeAdmin}, http.StatusOK},
		{http.MethodPost, "/v1/admin/purge", `{"agent":"acme"}`, []auth.Scope{auth.ScopeAdmin}, http.StatusOK},
		{http.MethodPost, "/v1/admin/purge", `{"agent":"acme"}`, []auth.Scope{auth.ScopeWrite}, http.StatusForbidden},
		{http.MethodGet, "/v1/admin/backup/holds", "", []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
		{http.MethodPost, "/v1/admin/gc", "", []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
		{http.MethodGet, "/v1/admin/cluster/root-moves", "", []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
		{http.MethodGet, "/v1/admin/quota", "", []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
		{http.MethodPut, "/v1/admin/quota", `{"max_files":1}`, []auth.Scope{auth.ScopeAdmin}, http.StatusNotFound},
	} {
		before := served
		r := httptest.NewRequestWithContext(auth.WithPrincipal(t.Context(), auth.Principal{ID: "p", AllAgents: true, Scopes: c.scopes}), c.method, c.target, strings.NewReader(c.body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := w.Code; got != c.want || (served > before) != (c.want == http.StatusOK) {
			t.Errorf("%s %s with %v: %d (served: %v), want %d", c.method, c.target, c.scopes, got, served > before, c.want)
		}
		if served > before && body != c.body {
			t.Errorf("%s %s: the route read the body %q, want %q", c.method, c.target, body, c.body)
		}
	}
}
