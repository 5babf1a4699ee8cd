package workbench

import (
	"context"
	"hash"
	"io"
)

// BodyRedactor rewrites the body of a write before it is stored (WSR-1 secret redaction;
// workbench/redact's *Redactor implements it).
type BodyRedactor interface {
	// RedactBody returns the reader whose bytes a write of agent's stores instead of
	// body's: body itself when agent's writes are not redacted. It streams (holds a
	// bounded part of body) and returns body's errors.
	RedactBody(agent string, body io.Reader) io.Reader
}

// ingestBody is ingest for the body of a write or an append (every surface's: REST,
// MCP put_file, append and edit, the CLI through REST), redacted first when
// Config.Redactor says so; what is hashed, stored and answered (size, digest) is the
// redacted bytes. Manifests the Service writes itself go to ingest directly.
func (s *base) ingestBody(ctx context.Context, agent string, r io.Reader, sizeHint int64, resume hash.Hash) (*ingested, error) {
	if s.cfg.Redactor != nil {
		r = s.cfg.Redactor.RedactBody(agent, r)
	}
	return s.ingest(ctx, agent, r, sizeHint, resume)
}
