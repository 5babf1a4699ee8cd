package rest

import (
	"context"
	"net/http"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Lifecycle routes (issue 17): list and delete workbenches and read a root's usage on the
// tenant listener; set quotas and purge a root on the admin listener.
//
//	GET    /v1/agents/{agent}/workbenches?cursor=C&limit=N
//	DELETE /v1/agents/{agent}/workbenches/{id}            (If-Match: "<revision>")
//	GET    /v1/agents/{agent}/usage
//	GET    /v1/admin/quota?agent=A                         (admin listener)
//	PUT    /v1/admin/quota {agent, max_bytes, max_files, max_workbenches, max_snapshots}
//	POST   /v1/admin/purge {agent}

// Admin lifecycle paths.
const (
	adminQuotaPath = "/v1/admin/quota"
	adminPurgePath = "/v1/admin/purge"
)

// lifecycle serves the tenant lifecycle routes below /v1/agents/{agent}/; segs are the
// escaped segments after the agent. ok is false for any other route.
func (h *Handler) lifecycle(w http.ResponseWriter, r *http.Request, agent string, segs []string) (string, bool) {
	switch {
	case len(segs) == 1 && segs[0] == "workbenches":
		h.listWorkbenches(w, r, agent)
		return "workbenches", true
	case len(segs) == 1 && segs[0] == "usage":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return "usage", true
		}
		if r.URL.RawQuery != "" {
			h.writeError(w, r, invalidArg("query", "usage takes no query parameters"), noPrecondition)
			return "usage", true
		}
		u, err := h.svc.Lifecycle.Usage(r.Context(), agent)
		if err != nil {
			h.writeError(w, r, err, noPrecondition)
			return "usage", true
		}
		WriteJSON(w, http.StatusOK, workbench.UsageResult(u))
		return "usage", true
	case len(segs) == 2 && segs[0] == "workbenches" && r.Method == http.MethodDelete:
		id, err := nameComponent("id", segs[1])
		if err != nil {
			h.writeError(w, r, err, noPrecondition)
			return "invalid", true
		}
		h.deleteWorkbench(w, r, agent, id)
		return "workbench", true
	}
	return "", false
}

func (h *Handler) listWorkbenches(w http.ResponseWriter, r *http.Request, agent string) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	q, err := queryParams(r, "cursor", "limit")
	limit := 0
	if err == nil {
		limit, err = limitParam(q, workbench.MaxWorkbenchListLimit)
	}
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	page, err := h.svc.Lifecycle.ListWorkbenches(r.Context(), agent, q.Get("cursor"), limit)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	WriteJSON(w, http.StatusOK, workbench.WorkbenchPageResult(agent, page))
}

// deleteWorkbench serves DELETE of a workbench: 200 {"deleted": true}; If-Match "<revision>"
// (the revision ListWorkbenches shows) makes it conditional (412 when it changed).
func (h *Handler) deleteWorkbench(w http.ResponseWriter, r *http.Request, agent, id string) {
	if r.URL.RawQuery != "" {
		h.writeError(w, r, invalidArg("query", "deleting a workbench takes no query parameters"), noPrecondition)
		return
	}
	pre, rev := noPrecondition, uint64(0)
	if im := r.Header.Get("If-Match"); im != "" {
		g, err := parseETag(im)
		if err != nil || g == 0 {
			h.writeError(w, r, invalidArg("If-Match", "must be one quoted workbench revision such as \"42\""), noPrecondition)
			return
		}
		pre, rev = ifMatch, g
	}
	key, err := idempotencyKey(r)
	if err == nil {
		err = h.svc.Lifecycle.DeleteWorkbench(r.Context(), agent, id, rev, key)
	}
	if err != nil {
		h.writeError(w, r, err, pre)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "workbench_id": id, "deleted": true})
}

// quotaRequest is the body of PUT /v1/admin/quota: every limit replaces the stored one;
// 0 or absent lifts it.
type quotaRequest struct {
	Agent          string `json:"agent"`
	MaxBytes       int64  `json:"max_bytes"`
	MaxFiles       int64  `json:"max_files"`
	MaxWorkbenches int64  `json:"max_workbenches"`
	MaxSnapshots   int64  `json:"max_snapshots"`
}

// adminQuota serves GET (?agent=A: usage and quotas) and PUT (set quotas) of
// /v1/admin/quota.
func (h *Handler) adminQuota(w http.ResponseWriter, r *http.Request) {
	adminRootSetting(h, w, r, func(ctx context.Context, agent string) (workbench.Result, error) {
		u, err := h.svc.Lifecycle.Usage(ctx, agent)
		return workbench.UsageResult(u), err
	}, func(ctx context.Context, in quotaRequest) (workbench.Result, error) {
		u, err := h.svc.Lifecycle.SetQuota(ctx, in.Agent, meta.Quota{MaxBytes: in.MaxBytes, MaxFiles: in.MaxFiles,
			MaxWorkbenches: in.MaxWorkbenches, MaxSnapshots: in.MaxSnapshots})
		return workbench.UsageResult(u), err
	})
}

// adminRootSetting serves an admin route that reads (GET ?agent=A) and sets (PUT, a JSON
// body In) one setting of an agent root: quotas, history retention.
func adminRootSetting[In any](h *Handler, w http.ResponseWriter, r *http.Request,
	get func(ctx context.Context, agent string) (workbench.Result, error), set func(ctx context.Context, in In) (workbench.Result, error)) {
	if !allow(w, r, http.MethodGet, http.MethodPut) {
		return
	}
	res, err := func() (workbench.Result, error) {
		if r.Method == http.MethodGet {
			q, err := queryParams(r, "agent")
			if err != nil {
				return nil, err
			}
			return get(r.Context(), q.Get("agent"))
		}
		var in In
		if err := jsonBody(r, &in); err != nil {
			return nil, err
		}
		return set(r.Context(), in)
	}()
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	WriteJSON(w, http.StatusOK, res)
}

// adminPurge serves POST /v1/admin/purge {agent}: every workbench of the root deleted (its
// blobs released to garbage collection); the root keeps its quotas.
func (h *Handler) adminPurge(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Agent string `json:"agent"`
	}
	if !h.adminBody(w, r, &in) {
		return
	}
	n, err := h.svc.Lifecycle.PurgeRoot(r.Context(), in.Agent)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "agent": in.Agent, "deleted_workbenches": n})
}
