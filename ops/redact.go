package ops

import (
	"strings"

	"github.com/cairnstore/cairn/meta"
)

// validateRedact checks the secret redaction settings (the secrets file itself is read
// and checked when the server starts: workbench/redact).
func (c Config) validateRedact() []*ConfigError {
	var errs []*ConfigError
	if strings.ContainsRune(c.RedactSecretsFile, 0) {
		errs = append(errs, &ConfigError{Field: "RedactSecretsFile", Rule: "must not contain NUL", Value: c.RedactSecretsFile})
	}
	for _, t := range c.RedactAllSurfacesTenantList() {
		if err := meta.ValidateName("tenant", t); err != nil {
			errs = append(errs, &ConfigError{Field: "RedactAllSurfacesTenants", Rule: "must be comma-separated agent ids: " + err.Message, Value: t})
		}
	}
	return errs
}

// RedactAllSurfacesTenantList returns RedactAllSurfacesTenants split at commas, trimmed,
// empty ones dropped.
func (c Config) RedactAllSurfacesTenantList() []string {
	return splitList(c.RedactAllSurfacesTenants)
}

var redactSettings = []setting{
	stringSetting("RedactSecretsFile", "redact_secrets_file", "WSR-1 secrets file, JSON or YAML {tenants: {<agent>: [{id, value}]}, allSurfaces: [<agent>]}: registered values are redacted from writes (held in memory only)",
		func(c *Config) *string { return &c.RedactSecretsFile }),
	stringSetting("RedactAllSurfacesTenants", "redact_all_surfaces_tenants", "comma-separated agents whose writes through every surface (REST, MCP, CLI) are redacted, not only OpenWOP's",
		func(c *Config) *string { return &c.RedactAllSurfacesTenants }),
}
