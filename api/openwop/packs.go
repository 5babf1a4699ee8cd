package openwop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/cairnstore/cairn/meta"
)

// Installed packs (issue 18 §3–§5): readback (GET /installed-packs/{packName},
// getInstalledPack) and the minimal agent inventory (GET /agents, GET /agents/{agentId})
// of what a tenant's installed agent packs declare. A tenant sees its own packs (every
// workspace of it: one version per tenant) and the host's shipped packs; a pending
// proposal's pack, another tenant's and an unknown name are the same 404.

const (
	installedPrefix = "/installed-packs"
	agentsPath      = "/agents"
)

// ShippedPack is a pack the host installs itself (from configuration: --openwop-packs-file):
// readable by every tenant, never replaced by a proposal (read-only).
type ShippedPack struct {
	Kind string
	// Manifest is the manifest's JSON, served exactly.
	Manifest []byte
}

// installedPack is one pack as the inventory sees it.
type installedPack struct {
	kind, version string
	// byProposal: the file's current revision was published by a proposal's accept.
	byProposal bool
	generation uint64
	entry      *meta.Entry // nil for a shipped pack
	manifest   []byte
	agents     []agentDecl
}

type agentOwner struct {
	packName, packVersion string
	agent                 agentDecl
}

// inventory is every pack and agent one tenant resolves at one view.
type inventory struct {
	shipped map[string]installedPack
	packs   map[string]installedPack
	agents  map[string]agentOwner
}

// agentDecl is what the inventory reads of an agent manifest (agent-manifest.schema.json).
type agentDecl struct {
	AgentID       string   `json:"agentId"`
	Persona       string   `json:"persona"`
	Label         string   `json:"label"`
	Description   string   `json:"description"`
	ModelClass    string   `json:"modelClass"`
	ToolAllowlist []string `json:"toolAllowlist"`
	Handoff       *struct {
		TaskSchemaRef   string `json:"taskSchemaRef"`
		ReturnSchemaRef string `json:"returnSchemaRef"`
	} `json:"handoff"`
}

// agentsOf returns the agents an agent pack's manifest declares (none when malformed).
func agentsOf(manifest []byte) []agentDecl {
	var m struct {
		Agents []agentDecl `json:"agents"`
	}
	if json.Unmarshal(manifest, &m) != nil {
		return nil
	}
	return m.Agents
}

// parsedManifest is what the inventory reads of one pack file.
type parsedManifest struct {
	manifest []byte
	version  string
	agents   []agentDecl
}

func parseManifest(b []byte) parsedManifest {
	_, version := artifactIdentity(b)
	return parsedManifest{manifest: b, version: version, agents: agentsOf(b)}
}

// manifestCache keeps what the inventory parsed of pack files by digest (the bytes of a
// digest never change), bounded by manifestCacheEntries.
type manifestCache struct {
	mu sync.Mutex
	m  map[meta.Digest]parsedManifest
}

const manifestCacheEntries = 4096

func (c *manifestCache) get(d meta.Digest) (parsedManifest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[d]
	return b, ok
}

func (c *manifestCache) put(d meta.Digest, p parsedManifest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= manifestCacheEntries {
		c.m = make(map[meta.Digest]parsedManifest)
	}
	c.m[d] = p
}

// inventory reads tenant's packs at view v (ws nil: the tenant has none).
func (h *packsHandler) inventory(ctx context.Context, v *meta.View, ws *meta.Workspace, tenant string) (*inventory, *Error) {
	inv := &inventory{shipped: h.shipped, packs: map[string]installedPack{}, agents: map[string]agentOwner{}}
	// The tenant's own packs first: a shipped pack configured after a tenant installed one
	// of its name (or agent ids) does not shadow what the tenant's applied proposal says.
	defer func() {
		for name, p := range h.shipped {
			if _, own := inv.packs[name]; !own {
				inv.addAgents(name, p)
			}
		}
	}()
	if ws == nil {
		return inv, nil
	}
	type packFile struct {
		name string
		e    *meta.Entry
	}
	for _, f := range files(v, ws, packsDir, func(path string, fv meta.FileVersion) packFile {
		return packFile{strings.TrimPrefix(path, packsDir), fv.Entry}
	}) {
		e, name := f.e, f.name
		kind := kindOf(e.ContentType)
		if kind == "" || e.Size > MaxArtifactBytes {
			// Not a pack this host reads: it still holds its name, read-only.
			inv.packs[name] = installedPack{generation: e.Generation, entry: e}
			continue
		}
		pm, ok := h.manifests.get(e.Digest)
		if !ok {
			b, err := h.svc.Reads.ReadEntry(ctx, tenant, e, MaxArtifactBytes)
			if err != nil {
				return nil, fromStore(err)
			}
			pm = parseManifest(b)
			h.manifests.put(e.Digest, pm)
		}
		p := installedPack{kind: kind, version: pm.version, byProposal: e.Proposal != "", generation: e.Generation, entry: e,
			manifest: pm.manifest, agents: pm.agents}
		inv.packs[name] = p
		inv.addAgents(name, p)
	}
	return inv, nil
}

func (inv *inventory) addAgents(name string, p installedPack) {
	if p.kind != KindAgentPack {
		return
	}
	for _, a := range p.agents {
		if _, taken := inv.agents[a.AgentID]; !taken && a.AgentID != "" {
			inv.agents[a.AgentID] = agentOwner{packName: name, packVersion: p.version, agent: a}
		}
	}
}

// tenantInventory is the inventory of o's tenant at a fresh view.
func (h *packsHandler) tenantInventory(ctx context.Context, o Owner) (*inventory, *Error) {
	v, ws, ok, err := h.packsView(ctx, o.Tenant)
	if err != nil {
		return nil, err
	}
	if !ok {
		ws = nil
	}
	return h.inventory(ctx, v, ws, o.Tenant)
}

// serveInstalled answers GET /installed-packs/{packName}: the bare manifest.
func (h *packsHandler) serveInstalled(w http.ResponseWriter, r *http.Request, o Owner, rest string) {
	missing := notFound("No such installed pack.")
	if !h.readback {
		WriteError(w, notFound("no such route"))
		return
	}
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET", "an installed pack answers GET")
		return
	}
	if err := mayRead(r); err != nil {
		WriteError(w, err)
		return
	}
	raw, err := url.PathUnescape(strings.TrimPrefix(rest, "/"))
	if err != nil || raw == "" {
		WriteError(w, missing)
		return
	}
	// name@version (an applied proposal's installedArtifactRef) reads the pack while that
	// version is the one installed.
	name, version, pinned := strings.Cut(raw, "@")
	body, found, rerr := h.installedManifest(r.Context(), o, name)
	switch {
	case rerr != nil:
		WriteError(w, rerr)
	case !found:
		WriteError(w, missing)
	default:
		if _, v := artifactIdentity(body); pinned && v != version {
			WriteError(w, missing)
			return
		}
		writeManifest(w, body)
	}
}

// readbackKinds lists the artifact kinds getInstalledPack reads back: every kind this host
// proposes when Options.Readback, none otherwise.
func (h *packsHandler) readbackKinds() []string {
	if !h.readback {
		return nil
	}
	return ArtifactKinds
}

// installedManifest returns the manifest of pack name as o's tenant resolves it: its own
// installed pack, else the host's shipped one.
func (h *packsHandler) installedManifest(ctx context.Context, o Owner, name string) ([]byte, bool, *Error) {
	if path, ok := packPath(name); ok {
		v, ws, ok, verr := h.packsView(ctx, o.Tenant)
		if verr != nil {
			return nil, false, verr
		}
		if ok {
			if e, ferr := v.File(ws, path); ferr == nil && kindOf(e.ContentType) != "" && e.Size <= MaxArtifactBytes {
				body, rerr := h.svc.Reads.ReadEntry(ctx, o.Tenant, e, MaxArtifactBytes)
				if rerr != nil {
					return nil, false, fromStore(rerr)
				}
				return body, true, nil
			}
		}
	}
	if p, ok := h.shipped[name]; ok {
		return p.manifest, true, nil
	}
	return nil, false, nil
}

func writeManifest(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// inventoryEntry is an agent as GET /agents lists it (agent-inventory-response.schema.json
// AgentInventoryEntry): never the system prompt or the handoff schemas.
type inventoryEntry struct {
	AgentID           string   `json:"agentId"`
	Persona           string   `json:"persona"`
	Label             string   `json:"label"`
	Description       string   `json:"description,omitempty"`
	ModelClass        string   `json:"modelClass"`
	PackName          string   `json:"packName"`
	PackVersion       string   `json:"packVersion"`
	ToolAllowlist     []string `json:"toolAllowlist"`
	HasHandoffSchemas bool     `json:"hasHandoffSchemas"`
}

func entryOf(a agentOwner) inventoryEntry {
	e := inventoryEntry{AgentID: a.agent.AgentID, Persona: a.agent.Persona, Label: a.agent.Label, Description: a.agent.Description,
		ModelClass: a.agent.ModelClass, PackName: a.packName, PackVersion: a.packVersion, ToolAllowlist: a.agent.ToolAllowlist,
		HasHandoffSchemas: a.agent.Handoff != nil && (a.agent.Handoff.TaskSchemaRef != "" || a.agent.Handoff.ReturnSchemaRef != "")}
	if e.Label == "" {
		e.Label = e.Persona
	}
	if e.ToolAllowlist == nil {
		e.ToolAllowlist = []string{}
	}
	return e
}

// serveAgents answers GET /agents and GET /agents/{agentId}.
func (h *packsHandler) serveAgents(w http.ResponseWriter, r *http.Request, o Owner, rest string) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET", "the agent inventory answers GET")
		return
	}
	if err := mayRead(r); err != nil {
		WriteError(w, err)
		return
	}
	inv, err := h.tenantInventory(r.Context(), o)
	if err != nil {
		WriteError(w, err)
		return
	}
	if rest == "" {
		out := make([]inventoryEntry, 0, len(inv.agents))
		for _, a := range inv.agents {
			out = append(out, entryOf(a))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].AgentID < out[j].AgentID })
		writeJSON(w, http.StatusOK, map[string]any{"agents": out, "total": len(out)})
		return
	}
	id, uerr := url.PathUnescape(strings.TrimPrefix(rest, "/"))
	a, ok := inv.agents[id]
	if uerr != nil || !ok {
		WriteError(w, notFound("No such agent."))
		return
	}
	writeJSON(w, http.StatusOK, entryOf(a))
}

// shippedPacks indexes the configured shipped packs by name (ops validates them at start).
func shippedPacks(in []ShippedPack) map[string]installedPack {
	out := make(map[string]installedPack, len(in))
	for _, p := range in {
		name, version := artifactIdentity(p.Manifest)
		out[name] = installedPack{kind: p.Kind, version: version, manifest: p.Manifest, agents: agentsOf(p.Manifest)}
	}
	return out
}

// manifestKind is the manifest's own kind discriminator of each artifact kind.
var manifestKind = map[string]string{KindAgentPack: "node", KindChainPack: "workflow-chain"}

// LoadShippedPacks reads a shipped-packs file: {"packs": [{"kind": K, "manifest": {...}}]}
// (closed objects: a refusal names the member and rule, never a Go type), each kind one of
// ArtifactKinds and the manifest's own kind its discriminator ("node", "workflow-chain"),
// each manifest an object with string name and version, names and agent ids unique. The
// manifests are kept byte for byte as the file holds them.
func LoadShippedPacks(r io.Reader) ([]ShippedPack, error) {
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("the packs file could not be read: %w", err)
	}
	var f struct {
		Packs []json.RawMessage `json:"packs"`
	}
	if err := decodeClosed(b, &f); err != nil {
		return nil, fmt.Errorf("not a packs file ({\"packs\": [{\"kind\", \"manifest\"}]}): %w", err)
	}
	out := make([]ShippedPack, 0, len(f.Packs))
	seen := map[string]bool{}
	agents := map[string]string{} // agent id -> the shipped pack declaring it
	for i, raw := range f.Packs {
		at := "packs[" + strconv.Itoa(i) + "]"
		var p struct {
			Kind     string          `json:"kind"`
			Manifest json.RawMessage `json:"manifest"`
		}
		if err := decodeStrict(raw, &p); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if !knownKind(p.Kind) {
			return nil, fmt.Errorf("%s.kind must be one of %s, got %q", at, strings.Join(ArtifactKinds, ", "), p.Kind)
		}
		if checkArtifact(p.Manifest) != nil {
			return nil, fmt.Errorf("%s.manifest must be a JSON object of at most %d bytes", at, MaxArtifactBytes)
		}
		name, version := artifactIdentity(p.Manifest)
		if name == "" || version == "" {
			return nil, fmt.Errorf("%s.manifest must have a string name and version", at)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: pack %q is listed twice", at, name)
		}
		seen[name] = true
		var disc struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(p.Manifest, &disc)
		if want := manifestKind[p.Kind]; disc.Kind != want {
			return nil, fmt.Errorf("%s.manifest.kind must be %q for a %s, got %q", at, want, p.Kind, disc.Kind)
		}
		for _, a := range agentsOf(p.Manifest) {
			if owner, ok := agents[a.AgentID]; ok {
				return nil, fmt.Errorf("%s: agent %q is declared by pack %q too", at, a.AgentID, owner)
			}
			agents[a.AgentID] = name
		}
		out = append(out, ShippedPack{Kind: p.Kind, Manifest: []byte(p.Manifest)})
	}
	return out, nil
}
