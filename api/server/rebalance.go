package server

import (
	"net/http"

	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/workbench"
)

// RebalancePath is the admin-listener path of the cluster's rebalance switch (cairn admin
// rebalance): GET answers it, POST {"enabled": bool} sets it; both answer {"enabled",
// "since"} (since: when it was last set, null when it never was). A cluster node serves
// it; the embedded default answers 409 InvalidState, details.reason not_a_cluster
// (rest.NotAClusterError). Off until set: the elected controller moves roots from hot
// shards only while it is on (docs/runbook.md, "Rebalance").
const RebalancePath = "/v1/admin/cluster/rebalance"

// serveRebalance serves RebalancePath.
func (n *Node) serveRebalance(w http.ResponseWriter, r *http.Request) {
	var sw control.RebalanceSwitch
	var err error
	switch r.Method {
	case http.MethodGet:
		sw, err = n.host.Mover().RebalanceSwitch(r.Context())
	case http.MethodPost:
		var in struct {
			Enabled *bool `json:"enabled"`
		}
		if err := decodeJSON(r, &in); err != nil {
			keyError(w, err)
			return
		}
		if in.Enabled == nil {
			writeEnvelope(w, http.StatusBadRequest, &workbench.Error{Code: workbench.CodeInvalidArguments,
				Message: "enabled is required: true turns the rebalancer on, false off", Details: map[string]any{"field": "enabled"}})
			return
		}
		sw, err = n.host.Mover().SetRebalanceSwitch(r.Context(), *in.Enabled)
	default:
		methodNotAllowed(w, "GET, POST")
		return
	}
	switch {
	case err == nil:
		since := any(nil)
		if !sw.Since.IsZero() {
			since = sw.Since
		}
		writeSuccess(w, http.StatusOK, map[string]any{"enabled": sw.Enabled, "since": since})
	default:
		n.writeControlError(w, err, "the rebalance switch")
	}
}
