package rest

import (
	"context"
	"net/http"

	"github.com/cairnstore/cairn/workbench"
)

// fork serves POST /v1/agents/{agent}/workbenches/{id}/fork (workbench.Attempts.Fork): a
// JSON body {fork, at?} (workbench.ForkInput; at: live, the default, snapshot:<id or
// name> or commit:<identity>). It answers 200 with the fork, its parent and its base;
// under Idempotency-Key a retry of a fork that landed answers that fork (replayed true).
func (h *Handler) fork(w http.ResponseWriter, r *http.Request, agent, id string) {
	attempt(h, w, r, "fork", agent, id, func(in *workbench.ForkInput) *string { return &in.ID },
		requested[workbench.ForkRequest, workbench.ForkInput](agent, h.svc.Attempts.Fork))
}

// merge serves POST /v1/agents/{agent}/workbenches/{fork}/merge (workbench.Attempts.Merge):
// a JSON body {dry_run?, token?, propose_conflicts?} (workbench.MergeInput). A preview
// answers the changes, the conflicts and a token; an apply (the token) answers them
// applied, idempotent under Idempotency-Key. A parent that changed since the preview is
// 409 Conflict with details.paths.
func (h *Handler) merge(w http.ResponseWriter, r *http.Request, agent, id string) {
	attempt(h, w, r, "merge", agent, id, func(in *workbench.MergeInput) *string { return &in.ID },
		requested[workbench.MergeRequest, workbench.MergeInput](agent, h.svc.Attempts.Merge))
}

// discard serves POST /v1/agents/{agent}/workbenches/{fork}/discard
// (workbench.Attempts.Discard): deletes the fork and retires the snapshot it pinned.
// Discard takes no arguments: a body with any member (a "dry_run" a caller thought would
// preview) is refused, not ignored while the fork is deleted.
func (h *Handler) discard(w http.ResponseWriter, r *http.Request, agent, id string) {
	attempt(h, w, r, "discard", agent, id, nil,
		func(ctx context.Context, _ struct{}, key string) (workbench.Result, error) {
			return h.svc.Attempts.Discard(ctx, agent, id, key)
		})
}
