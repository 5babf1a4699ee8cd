package server

import (
	"log/slog"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/ops"
)

// openwopOptions configures the OpenWOP host.workspace facade from the node's settings.
// The facade sits in front of REST and MCP, behind authentication (which answers its 401s
// with the facade's envelope) and, on a cluster, behind the router: its routes name no
// agent root, so the router asks the facade (Handler.Root: the principal's tenant) where
// a request goes, and the peer port serves the facade for the requests it forwards.
func openwopOptions(cfg ops.Config, log *slog.Logger) openwop.Options {
	o := cfg.OpenWOP
	return openwop.Options{Enabled: o.Enabled, MaxFileBytes: o.MaxFileBytes, MaxFiles: o.MaxFiles, MaxVersions: o.MaxVersions,
		RunTTLDays: o.RunTTLDays(), Tenant: o.Tenant, Workspace: o.Workspace, TestSeams: o.TestSeams, Logger: log}
}
