package server

import (
	"net/http"

	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/workbench"
)

// writeControlError answers the error of a cluster admin route that none of the route's
// own cases took: 503 RoutingUnavailable (Retry-After 1) when the control plane cannot
// answer now, else 500 Internal without the error's text, which names packages; the
// node's log has it, with what failed ("the recovery", ...).
func (n *Node) writeControlError(w http.ResponseWriter, err error, what string) {
	if control.IsRetryable(err) {
		w.Header().Set("Retry-After", "1")
		writeEnvelope(w, http.StatusServiceUnavailable, workbench.RoutingUnavailable("the control plane cannot answer right now; retry"))
		return
	}
	n.log.Error(what+" failed", "err", err)
	writeEnvelope(w, http.StatusInternalServerError, &workbench.Error{Code: workbench.CodeInternal,
		Message: what + " failed: internal error (the node's log has the cause)"})
}
