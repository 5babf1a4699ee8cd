package openwop_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnstore/cairn/api/openwop"
	published "github.com/cairnstore/cairn/api/openwop/schemas"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// The issue 18 seed ("Read back an installed workflow-chain or agent pack") through the
// facade's public routes, on a real node stack.

const (
	tenantA = "acme/main"
	tenantB = "globex/main"
	packP   = "private.acme.helper"
	agentP  = "private.acme.helper.main"
)

// agentPack is a minimal valid pure-agent pack (node-pack-manifest.schema.json) named
// name at version whose single agent id and system prompt are given.
func agentPack(name, version, agent, prompt string) map[string]any {
	return map[string]any{"kind": "node", "name": name, "version": version,
		"engines": map[string]any{"openwop": ">=2.0.0 <3.0.0"},
		"runtime": map[string]any{"language": "remote", "entry": "https://agents.example.com/" + name},
		"agents":  []any{map[string]any{"agentId": agent, "persona": "Helper", "modelClass": "general", "systemPrompt": prompt}}}
}

// chainPack is a minimal valid workflow-chain pack.
func chainPack(name, version string) map[string]any {
	return map[string]any{"kind": "workflow-chain", "name": name, "version": version,
		"engines": map[string]any{"openwop": ">=2.0.0 <3.0.0"},
		"chains": []any{map[string]any{"chainId": "digest", "version": "1.0.0", "label": "Digest", "description": "Weekly digest",
			"parameters": map[string]any{}, "dag": map[string]any{"nodes": []any{map[string]any{"id": "n1", "typeId": "core.noop"}}}}}}
}

// packsClient is a test tenant of one facade.
type packsClient struct {
	t     *testing.T
	base  string
	owner string
}

func (c packsClient) do(method, path string, body any, headers ...string) answer {
	c.t.Helper()
	return call(c.t, method, c.base+path, body, append([]string{ownerHeader, c.owner, reviewHeader, "yes"}, headers...)...)
}

// create drafts a proposal and answers its id.
func (c packsClient) create(kind string, artifact map[string]any) string {
	c.t.Helper()
	a := c.do(http.MethodPost, "/proposals", map[string]any{"kind": kind, "artifact": artifact, "title": "t", "rationale": "why"})
	if a.status != http.StatusCreated || a.json["state"] != "draft" {
		c.t.Fatalf("create: %d %s", a.status, a.body)
	}
	return a.json["id"].(string)
}

// world is everything a tenant can read of proposals, packs and agents: a refused step
// must leave it exactly as it was.
func (c packsClient) world(packNames ...string) map[string]string {
	c.t.Helper()
	w := map[string]string{}
	for _, p := range []string{"/proposals", "/agents"} {
		a := c.do(http.MethodGet, p, nil)
		w[p] = strconv.Itoa(a.status) + " " + string(a.body)
	}
	for _, n := range packNames {
		a := c.do(http.MethodGet, "/installed-packs/"+n, nil)
		w[n] = strconv.Itoa(a.status) + " " + string(a.body)
	}
	return w
}

func compileSchema(t *testing.T, file string) *jsonschema.Schema {
	t.Helper()
	s, err := published.Compile(file)
	if err != nil {
		t.Fatalf("compile %s: %v", file, err)
	}
	return s
}

func newPacksFacade(t testing.TB, mutate func(*openwop.Options)) (string, workbench.Config) {
	t.Helper()
	opt := testOptions()
	opt.Readback = true
	if mutate != nil {
		mutate(&opt)
	}
	cfg := workbench.Config{InlineMaxBytes: 4096, ReservedWorkbenches: map[string]string{openwop.PacksWorkbench: openwop.Surface}}
	return newFacadeOn(t, opt, cfg), cfg
}

func TestTheSeedPositiveExampleInstallsTheRevisedArtifactOnly(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	proposal := compileSchema(t, "proposal.schema.json")
	inventory := compileSchema(t, "agent-inventory-response.schema.json")

	p := agentPack(packP, "1.0.0", agentP, "You help.")
	id := a.create(openwop.KindAgentPack, p)
	got := a.do(http.MethodGet, "/proposals/"+id, nil)
	validate(t, proposal, "a draft", got.body)
	// Inert: no readback, no agent, no listing.
	if r := a.do(http.MethodGet, "/installed-packs/"+packP, nil); r.status != http.StatusNotFound {
		t.Fatalf("readback of a draft: %d %s", r.status, r.body)
	}
	if r := a.do(http.MethodGet, "/agents/"+agentP, nil); r.status != http.StatusNotFound {
		t.Fatalf("agent of a draft: %d %s", r.status, r.body)
	}
	if r := a.do(http.MethodGet, "/agents", nil); r.json["total"] != float64(0) {
		t.Fatalf("agents of a draft: %s", r.body)
	}

	p2 := agentPack(packP, "1.0.1", agentP, "You help, carefully.")
	rev := a.do(http.MethodPatch, "/proposals/"+id, map[string]any{"artifact": p2, "rationale": "sharper"})
	if rev.status != http.StatusOK || rev.json["state"] != "revised" || rev.json["id"] != id {
		t.Fatalf("revise: %d %s", rev.status, rev.body)
	}
	validate(t, proposal, "a revision", rev.body)

	ap := a.do(http.MethodPost, "/proposals/"+id+":apply", map[string]any{})
	if ap.status != http.StatusOK || ap.json["state"] != "applied" {
		t.Fatalf("apply: %d %s", ap.status, ap.body)
	}
	want := map[string]any{"kind": "agent-pack", "operationId": "getInstalledPack", "id": packP, "version": "1.0.1"}
	if !reflect.DeepEqual(ap.json["installedArtifact"], want) {
		t.Fatalf("installedArtifact %v, want %v (and never getAgent)", ap.json["installedArtifact"], want)
	}
	var applied map[string]any
	_ = json.Unmarshal(ap.body, &applied)
	delete(applied, "installedArtifact") // issue 18's addition to the published schema
	validate(t, proposal, "an applied proposal", mustJSON(t, applied))

	rb := a.do(http.MethodGet, "/installed-packs/"+packP, nil)
	if rb.status != http.StatusOK {
		t.Fatalf("readback: %d %s", rb.status, rb.body)
	}
	if eq, ok := workbench.JCSEqual(rb.body, mustJSON(t, p2)); !eq || !ok {
		t.Fatalf("readback %s is not JCS-equal to the revised artifact", rb.body)
	}
	if eq, _ := workbench.JCSEqual(rb.body, mustJSON(t, p)); eq {
		t.Fatal("readback is JCS-equal to the superseded draft")
	}
	ag := a.do(http.MethodGet, "/agents", nil)
	validate(t, inventory, "the inventory", ag.body)
	if ag.json["total"] != float64(1) {
		t.Fatalf("agents after apply: %s", ag.body)
	}
	if one := a.do(http.MethodGet, "/agents/"+agentP, nil); one.status != http.StatusOK || one.json["packVersion"] != "1.0.1" ||
		strings.Contains(string(one.body), "carefully") {
		t.Fatalf("agent after apply (must not carry the prompt): %d %s", one.status, one.body)
	}
	// The installedArtifactRef reads the pack back while that version is installed.
	ref := ap.json["activation"].(map[string]any)["installedArtifactRef"].(string)
	if r := a.do(http.MethodGet, ref, nil); r.status != http.StatusOK || string(r.body) != string(rb.body) {
		t.Fatalf("installedArtifactRef %s: %d %s", ref, r.status, r.body)
	}
	if r := a.do(http.MethodGet, "/installed-packs/"+packP+"@1.0.0", nil); r.status != http.StatusNotFound {
		t.Fatalf("a version not installed: %d %s", r.status, r.body)
	}
	// Applying again answers the same.
	if again := a.do(http.MethodPost, "/proposals/"+id+"/apply", nil); again.status != http.StatusOK || !reflect.DeepEqual(again.json, ap.json) {
		t.Fatalf("apply again: %d %s, first %s", again.status, again.body, ap.body)
	}
	// Tenant B sees none of it: the same 404 as an unknown name; and changes none of it.
	before := a.world(packP)
	b := packsClient{t, base, tenantB}
	unknown := b.do(http.MethodGet, "/installed-packs/private.nobody.none", nil)
	for _, path := range []string{"/installed-packs/" + packP, "/proposals/" + id} {
		r := b.do(http.MethodGet, path, nil)
		if r.status != http.StatusNotFound || (strings.HasPrefix(path, "/installed") && string(r.body) != string(unknown.body)) {
			t.Fatalf("tenant B %s: %d %s", path, r.status, r.body)
		}
	}
	if r := b.do(http.MethodPost, "/proposals/"+id+":apply", nil); r.status != http.StatusNotFound {
		t.Fatalf("tenant B applies A's proposal: %d %s", r.status, r.body)
	}
	if r := b.do(http.MethodGet, "/agents/"+agentP, nil); r.status != http.StatusNotFound {
		t.Fatalf("tenant B resolves A's agent: %d %s", r.status, r.body)
	}
	for _, step := range []struct{ method, path string }{{http.MethodPatch, "/proposals/" + id}, {http.MethodPost, "/proposals/" + id + ":reject"}} {
		if r := b.do(step.method, step.path, map[string]any{"title": "mine"}); r.status != http.StatusNotFound {
			t.Fatalf("tenant B %s %s: %d %s", step.method, step.path, r.status, r.body)
		}
	}
	if after := a.world(packP); !reflect.DeepEqual(before, after) {
		t.Fatalf("tenant B changed tenant A's state:\nbefore %v\nafter  %v", before, after)
	}
}

func TestEveryRefusedApplyLeavesEverythingAsItWas(t *testing.T) {
	base, _ := newPacksFacade(t, func(o *openwop.Options) {
		o.ShippedPacks = []openwop.ShippedPack{{Kind: openwop.KindAgentPack,
			Manifest: mustJSON(t, agentPack("private.host.shipped", "1.0.0", "private.host.shipped.main", "Shipped."))}}
	})
	a := packsClient{t, base, tenantA}
	// Installed by a proposal: private.acme.helper 1.0.1 with agent agentP.
	id := a.create(openwop.KindAgentPack, agentPack(packP, "1.0.1", agentP, "You help."))
	if r := a.do(http.MethodPost, "/proposals/"+id+":apply", nil); r.status != http.StatusOK {
		t.Fatalf("install: %d %s", r.status, r.body)
	}
	with := func(p map[string]any, f func(map[string]any)) map[string]any { f(p); return p }
	firstAgent := func(p map[string]any) map[string]any { return p["agents"].([]any)[0].(map[string]any) }
	for _, tc := range []struct {
		name     string
		kind     string
		artifact map[string]any
		status   int
		code     string
		reason   string
	}{
		{"systemPromptRef instead of an inline prompt", openwop.KindAgentPack, with(agentPack("private.acme.x", "1.0.0", "private.acme.x.a", "p"), func(p map[string]any) {
			delete(firstAgent(p), "systemPrompt")
			firstAgent(p)["systemPromptRef"] = "prompts/a.md"
		}), 422, openwop.CodeMalformedForKind, ""},
		{"a non-empty nodes[]", openwop.KindAgentPack, with(agentPack("private.acme.x", "1.0.0", "private.acme.x.a", "p"), func(p map[string]any) {
			p["nodes"] = []any{map[string]any{"typeId": "private.acme.node", "version": "1.0.0", "category": "data", "role": "r"}}
		}), 422, openwop.CodeMalformedForKind, ""},
		{"a signing block", openwop.KindAgentPack, with(agentPack("private.acme.x", "1.0.0", "private.acme.x.a", "p"), func(p map[string]any) {
			p["signing"] = map[string]any{"keyId": "k1", "scheme": "ed25519-canonical-json"}
		}), 422, openwop.CodeMalformedForKind, ""},
		{"a vendor. name", openwop.KindAgentPack, agentPack("vendor.acme.x", "1.0.0", "vendor.acme.x.a", "p"), 422, openwop.CodeMalformedForKind, ""},
		{"an evalSuiteRef", openwop.KindAgentPack, with(agentPack("private.acme.x", "1.0.0", "private.acme.x.a", "p"), func(p map[string]any) {
			firstAgent(p)["evalSuiteRef"] = "evals/a.json"
		}), 422, openwop.CodeMalformedForKind, ""},
		{"a handoff schema ref", openwop.KindAgentPack, with(agentPack("private.acme.x", "1.0.0", "private.acme.x.a", "p"), func(p map[string]any) {
			firstAgent(p)["handoff"] = map[string]any{"taskSchemaRef": "schemas/t.json"}
		}), 422, openwop.CodeMalformedForKind, ""},
		{"a runtime that is not remote", openwop.KindAgentPack, with(agentPack("private.acme.x", "1.0.0", "private.acme.x.a", "p"), func(p map[string]any) {
			p["runtime"] = map[string]any{"language": "javascript", "entry": "dist/index.js"}
		}), 422, openwop.CodeMalformedForKind, ""},
		{"a chain pack without chains", openwop.KindChainPack, with(chainPack("private.acme.digest", "1.0.0"), func(p map[string]any) {
			delete(p, "chains")
		}), 422, openwop.CodeMalformedForKind, ""},
		{"a version with a leading zero", openwop.KindAgentPack, agentPack("private.acme.x", "01.0.0", "private.acme.x.a", "p"), 422, openwop.CodeMalformedForKind, ""},
		{"one agent id twice", openwop.KindAgentPack, with(agentPack("private.acme.x", "1.0.0", "private.acme.x.a", "p"), func(p map[string]any) {
			p["agents"] = append(p["agents"].([]any), map[string]any{"agentId": "private.acme.x.a", "persona": "Twin", "modelClass": "general", "systemPrompt": "q"})
		}), 422, openwop.CodeMalformedForKind, ""},
		{"the installed version again", openwop.KindAgentPack, agentPack(packP, "1.0.1", agentP, "Same version."), 409, openwop.CodeInstallConflict, "version-not-greater"},
		{"a lower version", openwop.KindAgentPack, agentPack(packP, "1.0.0", agentP, "Older."), 409, openwop.CodeInstallConflict, "version-not-greater"},
		{"a shipped pack's name", openwop.KindAgentPack, agentPack("private.host.shipped", "2.0.0", "private.host.shipped.other", "p"), 409, openwop.CodeInstallConflict, "read-only"},
		{"an agent id another pack provides", openwop.KindAgentPack, agentPack("private.acme.other", "1.0.0", agentP, "Mine now."), 409, openwop.CodeInstallConflict, "read-only"},
		{"a shipped pack's agent id", openwop.KindAgentPack, agentPack("private.acme.other", "1.0.0", "private.host.shipped.main", "Mine now."), 409, openwop.CodeInstallConflict, "read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := packsClient{t, base, tenantA}
			pid := a.create(tc.kind, tc.artifact)
			name, _ := tc.artifact["name"].(string)
			before := a.world(packP, name, "private.host.shipped")
			r := a.do(http.MethodPost, "/proposals/"+pid+":apply", nil)
			if r.status != tc.status || r.json["error"] != tc.code {
				t.Fatalf("apply: %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
			if tc.reason != "" {
				if d, _ := r.json["details"].(map[string]any); d["reason"] != tc.reason {
					t.Fatalf("reason %v, want %s", r.json["details"], tc.reason)
				}
			}
			if after := a.world(packP, name, "private.host.shipped"); !reflect.DeepEqual(before, after) {
				t.Fatalf("a refused apply changed what the tenant reads:\nbefore %v\nafter  %v", before, after)
			}
			if g := a.do(http.MethodGet, "/proposals/"+pid, nil); g.json["state"] != "draft" {
				t.Fatalf("state after a refused apply: %s", g.body)
			}
		})
	}
}

func TestAHigherVersionReplacesAndAChainPackInstalls(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	for _, v := range []string{"1.0.0", "1.2.0", "18446744073709551616.0.0", "18446744073709551616.0.1"} {
		id := a.create(openwop.KindAgentPack, agentPack(packP, v, agentP, "v"+v))
		if r := a.do(http.MethodPost, "/proposals/"+id+":apply", nil); r.status != http.StatusOK {
			t.Fatalf("apply %s: %d %s", v, r.status, r.body)
		}
	}
	if rb := a.do(http.MethodGet, "/installed-packs/"+packP, nil); rb.json["version"] != "18446744073709551616.0.1" {
		t.Fatalf("readback after a replace: %s", rb.body)
	}
	cid := a.create(openwop.KindChainPack, chainPack("private.acme.digest", "1.0.0"))
	r := a.do(http.MethodPost, "/proposals/"+cid+":apply", nil)
	if r.status != http.StatusOK || r.json["installedArtifact"].(map[string]any)["kind"] != "workflow-chain-pack" {
		t.Fatalf("apply a chain pack: %d %s", r.status, r.body)
	}
	if rb := a.do(http.MethodGet, "/installed-packs/private.acme.digest", nil); rb.status != http.StatusOK {
		t.Fatalf("chain readback: %d %s", rb.status, rb.body)
	}
}

func TestApplyWithoutTheReviewScopeIs403AndInstallsNothing(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	id := a.create(openwop.KindAgentPack, agentPack(packP, "1.0.0", agentP, "p"))
	r := call(t, http.MethodPost, base+"/proposals/"+id+":apply", nil, ownerHeader, tenantA)
	if r.status != http.StatusForbidden || r.json["error"] != "forbidden" {
		t.Fatalf("apply without review: %d %s", r.status, r.body)
	}
	if rb := a.do(http.MethodGet, "/installed-packs/"+packP, nil); rb.status != http.StatusNotFound {
		t.Fatalf("installed anyway: %d %s", rb.status, rb.body)
	}
	if g := a.do(http.MethodGet, "/proposals/"+id, nil); g.json["state"] != "draft" || g.json["activation"] != nil {
		t.Fatalf("state after a refused apply: %s", g.body)
	}
}

func TestRejectAndLifecycleConflicts(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	id := a.create(openwop.KindAgentPack, agentPack(packP, "1.0.0", agentP, "p"))
	if r := a.do(http.MethodPost, "/proposals/"+id+":reject", map[string]any{"note": "no"}); r.status != http.StatusOK || r.json["state"] != "rejected" {
		t.Fatalf("reject: %d %s", r.status, r.body)
	}
	for _, step := range []struct{ method, path string }{
		{http.MethodPost, "/proposals/" + id + ":apply"},
		{http.MethodPatch, "/proposals/" + id},
	} {
		var body any
		if step.method == http.MethodPatch {
			body = map[string]any{"title": "again"}
		}
		if r := a.do(step.method, step.path, body); r.status != http.StatusConflict || r.json["error"] != openwop.CodeStateConflict {
			t.Fatalf("%s %s after reject: %d %s", step.method, step.path, r.status, r.body)
		}
	}
	if l := a.do(http.MethodGet, "/proposals?state=rejected", nil); len(l.json["proposals"].([]any)) != 1 {
		t.Fatalf("list rejected: %s", l.body)
	}
}

func TestCreateConvergesOnItsIdempotencyKey(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	body := map[string]any{"kind": "agent-pack", "artifact": agentPack(packP, "1.0.0", agentP, "p")}
	first := a.do(http.MethodPost, "/proposals", body, "Idempotency-Key", "key-1")
	again := a.do(http.MethodPost, "/proposals", body, "Idempotency-Key", "key-1")
	if first.status != http.StatusCreated || again.json["id"] != first.json["id"] {
		t.Fatalf("retry: %s then %s", first.body, again.body)
	}
	if l := a.do(http.MethodGet, "/proposals", nil); len(l.json["proposals"].([]any)) != 1 {
		t.Fatalf("a retry made a second proposal: %s", l.body)
	}
	other := map[string]any{"kind": "agent-pack", "artifact": agentPack(packP, "9.0.0", agentP, "p")}
	if r := a.do(http.MethodPost, "/proposals", other, "Idempotency-Key", "key-1"); r.status != http.StatusConflict {
		t.Fatalf("a reused key with another body: %d %s", r.status, r.body)
	}
	// openapi.json: Idempotency-Key maxLength 255, on the create and on the revise.
	sc := loadSchemas(t)
	long := strings.Repeat("k", 256)
	wantError(t, sc, "a 256-character key", a.do(http.MethodPost, "/proposals", other, "Idempotency-Key", long), http.StatusBadRequest, "validation_error")
	wantError(t, sc, "a 256-character key on a revise", a.do(http.MethodPatch, "/proposals/"+first.json["id"].(string), other, "Idempotency-Key", long), http.StatusBadRequest, "validation_error")
	if l := a.do(http.MethodGet, "/proposals", nil); len(l.json["proposals"].([]any)) != 1 {
		t.Fatalf("a refused key made a proposal: %s", l.body)
	}
	if r := a.do(http.MethodPost, "/proposals", other, "Idempotency-Key", long[:255]); r.status != http.StatusCreated {
		t.Fatalf("a 255-character key: %d %s", r.status, r.body)
	}
}

func TestBadProposalRequestsAreValidationErrors(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	sc := loadSchemas(t)
	for _, tc := range []struct {
		name string
		body any
	}{
		{"an unknown kind", map[string]any{"kind": "rule", "artifact": map[string]any{}}},
		{"no artifact", map[string]any{"kind": "agent-pack"}},
		{"an artifact that is not an object", map[string]any{"kind": "agent-pack", "artifact": []any{1}}},
		{"an unknown field", map[string]any{"kind": "agent-pack", "artifact": map[string]any{}, "extra": 1}},
		{"bad provenance", map[string]any{"kind": "agent-pack", "artifact": map[string]any{}, "provenance": map[string]any{"runs": 1}}},
		{"not JSON", "{"},
		{"an artifact with a duplicate member name", `{"kind":"agent-pack","artifact":{"name":"private.a.b","name":"vendor.a.b"}}`},
		{"an artifact that is not UTF-8", "{\"kind\":\"agent-pack\",\"artifact\":{\"name\":\"\xff\xfe\"}}"},
		{"an artifact with a number beyond a double", `{"kind":"agent-pack","artifact":{"n":1e400}}`},
	} {
		r := a.do(http.MethodPost, "/proposals", tc.body)
		wantError(t, sc, tc.name, r, http.StatusBadRequest, "validation_error")
	}
}

func TestVersionNegotiationAndReadbackConfiguration(t *testing.T) {
	base, _ := newPacksFacade(t, func(o *openwop.Options) { o.Readback = false })
	a := packsClient{t, base, tenantA}
	if r := a.do(http.MethodGet, "/agents", nil, "OpenWOP-Version", "3.0"); r.status != http.StatusNotAcceptable || r.json["error"] != "protocol_version_unsupported" {
		t.Fatalf("OpenWOP-Version 3.0: %d %s", r.status, r.body)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/agents", nil)
	req.Header.Set(ownerHeader, tenantA)
	req.Header.Set("OpenWOP-Version", "2.7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("OpenWOP-Version") != "2.7" {
		t.Fatalf("OpenWOP-Version answered %q", resp.Header.Get("OpenWOP-Version"))
	}
	id := a.create(openwop.KindAgentPack, agentPack(packP, "1.0.0", agentP, "p"))
	r := a.do(http.MethodPost, "/proposals/"+id+":apply", nil)
	if r.status != http.StatusOK {
		t.Fatalf("apply: %d %s", r.status, r.body)
	}
	// Without readback nothing names the readback operation: no installedArtifact, no
	// activation.installedArtifactRef (issue 25 finding 20).
	if _, ok := r.json["installedArtifact"]; ok {
		t.Fatalf("installedArtifact without readback: %s", r.body)
	}
	if act, ok := r.json["activation"].(map[string]any); !ok || len(act) != 0 {
		t.Fatalf("activation without readback: %s, want {}", r.body)
	}
	var doc any
	_ = json.Unmarshal(r.body, &doc)
	if err := compileSchema(t, "proposal.schema.json").Validate(doc); err != nil {
		t.Fatalf("applied proposal without readback fails proposal.schema.json: %v", err)
	}
	if r := a.do(http.MethodGet, "/installed-packs/"+packP, nil); r.status != http.StatusNotFound {
		t.Fatalf("readback without the capability: %d %s", r.status, r.body)
	}
	d := call(t, http.MethodGet, base+"/.well-known/openwop", nil)
	pr := d.json["agents"].(map[string]any)["proposals"].(map[string]any)
	if _, ok := pr["readback"]; ok || pr["activation"] != "direct-rbac" || pr["clientDrafts"] != true {
		t.Fatalf("discovery agents.proposals: %v, want no readback", pr)
	}
}

// readback is the list of readable kinds: a client gates getInstalledPack on readback
// containing the kind (OpenWOP's installed-pack readback RFC §A), which a boolean never does.
func TestDiscoveryListsTheKindsReadBack(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	d := call(t, http.MethodGet, base+"/.well-known/openwop", nil)
	pr := d.json["agents"].(map[string]any)["proposals"].(map[string]any)
	want := []any{openwop.KindAgentPack, openwop.KindChainPack}
	if !reflect.DeepEqual(pr["readback"], want) || !reflect.DeepEqual(pr["artifactKinds"], want) {
		t.Fatalf("agents.proposals %v: readback, want %v", pr, want)
	}
	if mirrored := d.json["capabilities"].(map[string]any)["agents"].(map[string]any)["proposals"].(map[string]any); !reflect.DeepEqual(mirrored["readback"], want) {
		t.Fatalf("capabilities.agents.proposals: %v", mirrored)
	}
}

func TestRacingAppliesOfTwoPacksDeclaringOneAgentInstallOnlyOne(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	for round := range 5 {
		agent := "private.acme.race.a" + strconv.Itoa(round)
		ids := []string{
			a.create(openwop.KindAgentPack, agentPack("private.acme.one"+strconv.Itoa(round), "1.0.0", agent, "one")),
			a.create(openwop.KindAgentPack, agentPack("private.acme.two"+strconv.Itoa(round), "1.0.0", agent, "two")),
		}
		statuses := make([]int, 2)
		done := make(chan struct{})
		for i, id := range ids {
			go func() {
				defer func() { done <- struct{}{} }()
				statuses[i] = call(t, http.MethodPost, base+"/proposals/"+id+":apply", nil, ownerHeader, tenantA, reviewHeader, "yes").status
			}()
		}
		<-done
		<-done
		ok := 0
		for _, s := range statuses {
			if s == http.StatusOK {
				ok++
			} else if s != http.StatusConflict {
				t.Fatalf("round %d: statuses %v", round, statuses)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d applies of packs declaring agent %s succeeded (statuses %v)", round, ok, agent, statuses)
		}
		if r := a.do(http.MethodGet, "/agents/"+agent, nil); r.status != http.StatusOK {
			t.Fatalf("round %d: the agent does not resolve: %d %s", round, r.status, r.body)
		}
	}
}

func TestShippedPacksFilesAreCheckedAtStart(t *testing.T) {
	good := `{"packs":[{"kind":"agent-pack","manifest":{"kind":"node","name":"private.host.a","version":"1.0.0"}}]}`
	if p, err := openwop.LoadShippedPacks(strings.NewReader(good)); err != nil || len(p) != 1 || string(p[0].Manifest) != `{"kind":"node","name":"private.host.a","version":"1.0.0"}` {
		t.Fatalf("a good file: %v %v", p, err)
	}
	for name, bad := range map[string]string{
		"not JSON":                   `{`,
		"an unknown key":             `{"packs":[],"x":1}`,
		"an unknown kind":            `{"packs":[{"kind":"rule","manifest":{"name":"a","version":"1"}}]}`,
		"no name":                    `{"packs":[{"kind":"agent-pack","manifest":{"version":"1"}}]}`,
		"a name twice":               `{"packs":[{"kind":"agent-pack","manifest":{"name":"a","version":"1"}},{"kind":"agent-pack","manifest":{"name":"a","version":"2"}}]}`,
		"not an object":              `{"packs":[{"kind":"agent-pack","manifest":[1]}]}`,
		"a manifest of another kind": `{"packs":[{"kind":"workflow-chain-pack","manifest":{"kind":"node","name":"a","version":"1"}}]}`,
		"an agent id in two packs": `{"packs":[{"kind":"agent-pack","manifest":{"kind":"node","name":"a","version":"1","agents":[{"agentId":"x"}]}},` +
			`{"kind":"agent-pack","manifest":{"kind":"node","name":"b","version":"1","agents":[{"agentId":"x"}]}}]}`,
		"a kind that is not a string": `{"packs":[{"kind":1,"manifest":{"kind":"node","name":"a","version":"1"}}]}`,
		"packs that is not an array":  `{"packs":{"kind":"agent-pack"}}`,
		"an unknown key in a pack":    `{"packs":[{"kind":"agent-pack","manifest":{"kind":"node","name":"a","version":"1"},"x":1}]}`,
	} {
		_, err := openwop.LoadShippedPacks(strings.NewReader(bad))
		switch {
		case err == nil:
			t.Errorf("%s: accepted", name)
		case goLeak.MatchString(err.Error()):
			t.Errorf("%s: %q names Go", name, err)
		}
	}
}

// The packs workbench is written only through the facade: a write, delete, commit, proposal
// or decision through another surface is PermissionDenied, so nothing installs a pack or
// removes one without apply's judgment; reading it is fine.
func TestThePacksWorkbenchIsWrittenOnlyThroughTheFacade(t *testing.T) {
	opt := testOptions()
	opt.Readback = true
	base, n := newFacadeNode(t, opt, workbench.Config{InlineMaxBytes: 4096,
		ReservedWorkbenches: map[string]string{openwop.PacksWorkbench: openwop.Surface}})
	a := packsClient{t, base, tenantA}
	id := a.create(openwop.KindAgentPack, agentPack(packP, "1.0.0", agentP, "p"))
	if r := a.do(http.MethodPost, "/proposals/"+id+":apply", nil); r.status != http.StatusOK {
		t.Fatalf("apply: %d %s", r.status, r.body)
	}
	other := a.create(openwop.KindAgentPack, agentPack("private.acme.other", "1.0.0", "private.acme.other.main", "p"))
	before := a.world(packP, "private.acme.sneaky", "private.acme.other")
	rest := workbench.WithSurface(auth.WithPrincipal(t.Context(), auth.Local), "rest")
	tenant, _, _ := strings.Cut(tenantA, "/")
	_, werr := n.Service.Writes.Write(rest, workbench.WriteRequest{Agent: tenant, Workbench: openwop.PacksWorkbench,
		Path: "packs/private.acme.sneaky", Body: strings.NewReader(`{"name":"private.acme.sneaky","version":"1.0.0"}`),
		ContentType: "application/vnd.openwop.agent-pack+json"})
	_, derr := n.Service.Writes.Delete(rest, tenant, openwop.PacksWorkbench, "packs/"+packP, 0, "")
	v, _, _, _ := n.Service.Reads.ViewAt(rest, tenant, openwop.PacksWorkbench, workbench.At{})
	var pending string
	if list, _, err := v.Proposals().List(tenant, openwop.PacksWorkbench, meta.ProposalFilter{State: meta.ProposalPending}, 0, 10); err == nil && len(list) == 1 {
		pending = list[0].ID
	}
	_, cerr := n.Service.Review.Decide(rest, tenant, workbench.DecideInput{ID: openwop.PacksWorkbench, ProposalID: pending,
		Disposition: meta.DispositionAccept, SubmissionID: "sneak"})
	for what, err := range map[string]error{"write": werr, "delete": derr, "Cairn accept of " + other: cerr} {
		if workbench.AsError(err).Code != workbench.CodePermissionDenied {
			t.Fatalf("a %s of the packs workbench through REST: %v", what, err)
		}
	}
	if after := a.world(packP, "private.acme.sneaky", "private.acme.other"); !reflect.DeepEqual(before, after) {
		t.Fatalf("a refused write changed what the tenant reads:\nbefore %v\nafter  %v", before, after)
	}
	// Reading it through REST is fine.
	if _, err := n.Service.Reads.Stat(rest, tenant, openwop.PacksWorkbench, "packs/"+packP); err != nil {
		t.Fatalf("stat through REST: %v", err)
	}
}

func TestTheProposalListIsPaged(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	want := map[string]bool{}
	for i := range 5 {
		want[a.create(openwop.KindAgentPack, agentPack("private.acme.p"+strconv.Itoa(i), "1.0.0", "private.acme.p"+strconv.Itoa(i)+".a", "p"))] = true
	}
	got := map[string]bool{}
	cursor, pages := "", 0
	for {
		q := "/proposals?limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r := a.do(http.MethodGet, q, nil)
		list, _ := r.json["proposals"].([]any)
		if r.status != http.StatusOK || len(list) > 2 {
			t.Fatalf("page: %d %.300s", r.status, r.body)
		}
		for _, p := range list {
			got[p.(map[string]any)["id"].(string)] = true
		}
		pages++
		next, _ := r.json["nextCursor"].(string)
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("the pages do not end")
		}
		cursor = next
	}
	if !reflect.DeepEqual(got, want) || pages != 3 {
		t.Fatalf("%d pages listed %v, want %v", pages, got, want)
	}
	sc := loadSchemas(t)
	for _, q := range []string{"?state=bogus", "?kind=rule", "?limit=0", "?cursor=xyz"} {
		wantError(t, sc, q, a.do(http.MethodGet, "/proposals"+q, nil), http.StatusBadRequest, "validation_error")
	}
}

// Applies of unrelated packs in one tenant contend on the packs workbench's revision: each
// judges again and installs; none gives up. An apply loses a round only when another
// apply's install committed in between (the only writes to the packs workbench here), so
// of openwop.ApplyAttempts racing applies none runs out of rounds, whatever order the
// scheduler gives them; more racers than rounds may leave one with the retryable 503
// (apply.go).
func TestParallelAppliesOfUnrelatedPacksAllInstall(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	const n = openwop.ApplyAttempts
	ids := make([]string, n)
	for i := range n {
		ids[i] = a.create(openwop.KindAgentPack, agentPack("private.acme.u"+strconv.Itoa(i), "1.0.0", "private.acme.u"+strconv.Itoa(i)+".a", "p"))
	}
	statuses := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := call(t, http.MethodPost, base+"/proposals/"+id+":apply", nil, ownerHeader, tenantA, reviewHeader, "yes")
			statuses[i], bodies[i] = r.status, string(r.body)
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Fatalf("apply %d: %d %.300s (all: %v)", i, s, bodies[i], statuses)
		}
	}
	if r := a.do(http.MethodGet, "/agents", nil); r.json["total"] != float64(n) {
		t.Fatalf("agents after %d applies: %.200s", n, r.body)
	}
}

// A reused Idempotency-Key with another body is 409 idempotency_key_mismatch and names no
// internal id.
func TestAReusedIdempotencyKeyNamesNoInternalID(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	first := a.do(http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": agentPack(packP, "1.0.0", agentP, "p")}, "Idempotency-Key", "k")
	other := a.do(http.MethodPost, "/proposals", map[string]any{"kind": "agent-pack", "artifact": agentPack("private.acme.zzz", "1.0.0", "private.acme.zzz.a", "p")}, "Idempotency-Key", "k")
	if other.status != http.StatusConflict || other.json["error"] != openwop.CodeIdempotencyMismatch || strings.Contains(string(other.body), first.json["id"].(string)) {
		t.Fatalf("a reused key: %d %s", other.status, other.body)
	}
}

func TestAMethodARouteDoesNotAnswerIs405WithAllow(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/proposals", "GET, POST"},
		{http.MethodPut, "/proposals/p1", "GET, PATCH"},
		{http.MethodGet, "/proposals/p1:apply", "POST"},
		{http.MethodPost, "/installed-packs/private.a.b", "GET"},
		{http.MethodDelete, "/agents", "GET"},
		{http.MethodDelete, "/v1/runs", "GET, POST"},
	} {
		a := call(t, tc.method, base+tc.path, nil, ownerHeader, tenantA)
		if a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", tc.method, tc.path, a.status, a.header.Get("Allow"), tc.allow)
		}
	}
}

// A PATCH sent again under its Idempotency-Key (an answer lost) answers the revision it
// made and makes no other, even after the chain moved on; the key with another body is 409
// idempotency_key_mismatch and changes nothing, as on a create (the published revise
// operation: "the same key with another body is 409"). Before, a retry revised the
// revision the first one made: a second revision, and a retry that raced another client's
// PATCH reinstated the retried artifact over it.
func TestAReviseConvergesOnItsIdempotencyKey(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	id := a.create("agent-pack", agentPack(packP, "1.0.0", agentP, "p0"))
	x := map[string]any{"artifact": agentPack(packP, "1.0.0", agentP, "X")}
	first := a.do(http.MethodPatch, "/proposals/"+id, x, "Idempotency-Key", "rev-1")
	if first.status != http.StatusOK || first.json["state"] != "revised" {
		t.Fatalf("revise: %d %s", first.status, first.body)
	}
	again := a.do(http.MethodPatch, "/proposals/"+id, x, "Idempotency-Key", "rev-1")
	if again.status != http.StatusOK || !bytes.Equal(again.body, first.body) {
		t.Fatalf("the PATCH sent again: %d %s, want the first answer %s", again.status, again.body, first.body)
	}
	y := a.do(http.MethodPatch, "/proposals/"+id, map[string]any{"artifact": agentPack(packP, "1.0.0", agentP, "Y")}, "Idempotency-Key", "rev-2")
	if y.status != http.StatusOK {
		t.Fatalf("another client's revise: %d %s", y.status, y.body)
	}
	late := a.do(http.MethodPatch, "/proposals/"+id, x, "Idempotency-Key", "rev-1")
	if late.status != http.StatusOK || late.json["artifact"].(map[string]any)["agents"].([]any)[0].(map[string]any)["systemPrompt"] != "X" {
		t.Fatalf("the first PATCH sent again after another: %d %s", late.status, late.body)
	}
	before := a.world(packP)
	if r := a.do(http.MethodPatch, "/proposals/"+id, map[string]any{"title": "other"}, "Idempotency-Key", "rev-1"); r.status != http.StatusConflict || r.json["error"] != openwop.CodeIdempotencyMismatch {
		t.Fatalf("the key with another body: %d %s", r.status, r.body)
	}
	if after := a.world(packP); !reflect.DeepEqual(after, before) {
		t.Fatalf("a refused PATCH changed the tenant's world:\n%v\n%v", before, after)
	}
	got := a.do(http.MethodGet, "/proposals/"+id, nil)
	if got.json["artifact"].(map[string]any)["agents"].([]any)[0].(map[string]any)["systemPrompt"] != "Y" {
		t.Fatalf("the retries replaced the latest revision: %s", got.body)
	}
	if ap := a.do(http.MethodPost, "/proposals/"+id+":apply", nil); ap.status != http.StatusOK {
		t.Fatalf("apply: %d %s", ap.status, ap.body)
	}
	if rb := a.do(http.MethodGet, "/installed-packs/"+packP, nil); rb.json["agents"].([]any)[0].(map[string]any)["systemPrompt"] != "Y" {
		t.Fatalf("readback: %s", rb.body)
	}
}

// A chain pack whose chains share a chainId is malformed for its kind ("Each MUST have a
// unique chainId within the pack", workflow-chain-pack-manifest.schema.json): apply is 422
// pack_validation_failed naming the second one, and installs nothing.
func TestAChainPackWithARepeatedChainIDIsRefused(t *testing.T) {
	base, _ := newPacksFacade(t, nil)
	a := packsClient{t, base, tenantA}
	p := chainPack("private.acme.chains", "1.0.0")
	chains := p["chains"].([]any)
	p["chains"] = append(chains, chains[0])
	id := a.create("workflow-chain-pack", p)
	before := a.world("private.acme.chains")
	r := a.do(http.MethodPost, "/proposals/"+id+":apply", nil)
	if d, _ := r.json["details"].(map[string]any); r.status != http.StatusUnprocessableEntity || r.json["error"] != openwop.CodeMalformedForKind || d["field"] != "artifact.chains[1].chainId" {
		t.Fatalf("apply of a pack declaring chain digest twice: %d %s", r.status, r.body)
	}
	if after := a.world("private.acme.chains"); !reflect.DeepEqual(after, before) {
		t.Fatalf("a refused apply changed the tenant's world:\n%v\n%v", before, after)
	}
}
