package workbench

import (
	"context"
	"log/slog"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench/auth"
)

// Attribution (issue 14, deliverable 5): every command this package proposes carries the
// principal the request acts for (auth.FromContext) and the surface and tool it came
// through (WithSurface), so that the FSM records them as the producer of what it writes
// (meta.Producer). A context without a principal is the node's own work (its workers):
// its commands carry no principal, and nothing it writes can be blamed on one.

type surfaceKey struct{}

// WithSurface returns ctx naming the surface and tool a request came through, as
// "<surface>/<operation>": "rest/put", "rest/commit", "mcp/workbench_put_file". The
// surfaces set it once per request, before they call the Service.
func WithSurface(ctx context.Context, surface string) context.Context {
	return context.WithValue(ctx, surfaceKey{}, surface)
}

// SurfaceOf returns the surface ctx names ("" when none).
func SurfaceOf(ctx context.Context) string {
	s, _ := ctx.Value(surfaceKey{}).(string)
	return s
}

// PrincipalID returns the id of the principal ctx carries, "" when none (the node's own
// work).
func PrincipalID(ctx context.Context) string {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return ""
	}
	return p.ID
}

// producerOf is the producer of the writes ctx makes.
func producerOf(ctx context.Context) meta.Producer {
	return meta.Producer{Principal: PrincipalID(ctx), Surface: SurfaceOf(ctx)}
}

// Audit is one mutating request as its surface saw it, for the audit log: who (the
// principal comes from the context), where, what it became, how it ended. It holds no
// secret and no body.
type Audit struct {
	// Surface is the surface and tool ("rest/put", "mcp/workbench_edit").
	Surface string
	// Agent, Workbench and Path name the target (Path: the full path inside the
	// workbench, "" for workbench-wide requests).
	Agent, Workbench, Path string
	// Generation is the generation the request produced (0: none, or it failed).
	Generation uint64
	// IdempotencyKey is the request's idempotency key ("" when none).
	IdempotencyKey string
	// Outcome is "ok", or the error code the request was answered with.
	Outcome string
}

// Generation is the generation a tool result reports (generation; a restore's
// destination_generation), 0 when none.
func (r Result) Generation() uint64 {
	for _, k := range []string{"generation", "destination_generation"} {
		switch g := r[k].(type) {
		case uint64:
			return g
		case int64:
			if g > 0 {
				return uint64(g)
			}
		}
	}
	return 0
}

// AuditMessage is the message of every audit log line.
const AuditMessage = "audit"

// OutcomeOK is Audit.Outcome of a request that succeeded.
const OutcomeOK = "ok"

// Log writes a as one structured line at level Info: msg "audit" and the keys principal,
// agent, workbench, path, generation, idempotency_key, surface, outcome, then extra.
// Nothing is built when the logger drops Info lines (a node at --log-level warn): the
// attributes would only be thrown away.
func (a Audit) Log(ctx context.Context, log *slog.Logger, extra ...slog.Attr) {
	if log == nil {
		log = slog.Default()
	}
	if !log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := append([]slog.Attr{
		slog.String("principal", PrincipalID(ctx)),
		slog.String("agent", a.Agent),
		slog.String("workbench", a.Workbench),
		slog.String("path", a.Path),
		slog.Uint64("generation", a.Generation),
		slog.String("idempotency_key", a.IdempotencyKey),
		slog.String("surface", a.Surface),
		slog.String("outcome", a.Outcome),
	}, extra...)
	log.LogAttrs(ctx, slog.LevelInfo, AuditMessage, attrs...)
}
