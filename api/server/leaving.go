package server

import (
	"errors"
	"net/http"

	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/workbench"
)

// LeavingPath is the admin-listener path that marks a node leaving (POST {"node": id}:
// cairn admin node remove) or clears the mark (DELETE ?node=id: cairn admin node
// recommission). The node is named by its id or by a prefix only one known id starts
// with; the answer names the full id ({"node", "leaving", "registered", "shards",
// "was_leaving"}). An id the cluster does not know is 404 NotFound (details.field node)
// and writes nothing; a prefix of several ids is 400 InvalidArguments. A cluster node
// serves it; the embedded default answers 409 InvalidState, details.reason not_a_cluster
// (rest.NotAClusterError).
const LeavingPath = "/v1/admin/cluster/leaving"

// serveLeaving marks or clears a node's leaving mark (LeavingPath).
func (n *Node) serveLeaving(w http.ResponseWriter, r *http.Request) {
	var node string
	switch r.Method {
	case http.MethodPost:
		var in struct {
			Node string `json:"node"`
		}
		if err := decodeJSON(r, &in); err != nil {
			keyError(w, err)
			return
		}
		node = in.Node
	case http.MethodDelete:
		node = r.URL.Query().Get("node")
	default:
		methodNotAllowed(w, "POST, DELETE")
		return
	}
	leaving := r.Method == http.MethodPost
	m, err := n.host.SetLeaving(r.Context(), node, leaving)
	switch {
	case err == nil:
		shards := m.Shards
		if shards == nil {
			shards = []int{}
		}
		writeSuccess(w, http.StatusOK, map[string]any{"node": m.ID, "leaving": leaving, "registered": m.Registered,
			"shards": shards, "was_leaving": m.WasLeaving})
	case errors.Is(err, control.ErrNodeNotFound):
		writeEnvelope(w, http.StatusNotFound, &workbench.Error{Code: workbench.CodeNotFound,
			Message: control.PublicReason(err, "no such node") + " (GET " + ClusterStatusPath + ", cairn admin cluster status, lists the nodes)",
			Details: map[string]any{"field": "node", "node": node}})
	case errors.Is(err, control.ErrInvalidArgument):
		writeEnvelope(w, http.StatusBadRequest, &workbench.Error{Code: workbench.CodeInvalidArguments, Message: control.PublicReason(err, "node must be a node id"),
			Details: map[string]any{"field": "node"}})
	default:
		n.writeControlError(w, err, "changing the node's leaving mark")
	}
}
