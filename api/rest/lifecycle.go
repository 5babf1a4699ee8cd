package rest

import (
	"net/http"

	"github.com/cairnstore/cairn/workbench"
)

// Lifecycle routes (issue 17): list and delete workbenches and read a root's usage on the
// tenant listener (setting quotas and purging a root are the admin listener's,
// admin_roots.go).
//
//	GET    /v1/agents/{agent}/workbenches?cursor=C&limit=N
//	DELETE /v1/agents/{agent}/workbenches/{id}            (If-Match: "<revision>")
//	GET    /v1/agents/{agent}/usage

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
	im, err := conditionHeader(r, "If-Match", `one quoted workbench revision such as "42"`)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	if im != "" {
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
