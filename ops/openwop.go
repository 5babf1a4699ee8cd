package ops

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// Defaults of the OpenWOP host.workspace facade (api/openwop; OpenWOP RFC 0059 §A: the
// reference host's limits).
const (
	DefaultOpenWOPMaxFileBytes = 1 << 20
	DefaultOpenWOPMaxFiles     = 256
	DefaultOpenWOPMaxVersions  = 20
	DefaultOpenWOPRunTTL       = 24 * time.Hour
	DefaultOpenWOPTenant       = "default"
	DefaultOpenWOPWorkspace    = "default"
	// MaxOpenWOPMaxFileBytes bounds MaxFileBytes: the facade holds a file's body in memory
	// (JSON strings), so the ceiling stays far below RAM.
	MaxOpenWOPMaxFileBytes = 64 << 20
)

// OpenWOPConfig configures the OpenWOP host.workspace facade (README "Pointing an OpenWOP
// host at Cairn").
type OpenWOPConfig struct {
	// Enabled serves the facade; false answers every workspace endpoint 501
	// capability_not_provided and advertises workspace.supported false. YAML openwop.
	// Default true.
	Enabled bool
	// MaxFileBytes is the largest file content, UTF-8 bytes (advertised maxFileBytes;
	// 1..MaxOpenWOPMaxFileBytes). YAML openwop_max_file_bytes. Default 1 MiB.
	MaxFileBytes int64
	// MaxFiles is the most live files of one workspace (advertised maxFiles; at least 1).
	// YAML openwop_max_files. Default 256.
	MaxFiles int
	// MaxVersions is the most versions of one path served by ?version=N (advertised
	// maxVersions; at least 1). YAML openwop_max_versions. Default 20.
	MaxVersions int
	// RunTTL is how long a run and its workspace snapshot live: a whole number of days
	// (snapshot leases count whole days), 1..meta.MaxSnapshotTTLDays. YAML openwop_run_ttl.
	// Default 24h.
	RunTTL time.Duration
	// Tenant and Workspace are the owner of requests to a node that requires no API key
	// (the embedded default on loopback): an agent root and a workbench in it. YAML
	// openwop_tenant, openwop_workspace. Default "default", "default".
	Tenant    string
	Workspace string
	// TestSeams serves the conformance seams (POST /v1/host/sample/workspace/op, and the
	// /conformance/seams/... aliases of OpenWOP major 2); refused unless every listener is
	// on loopback. YAML openwop_test_seams. Default false.
	TestSeams bool
	// Readback serves getInstalledPack (GET /installed-packs/{packName}) and advertises
	// agents.proposals.readback; false answers that route 404 as an unadvertised
	// operation. YAML openwop_readback. Default true.
	Readback bool
	// PacksFile names a JSON file of packs the host installs for every tenant, read-only
	// to proposals: {"packs": [{"kind": "agent-pack"|"workflow-chain-pack", "manifest":
	// {...}}]}. YAML openwop_packs_file. Default none.
	PacksFile string
}

// DefaultOpenWOPConfig returns the facade's defaults.
func DefaultOpenWOPConfig() OpenWOPConfig {
	return OpenWOPConfig{Enabled: true, MaxFileBytes: DefaultOpenWOPMaxFileBytes, MaxFiles: DefaultOpenWOPMaxFiles,
		MaxVersions: DefaultOpenWOPMaxVersions, RunTTL: DefaultOpenWOPRunTTL, Tenant: DefaultOpenWOPTenant,
		Workspace: DefaultOpenWOPWorkspace, Readback: true}
}

// RunTTLDays returns RunTTL in days (Validate makes it whole).
func (o OpenWOPConfig) RunTTLDays() int { return int(o.RunTTL / (24 * time.Hour)) }

// validateOpenWOP checks the facade's settings.
func (c Config) validateOpenWOP() []*ConfigError {
	var errs configErrors
	bad := errs.add
	o := c.OpenWOP
	if o.MaxFileBytes < 1 || o.MaxFileBytes > MaxOpenWOPMaxFileBytes {
		bad("OpenWOPMaxFileBytes", fmt.Sprintf("must be between 1 and %d bytes", MaxOpenWOPMaxFileBytes), strconv.FormatInt(o.MaxFileBytes, 10))
	}
	if o.MaxFiles < 1 {
		bad("OpenWOPMaxFiles", "must be at least 1", strconv.Itoa(o.MaxFiles))
	}
	if o.MaxVersions < 1 {
		bad("OpenWOPMaxVersions", "must be at least 1", strconv.Itoa(o.MaxVersions))
	}
	if day := 24 * time.Hour; o.RunTTL < day || o.RunTTL%day != 0 || o.RunTTLDays() > meta.MaxSnapshotTTLDays {
		bad("OpenWOPRunTTL", fmt.Sprintf("must be a whole number of days (24h, 48h, …) up to %d days: run snapshots are leased in days", meta.MaxSnapshotTTLDays),
			o.RunTTL.String())
	}
	for field, v := range map[string]string{"OpenWOPTenant": o.Tenant, "OpenWOPWorkspace": o.Workspace} {
		if err := meta.ValidateName(field, v); err != nil {
			bad(field, "must be an id like an agent id ("+err.Message+")", v)
		}
	}
	if o.TestSeams && (!loopbackAddr(c.Listen) || (c.AdminListen != "" && !loopbackAddr(c.AdminListen))) {
		bad("OpenWOPTestSeams", "must not be set unless --listen and --admin-listen are loopback addresses (the seams let a caller name any tenant)", "true")
	}
	return errs
}

var openwopSettings = []setting{
	boolSetting("OpenWOPEnabled", "openwop", "serve the OpenWOP host.workspace facade (/.well-known/openwop, /v1/host/workspace/files, /v1/runs); false: 501 capability_not_provided",
		func(c *Config) *bool { return &c.OpenWOP.Enabled }),
	int64Setting("OpenWOPMaxFileBytes", "openwop_max_file_bytes", "largest OpenWOP workspace file, UTF-8 bytes (advertised maxFileBytes)",
		func(c *Config) *int64 { return &c.OpenWOP.MaxFileBytes }),
	intSetting("OpenWOPMaxFiles", "openwop_max_files", "most live files of one OpenWOP workspace (advertised maxFiles)",
		func(c *Config) *int { return &c.OpenWOP.MaxFiles }),
	intSetting("OpenWOPMaxVersions", "openwop_max_versions", "most versions of an OpenWOP workspace file served by ?version=N (advertised maxVersions)",
		func(c *Config) *int { return &c.OpenWOP.MaxVersions }),
	durationSetting("OpenWOPRunTTL", "openwop_run_ttl", "how long an OpenWOP run and its workspace snapshot live (whole days)",
		func(c *Config) *time.Duration { return &c.OpenWOP.RunTTL }),
	stringSetting("OpenWOPTenant", "openwop_tenant", "OpenWOP tenant (agent root) of requests to a node that requires no API key",
		func(c *Config) *string { return &c.OpenWOP.Tenant }),
	stringSetting("OpenWOPWorkspace", "openwop_workspace", "OpenWOP workspace (workbench) of requests to a node that requires no API key",
		func(c *Config) *string { return &c.OpenWOP.Workspace }),
	boolSetting("OpenWOPReadback", "openwop_readback", "serve OpenWOP getInstalledPack (GET /installed-packs/{packName}); false: 404 as an unadvertised operation",
		func(c *Config) *bool { return &c.OpenWOP.Readback }),
	stringSetting("OpenWOPPacksFile", "openwop_packs_file", `JSON file of packs installed for every OpenWOP tenant, read-only to proposals ({"packs": [{"kind", "manifest"}]})`,
		func(c *Config) *string { return &c.OpenWOP.PacksFile }),
	boolSetting("OpenWOPTestSeams", "openwop_test_seams", "serve the OpenWOP conformance seams (/v1/host/sample/workspace/op, /conformance/seams/...); loopback listeners only",
		func(c *Config) *bool { return &c.OpenWOP.TestSeams }),
}
