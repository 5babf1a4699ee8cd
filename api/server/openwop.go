package server

import (
	"log/slog"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/ops"
)

// openwopOptions configures the OpenWOP host.workspace facade from the node's settings.
// It sits in front of the cluster router (its routes name no agent root; the facade
// serves them through the Workbench service, which reaches the root's shard from any
// node) and behind authentication, which answers its 401s with the facade's envelope.
func openwopOptions(cfg ops.Config, log *slog.Logger) openwop.Options {
	o := cfg.OpenWOP
	return openwop.Options{Enabled: o.Enabled, MaxFileBytes: o.MaxFileBytes, MaxFiles: o.MaxFiles, MaxVersions: o.MaxVersions,
		RunTTLDays: o.RunTTLDays(), Tenant: o.Tenant, Workspace: o.Workspace, TestSeams: o.TestSeams, Logger: log}
}
