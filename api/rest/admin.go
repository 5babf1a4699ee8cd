package rest

import (
	"context"
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

// Admin returns the handler of the admin listener (a separate, loopback address: admin
// routes list every agent's names and digests and act on the whole node): POST
// /v1/admin/gc, GET/PUT /v1/admin/quota, GET/PUT /v1/admin/retention and POST
// /v1/admin/purge (admin_roots.go), POST /v1/admin/cluster/shards (admin_shards.go),
// Options.AdminRoutes, and /healthz, /readyz and /metrics as on the tenant
// listener. Anything else is 404 NotFound. It shares the tenant handler's metrics.
func (h *Handler) Admin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, done := h.begin(w, r)
		route := "admin-unknown"
		defer func() { done(route) }()
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
			route = h.route(rec, r)
		case h.opts.Shards == nil && (raw == clusterPath || strings.HasPrefix(raw, clusterPath+"/")):
			// The embedded node has no cluster routes: it says so, unlike a listener
			// that serves no admin route at all (a 404).
			route = adminRouteName(raw)
			h.writeError(rec, r, NotAClusterError(), noPrecondition)
		default:
			h.notFound(rec, r)
		}
	})
}

// adminRoute is one of the handler's own admin routes: its path (whose metrics and
// access-log route is adminRouteName(path)), the method that serves it, and, for a route
// that needs an optional part of the node, whether the options have it (nil: always).
type adminRoute struct {
	path    string
	serve   func(*Handler, http.ResponseWriter, *http.Request)
	enabled func(Options) bool
}

// adminRoutes are the routes Admin serves itself, before Options.AdminRoutes.
var adminRoutes = []adminRoute{
	{path: "/v1/admin/gc", serve: (*Handler).adminGC},
	{path: adminScrubPath, serve: (*Handler).adminScrub, enabled: func(o Options) bool { return o.Scrub != nil }},
	{path: adminBackupPath, serve: (*Handler).adminBackup, enabled: hasBackups},
	{path: adminBackupReleasePath, serve: (*Handler).adminBackupRelease, enabled: hasBackups},
	{path: adminBackupHoldsPath, serve: (*Handler).adminBackupHolds, enabled: hasBackups},
	{path: adminQuotaPath, serve: (*Handler).adminQuota},                                                          // admin_roots.go
	{path: adminPurgePath, serve: (*Handler).adminPurge},                                                          // admin_roots.go
	{path: adminRetentionPath, serve: (*Handler).adminRetention},                                                  // admin_roots.go
	{path: adminShardsPath, serve: (*Handler).adminShards},                                                        // admin_shards.go
	{path: adminMovesPath, serve: (*Handler).adminMoves, enabled: func(o Options) bool { return o.Moves != nil }}, // admin_moves.go
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
func (h *Handler) adminGC(w http.ResponseWriter, r *http.Request) {
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
