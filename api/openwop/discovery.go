package openwop

// The discovery document (GET /.well-known/openwop). Its required fields are those of
// openwop-sdks schemas/capabilities.schema.json (protocolVersion, supportedEnvelopes,
// schemaVersions, limits{clarificationRounds, schemaRounds, envelopesPerTurn}); the
// workspace block (RFC 0059 §A, closed: supported, versioned, maxFileBytes, maxFiles,
// maxVersions) is at the document root, where the current conformance suite reads it
// (conformance/src/lib/discovery-capabilities.ts), and mirrored under capabilities, where
// older suites read it. Cairn runs no LLM, so it recognizes no envelope and its envelope
// limits are 0; it advertises no other capability family (in particular no
// multiAgent.executionModel: it executes no workflow).

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

type discoveryDoc struct {
	ProtocolVersion    string                    `json:"protocolVersion"`
	SupportedEnvelopes []string                  `json:"supportedEnvelopes"`
	SchemaVersions     map[string]int            `json:"schemaVersions"`
	Limits             discoveryLimits           `json:"limits"`
	Workspace          workspaceBlock            `json:"workspace"`
	Capabilities       map[string]workspaceBlock `json:"capabilities"`
}

// ProtocolVersion is the OpenWOP protocol version the facade speaks.
const ProtocolVersion = "1.0"

func (h *Handler) discovery() discoveryDoc {
	ws := workspaceBlock{Supported: false}
	if h.opt.Enabled {
		ws = workspaceBlock{Supported: true, Versioned: true, MaxFileBytes: h.opt.MaxFileBytes, MaxFiles: h.opt.MaxFiles,
			MaxVersions: h.opt.MaxVersions}
	}
	return discoveryDoc{ProtocolVersion: ProtocolVersion, SupportedEnvelopes: []string{}, SchemaVersions: map[string]int{},
		Workspace: ws, Capabilities: map[string]workspaceBlock{"workspace": ws}}
}
