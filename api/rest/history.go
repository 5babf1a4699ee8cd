package rest

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// History routes (issue 16, deliverable 1):
//
//	GET /v1/agents/{a}/workbenches/{w}/history?path=P&limit=N&cursor=C   (tenant listener)
//	GET|HEAD …/files/{path}?generation=N   a retained version (file.go)
//	GET /v1/admin/retention?agent=A        (admin listener)
//	PUT /v1/admin/retention {agent, versions, age, max_versions, reset}
const adminRetentionPath = "/v1/admin/retention"

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

// retentionRequest is the body of PUT /v1/admin/retention. An absent field keeps the
// root's current value (its own, or the node default); max_versions absent and below the
// new versions takes the default cap (at least versions). reset returns the root to the
// node default and takes no other field.
type retentionRequest struct {
	Agent       string  `json:"agent"`
	Versions    *int    `json:"versions"`
	Age         *string `json:"age"`
	MaxVersions *int    `json:"max_versions"`
	Reset       bool    `json:"reset"`
}

// adminRetention serves GET (?agent=A) and PUT of /v1/admin/retention: a root's history
// retention.
func (h *Handler) adminRetention(w http.ResponseWriter, r *http.Request) {
	adminRootSetting(h, w, r, func(ctx context.Context, agent string) (workbench.Result, error) {
		out, err := h.svc.Lifecycle.Retention(ctx, agent)
		return workbench.RetentionResult(out), err
	}, func(ctx context.Context, in retentionRequest) (workbench.Result, error) {
		out, err := h.putRetention(ctx, in)
		return workbench.RetentionResult(out), err
	})
}

// putRetention sets a root's retention from in, filling absent fields from the root's
// current policy.
func (h *Handler) putRetention(ctx context.Context, in retentionRequest) (workbench.RootRetention, error) {
	if in.Reset {
		if in.Versions != nil || in.Age != nil || in.MaxVersions != nil {
			return workbench.RootRetention{}, invalidArg("reset", "takes no versions, age or max_versions")
		}
		return h.svc.Lifecycle.SetRetention(ctx, in.Agent, meta.Retention{})
	}
	if in.Versions == nil && in.Age == nil && in.MaxVersions == nil {
		return workbench.RootRetention{}, invalidArg("versions", "give versions, age or max_versions (or reset)")
	}
	cur, err := h.svc.Lifecycle.Retention(ctx, in.Agent)
	if err != nil {
		return workbench.RootRetention{}, err
	}
	pol := cur.Retention
	if in.Versions != nil {
		pol.Versions = *in.Versions
		if in.MaxVersions == nil && pol.MaxVersions < pol.Versions {
			pol.MaxVersions = 0 // the default cap, at least versions
		}
	}
	if in.Age != nil {
		d, err := time.ParseDuration(*in.Age)
		if err != nil {
			return workbench.RootRetention{}, invalidArg("age", "must be a duration such as \"720h\"")
		}
		pol.Age = d
	}
	if in.MaxVersions != nil {
		pol.MaxVersions = *in.MaxVersions
	}
	if pol.Versions == 0 {
		return workbench.RootRetention{}, invalidArg("versions", "must be at least 1 (reset returns the root to the node default)")
	}
	return h.svc.Lifecycle.SetRetention(ctx, in.Agent, pol)
}
