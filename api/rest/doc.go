// Package rest is Cairn's REST surface: streaming file bodies with standard HTTP semantics
// (ETag = generation, If-Match / If-None-Match, Range, 304, 412), Idempotency-Key, the
// contract's error envelope, the OpenAPI document, and the operational endpoints.
//
// Idempotency-Key (idempotencyKeyOf) is a request id for every route that changes state:
// the file writes, workbench create and delete, the attempts (rewind, fork, merge,
// discard) and the Workbench tools that change state (keyedTool: commit, restore, the
// snapshot mint, renew and retire), whose retry under it answers the first answer from the
// FSM's dedupe record, the same JSON (docs/architecture.md, "The write path"). The
// queries (bodyTool: grep, search, aggregate, catalog, find) change nothing and refuse it
// (400 naming the header).
//
// Routes match on the escaped request path and validate each decoded component: "..",
// "//", "%2e%2e", "%2F" and a trailing "/" are rejected with InvalidArguments, never
// cleaned or redirected. Bodies stream in both directions with bounded memory. Error codes
// map to HTTP statuses in one table (statusOf).
//
// Who may do what is the Service's decision, made from the principal of the request
// context (workbench/auth): this package adds no rule of its own, so every route answers a root
// the principal may not use exactly as a root that does not exist, and a missing scope
// with 403 PermissionDenied only where the root is visible (api/server's authmatrix tests
// drive every route with each kind of API key through the assembled node).
//
// Every request body must keep a minimum average rate (newRateBody, api/deadline) and every response write
// has a deadline, so a slow or stalled client never holds a connection or a slot for
// ever. Admin routes (/v1/admin/...) are served only by Handler.Admin, for the node's
// separate admin listener; the tenant handler answers them 404. Stored bodies are served
// inert: Content-Security-Policy: sandbox, nosniff, attachment for active types.
//
// The change feed (events.go) is the one response that never ends on its own: a
// server-sent event stream kept alive by heartbeats shorter than the write deadline,
// flushed per event, and ended by EndStreams when the node shuts down.
//
// Attribution (attribution.go): a mutating handler names its operation once (mutation),
// which names the surface "rest/<op>" for the producer the Service records, and
// ServeHTTP writes its one audit line (workbench.Audit: principal, agent, workbench, path,
// generation, idempotency key, surface, outcome, method, status; never a body) after the
// answer. File and workbench reads answer the revision's producer in Cairn-Producer. Every
// request to a tenant route (/v1/agents/..., /mcp) is counted in
// cairn_principal_requests_total{principal,surface} (at most Options.MaxPrincipalLabels
// principal ids; later ones are "other", requests without a principal "none") and checked
// against its principal's request rate before routing (429 ResourceExhausted with
// Retry-After = details.retry_after_ms rounded up to seconds).
//
// Both listeners count every request, aborted ones included, in
// cairn_http_requests_total{route, method, code} and
// cairn_http_request_duration_seconds{route, method, code}, where route is the route's
// name ("file", "workbench", "mcp", "admin-gc", …; a fixed set), never the raw path. With
// Options.AccessLog each request also writes one "http request" line (access.go) that holds
// no path, query, body or header but X-Request-Id.
package rest
