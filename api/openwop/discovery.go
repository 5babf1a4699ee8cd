package openwop

// The discovery document (GET /.well-known/openwop). Its required fields are those of
// openwop-sdks schemas/capabilities.schema.json (protocolVersion, supportedEnvelopes,
// schemaVersions, limits{clarificationRounds, schemaRounds, envelopesPerTurn}); the
// workspace block (RFC 0059 §A, closed: supported, versioned, maxFileBytes, maxFiles,
// maxVersions) is at the document root, where the current conformance suite reads it
// (conformance/src/lib/discovery-capabilities.ts), and mirrored under capabilities, where
// older suites read it. Cairn runs no LLM, so it recognizes no envelope and its envelope
// limits are 0; besides workspace it advertises only the agents family of proposals and
// installed packs (agentsBlock; in particular no multiAgent.executionModel: it executes no
// workflow).

type workspaceBlock struct {
	Supported    bool  `json:"supported"`
	Versioned    bool  `json:"versioned,omitempty"`
	MaxFileBytes int64 `json:"maxFileBytes,omitempty"`
	MaxFiles     int   `json:"maxFiles,omitempty"`
	MaxVersions  int   `json:"maxVersions,omitempty"`
}

type discoveryLimits struct {
	ClarificationRounds int `json:"clarificationRounds"`
	SchemaRounds        int `json:"schemaRounds"`
	EnvelopesPerTurn    int `json:"envelopesPerTurn"`
}

// agentsBlock is the agents family as far as this host serves it (issue 18 §6): proposals
// of agent and chain packs, drafted by clients (clientDrafts: POST /proposals), activated
// by the review scope alone (direct-rbac), read back by getInstalledPack when configured
// (readback lists the kinds that are: a kind is readable when readback contains it,
// OpenWOP's installed-pack readback RFC §A; absent when none is, which no schema can
// refuse where an empty list might); and the manifest agents those packs declare, per
// tenant (installScope tenant: GET /agents lists only the caller's tenant's). Cairn runs
// no agent: manifestRuntime says where the inventory comes from, nothing more.
type agentsBlock struct {
	Proposals       proposalsBlock       `json:"proposals"`
	ManifestRuntime manifestRuntimeBlock `json:"manifestRuntime"`
}

type proposalsBlock struct {
	ArtifactKinds []string `json:"artifactKinds"`
	Activation    string   `json:"activation"`
	ClientDrafts  bool     `json:"clientDrafts"`
	Readback      []string `json:"readback,omitempty"`
}

type manifestRuntimeBlock struct {
	InstallScope string `json:"installScope"`
}

type discoveryDoc struct {
	ProtocolVersion    string          `json:"protocolVersion"`
	SupportedEnvelopes []string        `json:"supportedEnvelopes"`
	SchemaVersions     map[string]int  `json:"schemaVersions"`
	Limits             discoveryLimits `json:"limits"`
	Workspace          workspaceBlock  `json:"workspace"`
	Agents             *agentsBlock    `json:"agents,omitempty"`
	Capabilities       map[string]any  `json:"capabilities"`
}

// ProtocolVersion is the OpenWOP protocol version the facade speaks.
const ProtocolVersion = "1.0"

func (h *Handler) discovery() discoveryDoc {
	ws := workspaceBlock{Supported: false}
	if h.opt.Enabled {
		ws = workspaceBlock{Supported: true, Versioned: true, MaxFileBytes: h.opt.MaxFileBytes, MaxFiles: h.opt.MaxFiles,
			MaxVersions: h.opt.MaxVersions}
	}
	d := discoveryDoc{ProtocolVersion: ProtocolVersion, SupportedEnvelopes: []string{}, SchemaVersions: map[string]int{},
		Workspace: ws, Capabilities: map[string]any{"workspace": ws}}
	if h.opt.Enabled {
		d.Agents = &agentsBlock{
			Proposals: proposalsBlock{ArtifactKinds: ArtifactKinds, Activation: "direct-rbac", ClientDrafts: true,
				Readback: h.packs.readbackKinds()},
			ManifestRuntime: manifestRuntimeBlock{InstallScope: "tenant"}}
		d.Capabilities["agents"] = d.Agents
	}
	return d
}
