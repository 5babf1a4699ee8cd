package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// adminMovesPath starts a root's move to another shard (POST) and lists the moves (GET):
// cairn admin root move, cairn admin root moves (docs/architecture.md, "Moving a root").
const adminMovesPath = "/v1/admin/cluster/root-moves"

// RootMover moves agent roots between the shards of the node's cluster: api/server passes
// its shard host's mover (shard/host.Mover: control.Plane.StartMove, Moves), with their
// errors.
type RootMover interface {
	StartMove(ctx context.Context, root string, target int) (control.RootMove, error)
	Moves(ctx context.Context) ([]control.RootMove, error)
}

// moveJSON is a move as the route answers it.
func moveJSON(m control.RootMove) map[string]any {
	out := map[string]any{"id": m.ID, "root": m.Root, "source": m.Source, "target": m.Target, "step": string(m.Step),
		"started": m.Started.Format(time.RFC3339Nano), "updated": m.Updated.Format(time.RFC3339Nano),
		"chunks": m.Chunks, "records": m.Records, "ended": m.Step.Ended()}
	if m.Ended != nil {
		out["ended_at"] = m.Ended.Format(time.RFC3339Nano)
	}
	if m.Reason != "" {
		out["reason"] = m.Reason
	}
	if m.Lasting {
		out["lasting"] = true
	}
	return out
}

// adminMoves serves /v1/admin/cluster/root-moves.
//
// POST {"root","to"}: 202 {"status":"success","move":{…}}, the move recorded at its first
// step; the elected controller drives it (GET follows it). 400 InvalidArguments (root: a
// bad name; to: not a shard of the cluster, the root's own shard, or a shard still closed
// to roots); 404 NotFound (the root was never written, or the key may not use it: the same
// answer, mayMove); 403 PermissionDenied (the key reaches only part of the root); 409 Conflict (another move of the
// root is unfinished, details.reason move_in_progress); 409 InvalidState (details.reason
// not_a_cluster on the embedded node; upgrade_in_progress with details.node while a node
// runs a cluster version below 5); 503 RoutingUnavailable when etcd cannot answer (the
// move may have been recorded: list the moves before retrying).
//
// GET [?id=]: 200 {"moves":[…]}, oldest first, of the roots the key may use (with id: that
// move alone; 404 NotFound when there is none the key may see).
func (h *adminHandler) adminMoves(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodPost) {
		return
	}
	if r.Method == http.MethodGet {
		h.adminMovesList(w, r)
		return
	}
	in := struct {
		Root string `json:"root"`
		To   *int   `json:"to"`
	}{}
	if !h.adminBody(w, r, &in) {
		return
	}
	var refused error
	var m control.RootMove
	switch {
	case in.Root == "":
		refused = invalidArg("root", "is required: the agent root to move")
	case meta.ValidateName("agent", in.Root) != nil:
		refused = invalidArg("root", "%s", meta.ValidateName("agent", in.Root).Message)
	case in.To == nil:
		refused = invalidArg("to", "is required: the shard to move the root to")
	case *in.To < 0:
		refused = invalidArg("to", "must be a shard number, 0 or more")
	case mayMove(r.Context(), in.Root) != nil:
		refused = mayMove(r.Context(), in.Root)
		if errors.Is(refused, control.ErrRootNotPlaced) {
			refused = h.moveError(refused)
		}
	default:
		var err error
		if m, err = h.opts.Moves.StartMove(r.Context(), in.Root, *in.To); err != nil {
			refused = h.moveError(err)
		}
	}
	if refused != nil {
		h.writeError(w, r, refused, noPrecondition)
		return
	}
	WriteJSON(w, http.StatusAccepted, map[string]any{"status": "success", "move": moveJSON(m)})
}

func (h *adminHandler) adminMovesList(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r)
	if err != nil {
		h.writeError(w, r, err, noPrecondition)
		return
	}
	for k := range q {
		if k != "id" && k != "root" {
			h.writeError(w, r, invalidArg(k, "is not a parameter of this request (id, root)"), noPrecondition)
			return
		}
	}
	id, root := q.Get("id"), q.Get("root")
	for _, k := range []string{"id", "root"} {
		if v, ok := q[k]; ok && v[0] == "" {
			h.writeError(w, r, invalidArg(k, "must not be empty"), noPrecondition)
			return
		}
	}
	moves, err := h.opts.Moves.Moves(r.Context())
	if err != nil {
		h.writeError(w, r, h.moveError(err), noPrecondition)
		return
	}
	out := []map[string]any{}
	for _, m := range moves {
		if (id == "" || m.ID == id) && (root == "" || m.Root == root) && seesMoves(r.Context(), m.Root) {
			out = append(out, moveJSON(m))
		}
	}
	if id != "" && len(out) == 0 {
		h.writeError(w, r, &workbench.Error{Code: workbench.CodeNotFound, Message: fmt.Sprintf("no root move has id %q", id),
			Details: map[string]any{"field": "id"}}, noPrecondition)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "moves": out})
}

// mayMove answers whether the request's principal may move root: nil for a key that
// reaches the whole root (an admin key of every root, or one naming it). A root the key
// may not use answers as a root never written does, whatever it holds (workbench/auth: a
// root a principal may not use answers exactly like a root that does not exist); a key
// that reaches only part of it (one workbench, path prefixes) is PermissionDenied, as for
// every root-wide operation. A request without a principal (an in-process caller) may.
func mayMove(ctx context.Context, root string) error {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil
	}
	switch reach := p.ReachIn(root); {
	case !reach.Any():
		return control.NeverWritten(root)
	case !reach.RootWide():
		return &workbench.Error{Code: workbench.CodePermissionDenied,
			Message: fmt.Sprintf("principal %q may use only part of agent root %q: moving it needs a key for the whole root", p.ID, root),
			Details: map[string]any{"field": "root"}}
	}
	return nil
}

// seesMoves reports whether the request's principal is shown root's moves: when it may
// use the root at all (a listing leaves out the others, as if they did not exist).
func seesMoves(ctx context.Context, root string) bool {
	p, ok := auth.FromContext(ctx)
	return !ok || p.MayUse(root)
}

// moveError maps StartMove's and Moves' errors to the contract's; messages are the errors'
// public reasons (control.PublicReason), never their text.
func (h *adminHandler) moveError(err error) error {
	var ve *control.VersionError
	switch {
	case errors.Is(err, control.ErrInvalidArgument):
		field := "to"
		if r := (*control.Refusal)(nil); errors.As(err, &r) && len(r.Reason) > 5 && r.Reason[:5] == "root:" {
			field = "root"
		}
		return invalidArg(field, "%s", control.PublicReason(err, "is not a shard the root can move to"))
	case errors.Is(err, control.ErrRootNotPlaced):
		return &workbench.Error{Code: workbench.CodeNotFound, Message: control.PublicReason(err, "the agent root has never been written"),
			Details: map[string]any{"field": "root"}}
	case errors.Is(err, control.ErrMoveInProgress):
		return &workbench.Error{Code: workbench.CodeConflict, Message: control.PublicReason(err, "the agent root is being moved already"),
			Details: map[string]any{"field": "root", "reason": "move_in_progress"}}
	case errors.Is(err, control.ErrBackupInProgress):
		return &workbench.Error{Code: workbench.CodeConflict, Retryable: true,
			Message: control.PublicReason(err, "a backup of the cluster is being taken: start the move once it ended"),
			Details: map[string]any{"reason": "backup_in_progress"}}
	case errors.As(err, &ve):
		return &workbench.Error{Code: workbench.CodeInvalidState,
			Message: fmt.Sprintf("node %s runs cluster version %d; moving a root needs %d on every node (upgrade it first)", ve.Node, ve.Version, ve.Needed()),
			Details: map[string]any{"reason": "upgrade_in_progress", "node": ve.Node, "cluster_version": ve.Version}}
	case control.IsRetryable(err):
		return workbench.RoutingUnavailable("the control plane cannot answer right now; list the moves, then retry")
	}
	if h.log != nil {
		h.log.Error("root move request failed", "err", err)
	}
	return &workbench.Error{Code: workbench.CodeInternal, Message: "the root move request failed: internal error (the node's log has the cause)"}
}
