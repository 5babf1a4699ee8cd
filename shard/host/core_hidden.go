package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// ForHidden returns the core agent's root is served through for a caller that may not use
// it (workbench/access.go: such a root answers exactly as a root that does not exist). On
// a cluster node that is the core of a root never placed (unplacedCore: the empty state,
// read without its shard), after the placement lookup such a root takes (etcd, past the
// cache), whatever the root's real shard: a caller that may not use the root learns
// nothing of its shard from the answer, its pace or its failures. Without it, the root's
// own shard would be read: answered at once by a root that does not exist, after a leader
// round trip (or a wait ending in RoutingUnavailable on a node without a replica, or while
// the shard has no leader) by one that does. Its Propose proposes nothing: a command for
// a hidden root is decided on the empty state before it reaches a core (workbench,
// absentRoot). The embedded default serves every root from its one shard, placed or not,
// so its hidden root's core is the one For returns.
func (h *Host) ForHidden(agent string) (Core, error) {
	if h.cluster == nil {
		return h.For(agent)
	}
	ctx, cancel := context.WithTimeout(context.Background(), assignTimeout)
	defer cancel()
	_, err := h.placement.Refresh(ctx, agent)
	switch {
	case err == nil, errors.Is(err, control.ErrRootNotPlaced):
		return &hiddenCore{unplacedCore{h: h, agent: agent}}, nil
	case control.IsRetryable(err):
		return nil, fmt.Errorf("%w (placing root: %v)", shard.ErrNotLeader, err)
	}
	return nil, err
}

// hiddenCore reads as a root never placed (unplacedCore) and proposes nothing.
type hiddenCore struct{ unplacedCore }

// errHiddenPropose answers a proposal through a hidden root's core, which the workbench
// never makes (it decides such a command on the empty state).
var errHiddenPropose = errors.New("host: a command for a root its caller may not use reached its core")

func (*hiddenCore) Propose(context.Context, meta.Header, meta.Body) (meta.Result, error) {
	return meta.Result{}, errHiddenPropose
}
