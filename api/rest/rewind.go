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

// requested is attempt's run for an input that builds its Attempts request (In.Request,
// in agent's root, the Idempotency-Key its request id) and the call that serves it.
func requested[Req any, In interface {
	Request(agent, requestID string) (Req, *workbench.Error)
}](agent string, call func(context.Context, Req) (workbench.Result, error)) func(context.Context, In, string) (workbench.Result, error) {
	return func(ctx context.Context, in In, key string) (workbench.Result, error) {
		req, werr := in.Request(agent, key)
		if werr != nil {
			return nil, werr
		}
		return call(ctx, req)
	}
}

// rewind serves POST /v1/agents/{agent}/workbenches/{id}/rewind (workbench.Attempts.Rewind):
// a JSON body {target, paths?, prefix?, dry_run?, token?, file_diffs?}
// (workbench.RewindInput). A preview (dry_run true) answers the changes and a token; an
// apply (the token) answers them applied, idempotent under Idempotency-Key. A scope that
// changed since the preview is 409 Conflict with details.paths.
func (h *Handler) rewind(w http.ResponseWriter, r *http.Request, agent, id string) {
	attempt(h, w, r, "rewind", agent, id, func(in *workbench.RewindInput) *string { return &in.ID },
		requested[workbench.RewindRequest, workbench.RewindInput](agent, h.svc.Attempts.Rewind))
}
