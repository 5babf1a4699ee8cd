package host

import (
	"context"
	"time"

	"github.com/cairnstore/cairn/meta"
)

// Routing a root that moves (docs/architecture.md, "Moving a root"). A command of a
// fenced root is refused with RootMoving, one that reaches the source after the release
// with NotOwner; both changed nothing. The host then reads the root's placement again
// (so that every later call of this node goes to the new shard) and:
//
//   - while the placement still names the shard the command went to, waits for the move
//     to end there and proposes the command again: a move rolled back lifts the fence,
//     and the command, built against a view of that same shard, applies as it would have;
//   - once the placement names another shard, answers the refusal: the command was built
//     against a view of the source (its upload fence and preconditions are source
//     versions, which the target cannot compare with its own), so it is never sent to the
//     target as it is. The caller starts over (the surfaces answer a retryable
//     RoutingUnavailable), and its retry, with the same idempotency key, applies once on
//     the target.
//
// The wait ends at the call's deadline, at most movingWait; then the refusal is answered.

// movingWait bounds how long a command refused because its root moves waits for the move.
const movingWait = 5 * time.Second

// movingPoll is how often such a command looks again.
const movingPoll = 50 * time.Millisecond

// moved reports whether res is a refusal because the root moves or moved away.
func moved(res meta.Result) bool {
	return res.Err != nil && (res.Err.Code == meta.CodeRootMoving || res.Err.Code == meta.CodeNotOwner)
}

// proposeMoving proposes b for c's root and handles the refusals of a move (above).
func (c *rootCore) proposeMoving(ctx context.Context, hd meta.Header, b meta.Body) (meta.Result, error) {
	res, err := c.h.leaders.propose(ctx, c.id, hd, b)
	if err != nil || !moved(res) || c.h.cluster == nil {
		return res, err
	}
	wctx, cancel := context.WithTimeout(ctx, movingWait)
	defer cancel()
	for {
		if id, rerr := c.h.placement.Refresh(wctx, c.agent); rerr == nil && id != c.id {
			c.h.assigned.Delete(c.agent)
			return res, nil // the refusal: never re-routed as it is
		}
		if res.Err.Code == meta.CodeNotOwner {
			return res, nil // the placement did not name another shard yet: the caller retries
		}
		select {
		case <-wctx.Done():
			return res, nil
		case <-time.After(movingPoll):
		}
		if !c.stillMoving(wctx) {
			next, err := c.h.leaders.propose(ctx, c.id, hd, b)
			if err != nil || !moved(next) {
				return next, err
			}
			res = next
		}
	}
}

// stillMoving reports whether the root's shard (as this node's replica has applied it)
// still holds a move of the root; without a local replica it says false, and the caller
// proposes again to find out.
func (c *rootCore) stillMoving(ctx context.Context) bool {
	r := c.h.Replica(c.id)
	if r == nil {
		return false
	}
	m, ok := r.AppliedView().Moves().Of(c.agent)
	return ok && m.State != meta.MoveConfirmed
}

// movedAway reports whether v, a view of c's shard, shows c's root released to another
// shard; it then reads the placement again and returns the root's shard now.
func (c *rootCore) movedAway(ctx context.Context, v *meta.View) (int, bool) {
	if c.h.cluster == nil || v.Shard().HoldsRoot(c.agent) {
		return 0, false
	}
	m, ok := v.Moves().Of(c.agent)
	if !ok || (m.State != meta.MoveReleasing && m.State != meta.MoveReleased) {
		return 0, false
	}
	id, err := c.h.placement.Refresh(ctx, c.agent)
	if err != nil || id == c.id {
		return 0, false
	}
	return id, true
}
