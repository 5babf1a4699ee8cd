package rest

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/cairnstore/cairn/workbench"
)

// diff serves GET /v1/agents/{agent}/workbenches/{id}/diff?path=&from=&to=&context=&cursor=&limit=
// (workbench.Review.Diff): from and to in workbench.ParseDiffSide's syntax (live,
// generation:<N>, snapshot:<id or name>, commit:<commit_identity>; to defaults to live).
// With path, the file's text diff; without, one page of the paths that differ.
func (h *Handler) diff(w http.ResponseWriter, r *http.Request, agent, id string) {
	method := http.MethodGet
	if r.Method == http.MethodHead {
		method = http.MethodHead // the same answer; net/http drops the body
	}
	h.tool(w, r, method, http.StatusOK, func(ctx context.Context) (workbench.Result, error) {
		q, err := queryParams(r, "path", "from", "to", "context", "cursor", "limit")
		if err != nil {
			return nil, err
		}
		req, err := diffRequest(q, agent, id)
		if err != nil {
			return nil, err
		}
		return h.svc.Review.Diff(ctx, req)
	})
}

// diffRequest decodes the diff query.
func diffRequest(q url.Values, agent, id string) (workbench.DiffRequest, error) {
	req := workbench.DiffRequest{Agent: agent, Workbench: id, Path: q.Get("path"), Cursor: q.Get("cursor")}
	if !q.Has("from") {
		return req, invalidArg("from", "is required (live, generation:<N>, snapshot:<id or name> or commit:<commit_identity>)")
	}
	var perr *workbench.Error
	if req.From, perr = workbench.ParseDiffSide("from", q.Get("from")); perr != nil {
		return req, perr
	}
	if q.Has("to") {
		if req.To, perr = workbench.ParseDiffSide("to", q.Get("to")); perr != nil {
			return req, perr
		}
	}
	for _, p := range []struct {
		name     string
		min, max int
		set      func(int)
	}{
		{"context", 0, workbench.MaxDiffContext, func(n int) { req.Context = &n }},
		{"limit", 1, workbench.MaxDiffLimit, func(n int) { req.Limit = n }},
	} {
		if !q.Has(p.name) {
			continue
		}
		n, err := strconv.Atoi(q.Get(p.name))
		if err != nil || n < p.min || n > p.max {
			return req, invalidArg(p.name, "must be an integer between %d and %d", p.min, p.max)
		}
		p.set(n)
	}
	return req, nil
}
