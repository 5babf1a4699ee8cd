package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/workbench"
)

// adminShardsPath adds shards to a running cluster (cairn admin shards add).
const adminShardsPath = "/v1/admin/cluster/shards"

// ShardGrower adds shards to the node's cluster: api/server's Node implements it over
// shard/host (control.Plane.GrowShards). add is at least 1; expect, when not 0, is the
// count the caller saw. It returns the cluster record after the grow, with the errors of
// control.Plane.GrowShards.
type ShardGrower interface {
	GrowShards(ctx context.Context, add, expect int) (control.Cluster, error)
}

// adminShards serves POST /v1/admin/cluster/shards: the cluster record's shard count grows
// by add in one etcd transaction; the controller then builds the new shards' Raft groups
// and opens them to placement (shard/control/grow.go). 200 {"shards", "initial_shards",
// "added"}; 400 InvalidArguments (add; expect_shards absent or below 1: it is required, so
// that a resent request never adds twice); 409 Conflict (expect_shards is not the count,
// details.current_shards), 409 InvalidState (details.reason: not_a_cluster on the
// embedded node, upgrade_in_progress with details.node while a node runs an older
// release); 503 RoutingUnavailable when etcd cannot answer (the grow may have happened:
// read the count, then retry with expect_shards).
func (h *adminHandler) adminShards(w http.ResponseWriter, r *http.Request) {
	// add: how many shards to add; expect_shards, required, the count the caller saw
	// (another count refuses the request, so a resent one never adds twice).
	in := struct {
		Add          int  `json:"add"`
		ExpectShards *int `json:"expect_shards"`
	}{}
	if !h.adminBody(w, r, &in) {
		return
	}
	var refused error
	var c control.Cluster
	switch {
	case in.Add < 1:
		refused = invalidArg("add", "must be at least 1")
	case in.ExpectShards == nil:
		refused = invalidArg("expect_shards", "is required: the shard count read just before (GET /v1/admin/cluster), so that a resent request never adds twice")
	case *in.ExpectShards < 1:
		refused = invalidArg("expect_shards", "must be at least 1 (the shard count read just before)")
	case h.opts.Shards == nil:
		refused = NotAClusterError()
	default:
		var err error
		if c, err = h.opts.Shards.GrowShards(r.Context(), in.Add, *in.ExpectShards); err != nil {
			refused = h.growError(err, c)
		}
	}
	if refused != nil {
		h.writeError(w, r, refused, noPrecondition)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "shards": c.Shards, "initial_shards": c.Created(),
		"added": in.Add})
}

// growError maps GrowShards' errors to the contract's (c is the record it read, if any).
// Messages are the errors' public reasons (control.PublicReason), never their text, which
// names packages.
func (h *adminHandler) growError(err error, c control.Cluster) error {
	var ve *control.VersionError
	switch {
	case errors.Is(err, control.ErrInvalidArgument):
		return invalidArg("add", "%s", control.PublicReason(err, fmt.Sprintf("the cluster may have at most %d shards", control.MaxShards)))
	case errors.Is(err, control.ErrShardCountChanged):
		return &workbench.Error{Code: workbench.CodeConflict,
			Message: control.PublicReason(err, fmt.Sprintf("the cluster has %d shards, not the count expected: read the count again", c.Shards)),
			Details: map[string]any{"field": "expect_shards", "current_shards": c.Shards}}
	case errors.As(err, &ve):
		return &workbench.Error{Code: workbench.CodeInvalidState,
			Message: fmt.Sprintf("node %s runs cluster version %d; adding shards needs %d on every node (upgrade it first)", ve.Node, ve.Version, control.GrowVersion),
			Details: map[string]any{"reason": "upgrade_in_progress", "node": ve.Node, "cluster_version": ve.Version}}
	case control.IsRetryable(err), errors.Is(err, control.ErrConflict):
		return workbench.RoutingUnavailable("the control plane cannot grow the cluster right now; read the shard count and retry with expect_shards")
	}
	if h.log != nil {
		h.log.Error("add shards failed", "err", err)
	}
	return &workbench.Error{Code: workbench.CodeInternal, Message: "adding shards failed: internal error (the node's log has the cause)"}
}
