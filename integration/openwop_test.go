package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/integration/framework"
	"github.com/cairnstore/cairn/internal/retry"
)

// The OpenWOP host.workspace facade over real HTTP against real `cairn serve` processes:
// every assertion of the published conformance scenarios workspace-capability-shape,
// workspace-behavior, workspace-cross-tenant-isolation (through the seam) and its
// black-box two-credential variant (openwop/openwop conformance/src/scenarios/*.test.ts),
// restated in Go, plus the RFC's own examples and Cairn's acceptance points (version
// numbering across delete, run snapshots, the 413 trap). The suite runs twice in a row
// against one persistent server (its files were deleted by the first run, as the
// published suite leaves them), and on a cluster (3 nodes, and 4 with 3 replicas) before and
// once after a kill -9 of the shard leader.

// owMaxFileBytes is the maxFileBytes the servers here are started with (smaller than
// the default so the 413 trap sends little).
const owMaxFileBytes = 4096

// owRequestBound bounds one request and its retries across a failover (the published
// driver's timeout is 20 s per request).
const owRequestBound = 60 * time.Second

// owClient talks to the facade through a list of nodes with one credential, as the
// published driver does (Accept and Content-Type JSON, the bearer key on every request).
// It retries transport errors and 503s on the next node (a cluster's leader may be gone),
// with an Idempotency-Key on writes so a retry cannot apply twice.
type owClient struct {
	t     *testing.T
	nodes func() []string
	key   string
}

type owAnswer struct {
	status int
	body   []byte
	json   map[string]any
}

func (c owClient) do(method, path string, body any, headers ...string) owAnswer {
	c.t.Helper()
	var payload []byte
	if body != nil {
		payload, _ = json.Marshal(body)
	}
	idem := make([]byte, 12)
	_, _ = rand.Read(idem)
	hc := &http.Client{Timeout: 20 * time.Second}
	var a owAnswer
	i := 0
	retry.Within(c.t, owRequestBound, method+" "+path, func() error {
		nodes := c.nodes()
		base := nodes[i%len(nodes)]
		i++
		req, err := http.NewRequest(method, base+path, bytes.NewReader(payload))
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		if method != http.MethodGet {
			req.Header.Set("Idempotency-Key", hex.EncodeToString(idem))
		}
		for j := 0; j+1 < len(headers); j += 2 {
			req.Header.Set(headers[j], headers[j+1])
		}
		r, err := send(hc, req)
		if err != nil {
			return err
		}
		b := r.body
		if r.status == http.StatusServiceUnavailable {
			return fmt.Errorf("503 %s", b)
		}
		a = owAnswer{status: r.status, body: b}
		if len(b) > 0 {
			if err := json.Unmarshal(b, &a.json); err != nil {
				c.t.Fatalf("%s %s: %d, not JSON: %s", method, path, r.status, b)
			}
		}
		if r.status >= 300 {
			// Every non-2xx answer is the closed envelope (error-envelope.schema.json).
			for k := range a.json {
				if k != "error" && k != "message" && k != "details" {
					c.t.Fatalf("%s %s: %d envelope with key %q: %s", method, path, r.status, k, b)
				}
			}
			if s, _ := a.json["error"].(string); s == "" {
				c.t.Fatalf("%s %s: %d without an error code: %s", method, path, r.status, b)
			}
		}
		return nil
	})
	return a
}

func enc(p string) string { return url.PathEscape(p) } // encodeURIComponent for these paths

// owSuite restates the published scenarios against a (key A), b (a second tenant's key;
// zero key: skip the black-box variant) and seams (a client of a node with the seams on).
func owSuite(t *testing.T, a, b owClient) {
	const files = "/v1/host/workspace/files"

	// workspace-capability-shape (and the discovery every scenario gates on).
	disc := a.do(http.MethodGet, "/.well-known/openwop", nil)
	ws, _ := disc.json["workspace"].(map[string]any)
	if disc.status != 200 || ws == nil {
		t.Fatalf("discovery: %d %s", disc.status, disc.body)
	}
	if _, ok := ws["supported"].(bool); !ok || ws["supported"] != true {
		t.Fatalf("workspace.supported MUST be a boolean (true here): %s", disc.body)
	}
	for _, f := range []string{"maxFileBytes", "maxFiles", "maxVersions"} {
		if v, ok := ws[f].(float64); ok && (v < 1 || v != float64(int64(v))) {
			t.Fatalf("workspace.%s MUST be an integer >= 1: %v", f, v)
		}
	}
	if caps, _ := disc.json["capabilities"].(map[string]any); caps["workspace"] == nil {
		t.Fatalf("discovery does not mirror workspace under capabilities: %s", disc.body)
	}
	max := int(ws["maxFileBytes"].(float64))

	// workspace-behavior: §C CRUD round-trip.
	path := "behavior/CRUD.md"
	created := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "first body"})
	if created.status != 200 || created.json["version"] != float64(1) {
		t.Fatalf("create MUST return 200 with version 1: %d %s", created.status, created.body)
	}
	if _, ok := created.json["etag"].(string); !ok {
		t.Fatalf("PUT MUST return an etag: %s", created.body)
	}
	if got := a.do(http.MethodGet, files+"/"+enc(path), nil); got.json["content"] != "first body" {
		t.Fatalf("GET MUST return the content: %d %s", got.status, got.body)
	}
	list := a.do(http.MethodGet, files, nil)
	var rows struct{ Files []map[string]any }
	_ = json.Unmarshal(list.body, &rows)
	found := false
	for _, r := range rows.Files {
		if r["path"] == path {
			found = true
			if _, ok := r["content"]; ok {
				t.Fatalf("list MUST NOT include file bodies: %s", list.body)
			}
		}
	}
	if !found {
		t.Fatalf("list MUST include the created file: %s", list.body)
	}
	if del := a.do(http.MethodDelete, files+"/"+enc(path), nil); del.status < 200 || del.status >= 300 {
		t.Fatalf("DELETE MUST return 2xx: %d %s", del.status, del.body)
	}
	if gone := a.do(http.MethodGet, files+"/"+enc(path), nil); gone.status != 404 {
		t.Fatalf("GET after DELETE MUST be 404: %d %s", gone.status, gone.body)
	}

	// workspace-behavior: §C optimistic concurrency.
	path = "behavior/ETAG.md"
	v1 := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "v1"})
	etag, _ := v1.json["etag"].(string)
	stale := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "nope"}, "If-Match", `"definitely-stale"`)
	if d, _ := stale.json["details"].(map[string]any); stale.status != 409 || stale.json["error"] != "workspace_conflict" || d == nil {
		t.Fatalf("a stale If-Match MUST return 409 workspace_conflict with details: %d %s", stale.status, stale.body)
	} else if _, ok := d["currentVersion"].(float64); !ok {
		t.Fatalf("409 MUST carry details.currentVersion: %s", stale.body)
	}
	if v2 := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "v2"}, "If-Match", etag); v2.status != 200 || v2.json["version"] != float64(2) {
		t.Fatalf("a matching If-Match MUST succeed and bump version: %d %s", v2.status, v2.body)
	}
	a.do(http.MethodDelete, files+"/"+enc(path), nil)

	// workspace-behavior: §C size ceiling (and the trap: exactly max is accepted).
	if big := a.do(http.MethodPut, files+"/"+enc("behavior/TOOBIG.md"), map[string]any{"content": strings.Repeat("x", max+1)}); big.status < 400 || big.json["error"] != "workspace_too_large" {
		t.Fatalf("oversize content MUST be rejected with workspace_too_large: %d %s", big.status, big.body)
	}
	if exact := a.do(http.MethodPut, files+"/"+enc("behavior/EXACT.md"), map[string]any{"content": strings.Repeat("x", max)}); exact.status != 200 {
		t.Fatalf("content of exactly maxFileBytes: %d %s", exact.status, exact.body)
	}
	a.do(http.MethodDelete, files+"/"+enc("behavior/EXACT.md"), nil)

	// workspace-behavior: §D run-start snapshot.
	path = "behavior/SNAPSHOT.md"
	a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "snapshot body"})
	run := a.do(http.MethodPost, "/v1/runs", map[string]any{"workflowId": "conformance-noop"})
	runID, _ := run.json["runId"].(string)
	if (run.status != 201 && run.status != 200) || runID == "" {
		t.Fatalf("POST /v1/runs: %d %s", run.status, run.body)
	}
	snap := a.do(http.MethodGet, "/v1/runs/"+enc(runID), nil)
	var snapBody struct{ Workspace []struct{ Path string } }
	_ = json.Unmarshal(snap.body, &snapBody)
	if snapBody.Workspace == nil {
		t.Fatalf("the run snapshot has no workspace: %s", snap.body)
	}
	inRun := false
	for _, f := range snapBody.Workspace {
		inRun = inRun || f.Path == path
	}
	if !inRun {
		t.Fatalf("the run snapshot MUST reflect a workspace file present at run start: %s", snap.body)
	}
	// Cairn: a write after the run started is invisible in the run and visible to the next.
	a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "after the run started"})
	if r := a.do(http.MethodGet, "/v1/runs/"+enc(runID)+"/workspace/files/"+enc(path), nil); r.json["content"] != "snapshot body" {
		t.Fatalf("the run reads %d %s, want the body at its start", r.status, r.body)
	}
	next := a.do(http.MethodPost, "/v1/runs", map[string]any{"workflowId": "conformance-noop"})
	if r := a.do(http.MethodGet, "/v1/runs/"+enc(next.json["runId"].(string))+"/workspace/files/"+enc(path), nil); r.json["content"] != "after the run started" {
		t.Fatalf("the next run reads %d %s", r.status, r.body)
	}
	a.do(http.MethodDelete, files+"/"+enc(path), nil)

	// RFC 0059's example: If-Match naming v3 while the file is at v5 → 409, currentVersion 5.
	path = "behavior/RFC.md"
	var etags []string
	for i := range 5 {
		r := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": fmt.Sprintf("v%d", i+1)})
		if r.json["version"] != float64(i+1) {
			t.Fatalf("put %d: %s", i+1, r.body)
		}
		etags = append(etags, r.json["etag"].(string))
	}
	if r := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "late"}, "If-Match", etags[2]); r.status != 409 {
		t.Fatalf("If-Match v3 at v5: %d %s", r.status, r.body)
	} else if d, _ := r.json["details"].(map[string]any); d["currentVersion"] != float64(5) {
		t.Fatalf("If-Match v3 at v5: currentVersion %v, want 5: %s", d["currentVersion"], r.body)
	}
	a.do(http.MethodDelete, files+"/"+enc(path), nil)

	// Version numbering: put, put, delete, put → 1, 2, then 1 with a new etag; the old
	// etags get 409.
	path = "behavior/VERSIONS.md"
	p1 := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "1"})
	p2 := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "2"})
	a.do(http.MethodDelete, files+"/"+enc(path), nil)
	p3 := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "3"})
	if p1.json["version"] != float64(1) || p2.json["version"] != float64(2) || p3.json["version"] != float64(1) ||
		p3.json["etag"] == p1.json["etag"] || p3.json["etag"] == p2.json["etag"] {
		t.Fatalf("put, put, delete, put: %s / %s / %s", p1.body, p2.body, p3.body)
	}
	for _, old := range []owAnswer{p1, p2} {
		if r := a.do(http.MethodPut, files+"/"+enc(path), map[string]any{"content": "x"}, "If-Match", old.json["etag"].(string)); r.status != 409 {
			t.Fatalf("an etag from before the delete: %d %s", r.status, r.body)
		}
	}
	a.do(http.MethodDelete, files+"/"+enc(path), nil)

	// workspace-cross-tenant-isolation, through the seam.
	seam := func(args map[string]any) owAnswer { return a.do(http.MethodPost, "/v1/host/sample/workspace/op", args) }
	const seamPath = "WCT1-SECRET.md"
	if put := seam(map[string]any{"tenant": "wct1-tenant-a", "workspace": "ws-a", "op": "put", "path": seamPath, "content": "A-only secret body"}); put.status != 200 {
		t.Fatalf("seam put MUST succeed for the owning workspace: %d %s", put.status, put.body)
	}
	for _, o := range [][2]string{{"wct1-tenant-a", "ws-b"}, {"wct1-tenant-b", "ws-a"}} {
		cross := seam(map[string]any{"tenant": o[0], "workspace": o[1], "op": "get", "path": seamPath})
		if (cross.status != 404 && cross.status != 403) || strings.Contains(string(cross.body), "A-only secret body") {
			t.Fatalf("a cross-owner get MUST fail closed: %d %s", cross.status, cross.body)
		}
	}
	if l := seam(map[string]any{"tenant": "wct1-tenant-a", "workspace": "ws-b", "op": "list"}); strings.Contains(string(l.body), seamPath) {
		t.Fatalf("a cross-workspace list MUST NOT enumerate another owner's file: %s", l.body)
	}
	if own := seam(map[string]any{"tenant": "wct1-tenant-a", "workspace": "ws-a", "op": "get", "path": seamPath}); own.json["content"] != "A-only secret body" {
		t.Fatalf("the owning workspace MUST still read its own file: %s", own.body)
	}

	// workspace-cross-tenant-isolation-blackbox: two credentials, the normative endpoints.
	if b.key != "" {
		id := randomHex(8)
		path, secret := "wct-blackbox-"+id+".md", "WCT1-BLACKBOX-SECRET-"+id
		if put := a.do(http.MethodPut, files+"/"+path, map[string]any{"content": secret}); put.status != 200 {
			t.Fatalf("the owning workspace MUST create its file: %d %s", put.status, put.body)
		}
		if r := b.do(http.MethodGet, files+"/"+path, nil); (r.status != 404 && r.status != 403) || strings.Contains(string(r.body), secret) {
			t.Fatalf("a second-tenant read MUST fail closed: %d %s", r.status, r.body)
		}
		if l := b.do(http.MethodGet, files, nil); l.status == 200 && strings.Contains(string(l.body), path) {
			t.Fatalf("a second-tenant list MUST NOT enumerate the owner's path: %s", l.body)
		}
		if r := a.do(http.MethodGet, files+"/"+path, nil); r.status != 200 || r.json["content"] != secret {
			t.Fatalf("the owner MUST still read its own file: %d %s", r.status, r.body)
		}
		a.do(http.MethodDelete, files+"/"+path, nil)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// owKeys makes, offline on a store (--data-dir D or --etcd E), the keys of the suite:
// tenant A's and tenant B's.
func owKeys(t *testing.T, store ...string) (a, b string) {
	t.Helper()
	mk := func(tenant string) string {
		return framework.CreateKey(t, cairnRaceBin, nil, "openwop-"+tenant,
			append(store, "--tenant", tenant, "--workspace", "main", "--scope", "workspace:read,workspace:write")...).Secret
	}
	return mk("tenant-a"), mk("tenant-b")
}

// The auth rules of the facade's routes: 401 in the OpenWOP envelope before anything
// else; discovery public, a valid key not rejected there.
func owAuthChecks(t *testing.T, base, key string) {
	t.Helper()
	for _, p := range []string{"/v1/host/workspace/files", "/v1/host/workspace/files/x.md", "/v1/runs", "/v1/runs/run-x"} {
		r := doHTTP(t, http.MethodGet, base+p, nil)
		var env map[string]any
		_ = json.Unmarshal(r.body, &env)
		if r.status != 401 || env["error"] != "unauthenticated" || len(env) != 2 {
			t.Fatalf("GET %s without a key: %d %s, want 401 {error: unauthenticated, message}", p, r.status, r.body)
		}
	}
	if r := doHTTP(t, http.MethodPut, base+"/v1/host/workspace/files/x.md", strings.NewReader(`{"content":"x"}`), "Authorization", "Bearer cairn_bogus"); r.status != 401 || !strings.Contains(string(r.body), `"error":"unauthenticated"`) {
		t.Fatalf("PUT with an invalid key: %d %s", r.status, r.body)
	}
	for _, h := range [][]string{nil, framework.Bearer(key)} {
		if r := doHTTP(t, http.MethodGet, base+"/.well-known/openwop", nil, h...); r.status != 200 {
			t.Fatalf("discovery with %v: %d %s", h, r.status, r.body)
		}
	}
}

func TestOpenWOPSuiteTwiceOnAPersistentServer(t *testing.T) {
	dir := t.TempDir()
	keyA, keyB := owKeys(t, "--data-dir", dir)
	s := framework.StartProcess(t, cairnBin, filepath.Join(dir), "--auth", "required", "--openwop-test-seams",
		"--openwop-max-file-bytes", fmt.Sprint(owMaxFileBytes))
	nodes := func() []string { return []string{s.URL} }
	a, b := owClient{t: t, nodes: nodes, key: keyA}, owClient{t: t, nodes: nodes, key: keyB}
	owAuthChecks(t, s.URL, keyA)
	for run := 1; run <= 2; run++ {
		t.Logf("suite run %d", run)
		owSuite(t, a, b)
	}
	// The same bytes through REST: tenant A's workspace is the workbench "main" of root
	// tenant-a, and a REST write is a new OpenWOP version.
	a.do(http.MethodPut, "/v1/host/workspace/files/shared.md", map[string]any{"content": "from openwop"})
	rest := s.URL + "/v1/agents/tenant-a/workbenches/main/files/shared.md"
	if r := doHTTP(t, http.MethodGet, rest, nil, framework.Bearer(keyA)...); r.status != 200 || string(r.body) != "from openwop" {
		t.Fatalf("REST reads %d %s", r.status, r.body)
	}
	if r := doHTTP(t, http.MethodPut, rest, strings.NewReader("from rest"), framework.Bearer(keyA)...); r.status/100 != 2 {
		t.Fatalf("REST write: %d %s", r.status, r.body)
	}
	if r := a.do(http.MethodGet, "/v1/host/workspace/files/shared.md", nil); r.json["content"] != "from rest" || r.json["version"] != float64(2) {
		t.Fatalf("after a REST write: %s", r.body)
	}
	// kill -9: what was acknowledged survives, and the suite passes again.
	s.Kill()
	s.Restart()
	if r := a.do(http.MethodGet, "/v1/host/workspace/files/shared.md", nil); r.json["content"] != "from rest" || r.json["version"] != float64(2) {
		t.Fatalf("after kill -9: %s", r.body)
	}
	owSuite(t, a, b)
}

// TestOpenWOPSuiteAcrossAClusterLeaderKill runs the suite on a 3-node cluster (every node a
// replica) and on a 4-node one, where one node holds no replica of the tenants' roots and
// forwards their requests (the root is the key's tenant, not in the URL), before and after
// a kill -9 of the shard leader.
func TestOpenWOPSuiteAcrossAClusterLeaderKill(t *testing.T) {
	for _, n := range []int{3, 4} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) { owClusterLeaderKill(t, n) })
	}
}

func owClusterLeaderKill(t *testing.T, n int) {
	pc := framework.StartProcesses(t, cairnBin, framework.Options{Nodes: 0, Shards: 1}, "--auth", "required", "--openwop-test-seams",
		"--openwop-max-file-bytes", fmt.Sprint(owMaxFileBytes))
	keyA, keyB := owKeys(t, "--etcd", pc.Stores.Etcd)
	for range n {
		pc.AddNode()
	}
	nodes := pc.LiveURLs
	a, b := owClient{t: t, nodes: nodes, key: keyA}, owClient{t: t, nodes: nodes, key: keyB}
	owAuthChecks(t, pc.Nodes[1].URL, keyA)
	owSuite(t, a, b)
	for i, s := range pc.Nodes {
		one := owClient{t: t, nodes: func() []string { return []string{s.URL} }, key: keyA}
		if r := one.do(http.MethodGet, "/v1/host/workspace/files", nil); r.status != 200 {
			t.Fatalf("node %d: %d %s", i, r.status, r.body)
		}
	}
	kept := a.do(http.MethodPut, "/v1/host/workspace/files/kept.md", map[string]any{"content": "before the kill"})
	leader := shardLeader(t, pc.Nodes, 0, 3)
	t.Logf("killing the shard leader %s", leader.URL)
	leader.Kill()
	if r := a.do(http.MethodGet, "/v1/host/workspace/files/kept.md", nil); r.json["content"] != "before the kill" || r.json["etag"] != kept.json["etag"] {
		t.Fatalf("after the leader's kill: %s (before: %s)", r.body, kept.body)
	}
	owSuite(t, a, b)
}

// A node with the defaults (no key on loopback): the configured default owner, whose
// workspace is the workbench default of root default; the 413 trap at the default 1 MiB
// limit; no seams. And a node started with --openwop=false answers 501 on every workspace
// endpoint.
func TestOpenWOPDefaultsOnTheWire(t *testing.T) {
	s := framework.StartProcess(t, cairnBin, t.TempDir())
	c := owClient{t: t, nodes: func() []string { return []string{s.URL} }}
	const max = 1 << 20
	if disc := c.do(http.MethodGet, "/.well-known/openwop", nil); disc.json["workspace"].(map[string]any)["maxFileBytes"] != float64(max) {
		t.Fatalf("discovery: %s", disc.body)
	}
	if r := c.do(http.MethodPut, "/v1/host/workspace/files/behavior%2FEXACT.md", map[string]any{"content": strings.Repeat("x", max)}); r.status != 200 {
		t.Fatalf("exactly maxFileBytes: %d %.200s", r.status, r.body)
	}
	if r := c.do(http.MethodPut, "/v1/host/workspace/files/behavior%2FTOOBIG.md", map[string]any{"content": strings.Repeat("x", max+1)}); r.status != 413 || r.json["error"] != "workspace_too_large" {
		t.Fatalf("maxFileBytes+1: %d %.200s", r.status, r.body)
	}
	if r := doHTTP(t, http.MethodGet, s.URL+"/v1/agents/default/workbenches/default/files/behavior/EXACT.md", nil); r.status != 200 || len(r.body) != max {
		t.Fatalf("REST read of the default owner's file: %d, %d bytes", r.status, len(r.body))
	}
	if r := c.do(http.MethodPost, "/v1/host/sample/workspace/op", map[string]any{"op": "list"}); r.status != 404 {
		t.Fatalf("the seam without --openwop-test-seams: %d %s", r.status, r.body)
	}

	off := framework.StartProcess(t, cairnBin, t.TempDir(), "--openwop=false")
	oc := owClient{t: t, nodes: func() []string { return []string{off.URL} }}
	if d := oc.do(http.MethodGet, "/.well-known/openwop", nil); d.json["workspace"].(map[string]any)["supported"] != false {
		t.Fatalf("discovery with the facade off: %s", d.body)
	}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		if r := oc.do(m, "/v1/host/workspace/files/a.md", map[string]any{"content": "x"}); r.status != 501 || r.json["error"] != "capability_not_provided" {
			t.Fatalf("%s with the facade off: %d %s", m, r.status, r.body)
		}
	}
	if r := runCLI(t, cliOptions{}, "serve", "--data-dir", t.TempDir(), "--listen", "0.0.0.0:0", "--insecure-plaintext", "--openwop-test-seams"); r.code == 0 || !strings.Contains(r.stderr, "--openwop-test-seams") {
		t.Fatalf("seams beyond loopback must be refused at start:\n%s", r)
	}
}
