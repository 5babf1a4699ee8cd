package rest

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/cairnstore/cairn/shard/worker"
	"github.com/cairnstore/cairn/workbench"
)

// Collector runs garbage-collection sweeps over the shards this node leads: the node's
// leader workers (*worker.Set) implement it. Its errors map like the Workbench adapter's
// (workbench.AsError): a *meta.Error keeps its code, a replica that does not serve is
// RoutingUnavailable, a failing object store ObjectUnavailable.
type Collector interface {
	CollectGarbage(ctx context.Context, opts worker.GCOptions) (worker.GCReport, error)
}

// Admin returns the handler of the admin listener (adminHandler): the node serves it on a
// separate, loopback address, never on the tenant listener.
func (h *Handler) Admin() http.Handler { return h.admin }

// adminHandler serves the admin listener (a separate, loopback address: admin routes list
// every agent's names and digests and act on the whole node): POST /v1/admin/gc, POST
// /v1/admin/scrub and the backup routes (admin_backup.go), the settings and purge of a
// root (admin_roots.go), POST /v1/admin/cluster/shards (admin_shards.go),
// /v1/admin/cluster/root-moves (admin_moves.go), Options.AdminRoutes, and /healthz,
// /readyz and /metrics as on the tenant listener. Anything else is 404 NotFound. It is
// built once with the Handler (NewHandler) and changes nothing after that.
//
// It holds the Handler of the tenant listener (tenant), and uses it only for what the two
// listeners share rather than keep twice: one set of request metrics and access lines
// (begin), the answers of /healthz, /readyz and /metrics (route), and the error envelope
// with the node's log (writeError, notFound). Its own fields are what its routes use.
type adminHandler struct {
	// svc serves the settings and purge of a root (admin_roots.go).
	svc *workbench.Service
	// opts holds the parts the admin routes run on (GC, Scrub, Backups, Shards, Moves)
	// and AdminRoutes; nil parts disable their routes (adminRoutes).
	opts   Options
	log    *slog.Logger
	tenant *Handler
}

// ServeHTTP routes on the escaped path: the handler's own routes (adminRoutes), then
// Options.AdminRoutes, the probes, and on the embedded node the cluster routes' 409.
func (h *adminHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := h.tenant.begin(w, r)
	route := "admin-unknown"
	defer func() { rec.done(route) }()
	raw := r.URL.EscapedPath()
	for _, a := range adminRoutes {
		if raw == a.path && (a.enabled == nil || a.enabled(h.opts)) {
			route = adminRouteName(raw)
			a.serve(h, rec, r)
			return
		}
	}
	switch {
	case h.opts.AdminRoutes[raw] != nil:
		route = adminRouteName(raw)
		h.opts.AdminRoutes[raw].ServeHTTP(rec, r)
	case raw == "/healthz" || raw == "/readyz" || raw == "/metrics":
		route = h.tenant.route(rec, r)
	case h.opts.Shards == nil && (raw == clusterPath || strings.HasPrefix(raw, clusterPath+"/")):
		// The embedded node has no cluster routes: it says so, unlike a listener
		// that serves no admin route at all (a 404).
		route = adminRouteName(raw)
		h.writeError(rec, r, NotAClusterError(), noPrecondition)
	default:
		h.notFound(rec, r)
	}
}

// writeError answers with the contract's envelope, as the tenant listener does.
func (h *adminHandler) writeError(w http.ResponseWriter, r *http.Request, err error, pre precondition) {
	h.tenant.writeError(w, r, err, pre)
}

// notFound answers 404 NotFound naming the route, as the tenant listener does.
func (h *adminHandler) notFound(w http.ResponseWriter, r *http.Request) { h.tenant.notFound(w, r) }

// adminRoute is one of the handler's own admin routes: its path (whose metrics and
// access-log route is adminRouteName(path)), the method that serves it, and, for a route
// that needs an optional part of the node, whether the options have it (nil: always).
type adminRoute struct {
	path    string
	serve   func(*adminHandler, http.ResponseWriter, *http.Request)
	enabled func(Options) bool
}

// adminRoutes are the routes adminHandler serves itself, before Options.AdminRoutes.
var adminRoutes = []adminRoute{
	{path: "/v1/admin/gc", serve: (*adminHandler).adminGC},
	{path: adminScrubPath, serve: (*adminHandler).adminScrub, enabled: func(o Options) bool { return o.Scrub != nil }},
	{path: adminBackupPath, serve: (*adminHandler).adminBackup, enabled: hasBackups},
	{path: adminBackupReleasePath, serve: (*adminHandler).adminBackupRelease, enabled: hasBackups},
	{path: adminBackupHoldsPath, serve: (*adminHandler).adminBackupHolds, enabled: hasBackups},
	{path: adminQuotaPath, serve: (*adminHandler).adminQuota},                                                          // admin_roots.go
	{path: adminPurgePath, serve: (*adminHandler).adminPurge},                                                          // admin_roots.go
	{path: adminRetentionPath, serve: (*adminHandler).adminRetention},                                                  // admin_roots.go
	{path: adminShardsPath, serve: (*adminHandler).adminShards},                                                        // admin_shards.go
	{path: adminMovesPath, serve: (*adminHandler).adminMoves, enabled: func(o Options) bool { return o.Moves != nil }}, // admin_moves.go
}

func hasBackups(o Options) bool { return o.Backups != nil }

// clusterPath is the prefix of the cluster's admin routes (the status, leaving, shard
// recovery, shards): on the embedded node each answers NotAClusterError.
const clusterPath = "/v1/admin/cluster"

// NotAClusterError is the answer of a cluster admin route on the embedded node: 409
// InvalidState, details.reason not_a_cluster (docs/runbook.md). A client tells it from a
// 404, which says the listener serves no admin route (the client port, say).
func NotAClusterError() *workbench.Error {
	return &workbench.Error{Code: workbench.CodeInvalidState,
		Message: "this node is not a cluster node (cairn serve without --cluster): it has no cluster routes",
		Details: map[string]any{"reason": "not_a_cluster"}}
}

// adminRouteName is the metrics and access-log route of an Options.AdminRoutes path
// (a fixed set): "/v1/admin/cluster" is "admin-cluster".
func adminRouteName(path string) string {
	return strings.ReplaceAll(strings.Trim(strings.TrimPrefix(path, "/v1/"), "/"), "/", "-")
}

// gcRequest is the body of POST /v1/admin/gc.
type gcRequest struct {
	// DryRun reports what a sweep would delete and deletes nothing.
	DryRun bool `json:"dry_run"`
	// Agent limits the sweep to one agent root ("" = every root).
	Agent string `json:"agent"`
	// MaxBatch bounds the blobs collected per agent root (0 = the default).
	MaxBatch int `json:"max_batch"`
}

// adminGC serves POST /v1/admin/gc: one garbage-collection sweep with the node's grace
// period (docs/architecture.md#blob-storage-and-garbage-collection) of every shard this node leads. 200 with the report; 503
// RoutingUnavailable on a node that leads no shard, 503 ObjectUnavailable when the blob
// store failed (the sweep stopped, fail closed); 404 on a handler without Options.GC.
func (h *adminHandler) adminGC(w http.ResponseWriter, r *http.Request) {
	if h.opts.GC == nil {
		h.notFound(w, r)
		return
	}
	var in gcRequest
	if !h.adminBody(w, r, &in) {
		return
	}
	if in.MaxBatch < 0 {
		h.writeError(w, r, invalidArg("max_batch", "must not be negative"), noPrecondition)
		return
	}
	rep, err := h.opts.GC.CollectGarbage(r.Context(), worker.GCOptions{DryRun: in.DryRun, Agent: in.Agent, MaxBatch: in.MaxBatch})
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	WriteJSON(w, http.StatusOK, gcReportJSON(rep))
}

// gcReportJSON renders a sweep report: totals, and per agent root the candidate blobs
// (digest URI, stored bytes, orphan, taken over) and what was deleted.
func gcReportJSON(rep worker.GCReport) map[string]any {
	roots := make([]map[string]any, 0, len(rep.Roots))
	for _, rr := range rep.Roots {
		blobs := make([]map[string]any, 0, len(rr.Candidates))
		for _, b := range rr.Candidates {
			blobs = append(blobs, map[string]any{"digest": workbench.DigestURI(b.Digest), "stored_bytes": b.StoredBytes,
				"orphan": b.Orphan, "taken_over": b.TakenOver})
		}
		roots = append(roots, map[string]any{"agent": rr.Agent, "candidates": blobs, "intents": rr.Intents,
			"deleted": rr.Deleted, "deleted_bytes": rr.DeletedBytes, "orphans_deleted": rr.Orphans, "more": rr.More})
	}
	return map[string]any{"status": "success", "dry_run": rep.DryRun, "roots": roots,
		"candidates": rep.Candidates, "candidate_bytes": rep.CandidateBytes, "intents": rep.Intents,
		"deleted": rep.Deleted, "deleted_bytes": rep.DeletedBytes, "orphans_deleted": rep.Orphans, "more": rep.More}
}
