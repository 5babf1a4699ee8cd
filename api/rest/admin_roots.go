package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/workbench"
)

// Admin routes of one agent root's settings (issues 16 and 17), served on the admin
// listener: its quotas, its history retention, and the purge of its workbenches.
//
//	GET  /v1/admin/quota?agent=A
//	PUT  /v1/admin/quota {agent, max_bytes, max_files, max_workbenches, max_snapshots}
//	GET  /v1/admin/retention?agent=A
//	PUT  /v1/admin/retention {agent, versions, age, max_versions, reset}
//	POST /v1/admin/purge {agent}
//
// PerRootAdminRoute reports whether the admin route at path acts on one agent root that
// the request names and that the route itself checks the caller reaches (quotas,
// retention, purge, root moves): an admin key bound to some roots may use it for those.
// Every other admin route acts on the whole node.
func PerRootAdminRoute(path string) bool {
	switch path {
	case adminQuotaPath, adminRetentionPath, adminPurgePath, adminMovesPath:
		return true
	}
	return false
}

// AdminRootRequest returns the agent root r acts on when r is a request of one root's
// settings or purge (GET ?agent=A; PUT and POST with {"agent": A}): what only a node with
// a replica of the root's shard can answer, so a cluster node without one forwards it
// (api/server). It reads a PUT's or POST's body, at most AdminRootBodyBytes (the caller
// bounds how long the read may take), and leaves r.Body reading every byte of it from the
// start. False for every other request, and for one whose root it cannot tell (a larger
// body, or one that does not read: wherever it is served, the route answers the error).
func AdminRootRequest(r *http.Request) (string, bool) {
	switch r.URL.EscapedPath() {
	case adminQuotaPath, adminRetentionPath, adminPurgePath:
	default:
		return "", false
	}
	switch r.Method {
	case http.MethodGet:
		agent := r.URL.Query().Get("agent")
		return agent, agent != ""
	case http.MethodPut, http.MethodPost:
	default:
		return "", false
	}
	if r.Body == nil {
		return "", false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, AdminRootBodyBytes+1))
	r.Body = replayedBody{Reader: io.MultiReader(bytes.NewReader(head), r.Body), Closer: r.Body}
	var in struct {
		Agent string `json:"agent"`
	}
	if err != nil || len(head) > AdminRootBodyBytes || json.Unmarshal(head, &in) != nil || in.Agent == "" {
		return "", false
	}
	return in.Agent, true
}

// AdminRootBodyBytes bounds what AdminRootRequest reads of a body: the bodies of those
// routes name a root and a few numbers.
const AdminRootBodyBytes = 64 << 10

// replayedBody is a request body read in part already: the bytes read, then the rest.
type replayedBody struct {
	io.Reader
	io.Closer
}

const (
	adminQuotaPath     = "/v1/admin/quota"
	adminRetentionPath = "/v1/admin/retention"
	adminPurgePath     = "/v1/admin/purge"
)

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
func (h *adminHandler) adminQuota(w http.ResponseWriter, r *http.Request) {
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
func adminRootSetting[In any](h *adminHandler, w http.ResponseWriter, r *http.Request,
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
func (h *adminHandler) adminPurge(w http.ResponseWriter, r *http.Request) {
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
func (h *adminHandler) adminRetention(w http.ResponseWriter, r *http.Request) {
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
func (h *adminHandler) putRetention(ctx context.Context, in retentionRequest) (workbench.RootRetention, error) {
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
