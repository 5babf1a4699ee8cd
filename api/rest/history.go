package rest

import (
	"context"
	"net/http"
	"strconv"

	"github.com/cairnstore/cairn/workbench"
)

// History routes (issue 16, deliverable 1; a root's retention is set on the admin
// listener, admin_roots.go):
//
//	GET /v1/agents/{a}/workbenches/{w}/history?path=P&limit=N&cursor=C
//	GET|HEAD …/files/{path}?generation=N   a retained version (file.go)

// history serves GET of …/history: one page of a file's retained versions,
// newest first (workbench.Review.History).
func (h *Handler) history(w http.ResponseWriter, r *http.Request, agent, id string) {
	h.tool(w, r, http.MethodGet, http.StatusOK, func(ctx context.Context) (workbench.Result, error) {
		q, err := queryParams(r, "path", "limit", "cursor")
		if err != nil {
			return nil, err
		}
		path := q.Get("path")
		if path == "" {
			return nil, invalidArg("path", "is required: the file whose history to list")
		}
		if err := workbench.ValidatePath("path", path); err != nil {
			return nil, err
		}
		limit, err := limitParam(q, workbench.MaxHistoryLimit)
		if err != nil {
			return nil, err
		}
		res, err := h.svc.Review.History(ctx, workbench.HistoryRequest{Agent: agent, Workbench: id, Path: path, Limit: limit, Cursor: q.Get("cursor")})
		if err != nil {
			return nil, err
		}
		return h.svc.Tools.HistoryResultJSON(agent, id, res), nil
	})
}

// generationQuery reads ?generation=N of a file read (0: absent). It does not combine
// with at_snapshot: a generation names one version whatever the snapshot.
func generationQuery(q map[string][]string) (uint64, error) {
	vs, ok := q["generation"]
	if !ok {
		return 0, nil
	}
	if _, snap := q["at_snapshot"]; snap {
		return 0, invalidArg("generation", "does not combine with at_snapshot")
	}
	if len(vs) != 1 {
		return 0, invalidArg("generation", "give one generation")
	}
	n, err := strconv.ParseUint(vs[0], 10, 64)
	if err != nil || n == 0 {
		return 0, invalidArg("generation", "must be a generation (an integer ≥ 1)")
	}
	return n, nil
}
