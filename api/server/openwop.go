package server

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/cairnstore/cairn/api/openwop"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/redact"
)

// openwopOptions configures the OpenWOP host.workspace facade from the node's settings.
// The facade sits in front of REST and MCP, behind authentication (which answers its 401s
// with the facade's envelope) and, on a cluster, behind the router: its routes name no
// agent root, so the router asks the facade (Handler.Root: the principal's tenant) where
// a request goes, and the peer port serves the facade for the requests it forwards.
//
// Every facade PUT is redacted (WSR-1) by red: secret-shaped tokens always, and the
// tenant's registered secret values when the secrets file names them (a nil *Redactor
// redacts tokens only).
//
// The shipped packs of --openwop-packs-file are read once, at start: a file that cannot be
// read or holds an invalid pack fails the start.
func openwopOptions(cfg ops.Config, red *redact.Redactor, log *slog.Logger) (openwop.Options, error) {
	o := cfg.OpenWOP
	var shipped []openwop.ShippedPack
	if o.PacksFile != "" {
		f, err := os.Open(o.PacksFile)
		if err != nil {
			return openwop.Options{}, fmt.Errorf("--openwop-packs-file: %w", err)
		}
		defer f.Close()
		if shipped, err = openwop.LoadShippedPacks(f); err != nil {
			return openwop.Options{}, fmt.Errorf("--openwop-packs-file %s: %w", o.PacksFile, err)
		}
	}
	return openwop.Options{Enabled: o.Enabled, MaxFileBytes: o.MaxFileBytes, MaxFiles: o.MaxFiles, MaxVersions: o.MaxVersions,
		RunTTLDays: o.RunTTLDays(), Tenant: o.Tenant, Workspace: o.Workspace, TestSeams: o.TestSeams, Readback: o.Readback,
		ShippedPacks: shipped, Redactor: red, Logger: log}, nil
}
