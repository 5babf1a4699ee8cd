package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/shard/host"
	"github.com/cairnstore/cairn/workbench"
)

// ShardRecoveryPath is the admin-listener path of the recovery of a shard that lost a
// majority of its voters (cairn admin shard recover; docs/runbook.md): GET
// ?shard=N&node=ID answers what a recovery from that survivor would keep and may lose
// (host.RecoveryPlan) and changes nothing; POST {"shard":N,"node":ID} recovers it. Sent to
// the survivor's own admin listener: node must be this node. An embedded node answers
// 409 InvalidState, details.reason not_a_cluster (rest.NotAClusterError).
const ShardRecoveryPath = "/v1/admin/cluster/shard-recovery"

// serveShardRecovery serves ShardRecoveryPath.
func (n *Node) serveShardRecovery(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Shard *int   `json:"shard"`
		Node  string `json:"node"`
	}
	badShard := "" // the shard query parameter that is not a whole number
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		if q.Has("shard") {
			if s, err := strconv.Atoi(q.Get("shard")); err == nil {
				in.Shard = &s
			} else {
				badShard = q.Get("shard")
			}
		}
		in.Node = q.Get("node")
	case http.MethodPost:
		if err := decodeJSON(r, &in); err != nil {
			keyError(w, err)
			return
		}
	default:
		methodNotAllowed(w, "GET, POST")
		return
	}
	invalid := func(field, msg string, args ...any) {
		writeEnvelope(w, http.StatusBadRequest, &workbench.Error{Code: workbench.CodeInvalidArguments,
			Message: fmt.Sprintf(msg, args...), Details: map[string]any{"field": field}})
	}
	switch {
	case in.Shard == nil && badShard != "":
		invalid("shard", "shard must be a whole number, at least 0, got %q", badShard)
	case in.Shard == nil:
		invalid("shard", "shard is required: the number of the shard to recover")
	case *in.Shard < 0:
		invalid("shard", "shard must be a whole number, at least 0, got %d", *in.Shard)
	case in.Node == "":
		invalid("node", "node is required: the id of the surviving node (this node)")
	case n.host.Embedded():
		n.recoveryError(w, host.ErrNotCluster)
	default:
		n.recoverShard(w, r, *in.Shard, in.Node)
	}
}

// recoverShard answers a recovery request whose shard and node are well formed: the plan
// (GET) or the recovery (POST).
func (n *Node) recoverShard(w http.ResponseWriter, r *http.Request, shard int, node string) {
	if r.Method == http.MethodGet {
		plan, err := n.host.Recovery().Plan(r.Context(), shard, node)
		if err != nil {
			n.recoveryError(w, err)
			return
		}
		writeSuccess(w, http.StatusOK, map[string]any{"plan": plan})
		return
	}
	res, err := n.host.Recovery().Recover(r.Context(), shard, node)
	if err != nil {
		n.recoveryError(w, err)
		return
	}
	writeSuccess(w, http.StatusOK, map[string]any{"plan": res.RecoveryPlan, "recovered": res.Recovered})
}

// recoveryError maps a recovery's refusal to the error envelope. Messages are the
// refusals' public reasons (control.PublicReason), never the errors' text, which names
// packages; an unexpected error is logged and answered Internal without its text.
func (n *Node) recoveryError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, host.ErrNotCluster):
		writeEnvelope(w, http.StatusConflict, rest.NotAClusterError())
	case errors.Is(err, host.ErrNoSuchShard):
		writeEnvelope(w, http.StatusNotFound, &workbench.Error{Code: workbench.CodeNotFound,
			Message: control.PublicReason(err, "no such shard"), Details: map[string]any{"field": "shard"}})
	case errors.Is(err, host.ErrNotSurvivor):
		writeEnvelope(w, http.StatusBadRequest, &workbench.Error{Code: workbench.CodeInvalidArguments,
			Message: control.PublicReason(err, "node is not a surviving voter of the shard"), Details: map[string]any{"field": "node", "rule": "not_survivor"}})
	case errors.Is(err, host.ErrShardHasQuorum):
		writeEnvelope(w, http.StatusConflict, &workbench.Error{Code: workbench.CodeInvalidState,
			Message: control.PublicReason(err, "the shard has a leader or a majority of live voters"), Details: map[string]any{"reason": "has_quorum"}})
	default:
		n.writeControlError(w, err, "the recovery")
	}
}
