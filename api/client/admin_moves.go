package client

import (
	"context"
	"net/url"
	"time"
)

// AdminRootMovesPath starts a move of an agent root to another shard (POST) and lists the
// moves (GET, ?id= for one); an embedded node answers 409 InvalidState.
const AdminRootMovesPath = "/v1/admin/cluster/root-moves"

// RootMove is one move of an agent root between shards, as the server reports it.
type RootMove struct {
	ID     string `json:"id"`
	Root   string `json:"root"`
	Source int    `json:"source"`
	Target int    `json:"target"`
	// Step is the last step done: requested, importing, fenced, copied, finished,
	// switched, confirmed, done; or rolling_back, rolled_back (Reason says why).
	Step    string     `json:"step"`
	Started time.Time  `json:"started"`
	Updated time.Time  `json:"updated"`
	EndedAt *time.Time `json:"ended_at,omitempty"`
	// Ended: done or rolled_back, nothing left to do.
	Ended   bool   `json:"ended"`
	Chunks  uint64 `json:"chunks"`
	Records int64  `json:"records"`
	Reason  string `json:"reason,omitempty"`
	// Lasting: the rollback's cause does not go away by trying again soon; the rebalancer
	// leaves the root alone for an hour.
	Lasting bool `json:"lasting,omitempty"`
}

// Done reports whether the move completed (the root is on its target).
func (m RootMove) Done() bool { return m.Step == "done" }

// StartRootMove asks the cluster to move agent root to shard to; the cluster's controller
// drives it (RootMoves follows it). It is not sent again after a failure whose outcome is
// unknown: list the moves first. Errors: InvalidArguments (details.field root or to: a
// bad name, no such shard, the root's own shard, a shard not open to roots yet); NotFound
// (the root was never written); Conflict (details.reason move_in_progress); InvalidState
// (ErrNotCluster-wrapped on an embedded node; upgrade_in_progress while a node runs an
// older release); RoutingUnavailable (retryable) when etcd does not answer.
func (a *Admin) StartRootMove(ctx context.Context, root string, to int) (*RootMove, error) {
	out, err := postJSON[struct {
		Move RootMove `json:"move"`
	}](ctx, a.tr, a.tr.base+AdminRootMovesPath, map[string]any{"root": root, "to": to}, notReplayable)
	if err != nil {
		return nil, notCluster(a, AdminRootMovesPath, err)
	}
	return &out.Move, nil
}

// RootMoves lists the cluster's root moves, oldest first; with id, that move alone
// (NotFound when there is none).
func (a *Admin) RootMoves(ctx context.Context, id string) ([]RootMove, error) {
	u := a.tr.base + AdminRootMovesPath
	if id != "" {
		u += "?id=" + url.QueryEscape(id)
	}
	out, err := getJSON[struct {
		Moves []RootMove `json:"moves"`
	}](ctx, a.tr, u)
	if err != nil {
		return nil, notCluster(a, AdminRootMovesPath, err)
	}
	return out.Moves, nil
}
