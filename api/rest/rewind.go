package rest

import (
	"context"
	"net/http"

	"github.com/cairnstore/cairn/workbench"
)

// rewind serves POST /v1/agents/{agent}/workbenches/{id}/rewind (workbench.Attempts.Rewind):
// a JSON body {target, paths?, prefix?, dry_run?, token?, file_diffs?}
// (workbench.RewindInput). A preview (dry_run true) answers the changes and a token; an
// apply (the token) answers them applied, idempotent under Idempotency-Key. A scope that
// changed since the preview is 409 Conflict with details.paths.
func (h *Handler) rewind(w http.ResponseWriter, r *http.Request, agent, id string) {
	if r.Method == http.MethodPost {
		r = mutation(r, "rewind", agent, id, "")
	}
	h.tool(w, r, http.MethodPost, http.StatusOK, func(ctx context.Context) (workbench.Result, error) {
		var in workbench.RewindInput
		if err := jsonBody(r, &in); err != nil {
			return nil, err
		}
		if err := idFromPath(&in.ID, id); err != nil {
			return nil, err
		}
		key, err := idempotencyKeyOf(r)
		if err != nil {
			return nil, err
		}
		req, werr := in.Request(agent)
		if werr != nil {
			return nil, werr
		}
		req.RequestID = key
		return h.svc.Attempts.Rewind(ctx, req)
	})
}
