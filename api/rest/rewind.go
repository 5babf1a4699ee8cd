package rest

import (
	"context"
	"net/http"

	"github.com/cairnstore/cairn/workbench"
)

// attempt serves one route of the attempts (rewind, fork, merge, discard: workbench.Attempts)
// on workbench id: a POST mutation named op whose JSON body decodes into a fresh In; idOf
// points at In's id, filled from the URL path (nil: In has none, and the body may name
// nothing of the kind); the request's Idempotency-Key is handed to run as the request id.
// run turns the input into the Attempts call.
func attempt[In any](h *Handler, w http.ResponseWriter, r *http.Request, op, agent, id string, idOf func(*In) *string,
	run func(ctx context.Context, in In, key string) (workbench.Result, error)) {
	if r.Method == http.MethodPost {
		r = mutation(r, op, agent, id, "")
	}
	h.tool(w, r, http.MethodPost, http.StatusOK, func(ctx context.Context) (workbench.Result, error) {
		var in In
		if err := jsonBody(r, &in); err != nil {
			return nil, err
		}
		if idOf != nil {
			if err := idFromPath(idOf(&in), id); err != nil {
				return nil, err
			}
		}
		key, err := idempotencyKeyOf(r)
		if err != nil {
			return nil, err
		}
		return run(ctx, in, key)
	})
}

// rewind serves POST /v1/agents/{agent}/workbenches/{id}/rewind (workbench.Attempts.Rewind):
// a JSON body {target, paths?, prefix?, dry_run?, token?, file_diffs?}
// (workbench.RewindInput). A preview (dry_run true) answers the changes and a token; an
// apply (the token) answers them applied, idempotent under Idempotency-Key. A scope that
// changed since the preview is 409 Conflict with details.paths.
func (h *Handler) rewind(w http.ResponseWriter, r *http.Request, agent, id string) {
	attempt(h, w, r, "rewind", agent, id, func(in *workbench.RewindInput) *string { return &in.ID },
		func(ctx context.Context, in workbench.RewindInput, key string) (workbench.Result, error) {
			req, werr := in.Request(agent)
			if werr != nil {
				return nil, werr
			}
			req.RequestID = key
			return h.svc.Attempts.Rewind(ctx, req)
		})
}
