package server

import (
	"fmt"

	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/workbench/redact"
)

// openRedactor builds the node's secret redactor (WSR-1) from cfg: the secrets file's
// registered values and opted-in tenants, plus --redact-all-surfaces-tenants. Without a
// file it redacts secret-shaped tokens only. Its errors name the setting and the entry
// (tenant, secret id), never a secret value.
func openRedactor(cfg ops.Config) (*redact.Redactor, error) {
	var rc redact.Config
	if cfg.RedactSecretsFile != "" {
		var err error
		if rc, err = redact.LoadFile(cfg.RedactSecretsFile); err != nil {
			return nil, fmt.Errorf("--redact-secrets-file %s: %w", cfg.RedactSecretsFile, err)
		}
	}
	rc.AllSurfaces = append(rc.AllSurfaces, cfg.RedactAllSurfacesTenantList()...)
	r, err := redact.New(rc)
	if err != nil {
		return nil, fmt.Errorf("--redact-secrets-file %s: %w", cfg.RedactSecretsFile, err)
	}
	return r, nil
}

// Redactor returns the node's secret redactor: the OpenWOP facade redacts every write
// with it; the Workbench service redacts the writes of the tenants that opted in on
// every surface.
func (n *Node) Redactor() *redact.Redactor { return n.redactor }
