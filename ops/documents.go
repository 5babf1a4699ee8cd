package ops

import (
	"net/url"
	"time"

	"github.com/cairnstore/cairn/api/documents"
	"github.com/cairnstore/cairn/meta"
)

// DocumentsConfig configures the working-documents surface (api/documents,
// docs/documents.md).
type DocumentsConfig struct {
	// Owner is the owner of requests to a node that requires no API key, "tenant/workspace"
	// (an agent root and a workbench name of it); a key bound to a tenant and workspace
	// owns its own. YAML documents_owner. Default "default/default".
	Owner string
	// RunnerURL, when set, registers the HTTP runner "http@1", which POSTs the design's
	// runner request to this http(s) URL. YAML documents_runner_url. Default none.
	RunnerURL string
	// RunnerTimeout bounds one call of the HTTP runner. YAML documents_runner_timeout.
	// Default documents.DefaultRunnerTimeout (30s).
	RunnerTimeout time.Duration
}

// DefaultDocumentsOwner is the default DocumentsConfig.Owner.
const DefaultDocumentsOwner = "default/default"

// DocumentsHTTPRunnerID is the id the HTTP runner of RunnerURL is registered under.
const DocumentsHTTPRunnerID = "http@1"

// DefaultDocumentsConfig returns the surface's defaults.
func DefaultDocumentsConfig() DocumentsConfig {
	return DocumentsConfig{Owner: DefaultDocumentsOwner, RunnerTimeout: documents.DefaultRunnerTimeout}
}

// OwnerParts returns Owner's tenant and workspace.
func (d DocumentsConfig) OwnerParts() (tenant, workspace string) {
	for i := 0; i < len(d.Owner); i++ {
		if d.Owner[i] == '/' {
			return d.Owner[:i], d.Owner[i+1:]
		}
	}
	return d.Owner, ""
}

func (c Config) validateDocuments() []*ConfigError {
	var errs configErrors
	bad := errs.add
	d := c.Documents
	tenant, workspace := d.OwnerParts()
	if meta.ValidateName("tenant", tenant) != nil || meta.ValidateName("workspace", workspace) != nil {
		bad("DocumentsOwner", "must be tenant/workspace, each an id like an agent id", d.Owner)
	}
	if d.RunnerURL != "" {
		if u, err := url.Parse(d.RunnerURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("DocumentsRunnerURL", "must be an http or https URL", shownURL(d.RunnerURL))
		}
	}
	if d.RunnerTimeout <= 0 {
		bad("DocumentsRunnerTimeout", "must be positive", d.RunnerTimeout.String())
	}
	return errs
}

var documentsSettings = []setting{
	stringSetting("DocumentsOwner", "documents_owner", "owner (tenant/workspace) of working documents on a node that requires no API key",
		func(c *Config) *string { return &c.Documents.Owner }),
	stringSetting("DocumentsRunnerURL", "documents_runner_url", "URL of the HTTP proposal runner of working documents (registered as http@1); empty: none",
		func(c *Config) *string { return &c.Documents.RunnerURL }),
	durationSetting("DocumentsRunnerTimeout", "documents_runner_timeout", "bound of one call of the HTTP proposal runner",
		func(c *Config) *time.Duration { return &c.Documents.RunnerTimeout }),
}
