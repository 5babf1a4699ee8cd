package control

import (
	"context"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Decommissioning. An admin marks a node as leaving (Decommission); from then on the
// controller gives it no new replica, adds a replacement for each replica it holds, and
// removes it from each shard once the shard has its Replication voters without it (Plan).
// The mark is a durable key (no lease): it survives the node's restarts, so a leaving node
// that comes back is not handed replicas again; Recommission clears it.

// Decommission marks node as leaving, with the time of the request. Idempotent. Errors
// wrap ErrInvalidArgument (a bad id) or ErrControlPlaneUnavailable.
func (p *Plane) Decommission(ctx context.Context, node string, now time.Time) error {
	if err := validNodeID(node); err != nil {
		return err
	}
	return p.withTimeout(ctx, "mark node leaving", func(ctx context.Context) error {
		_, err := p.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(p.k.leavingNode(node)), "=", 0)).
			Then(clientv3.OpPut(p.k.leavingNode(node), now.UTC().Format(time.RFC3339))).
			Commit()
		return err
	})
}

// Recommission clears node's leaving mark, so the controller may give it replicas again.
// Idempotent.
func (p *Plane) Recommission(ctx context.Context, node string) error {
	if err := validNodeID(node); err != nil {
		return err
	}
	return p.withTimeout(ctx, "clear node leaving mark", func(ctx context.Context) error {
		_, err := p.cli.Delete(ctx, p.k.leavingNode(node))
		return err
	})
}

// Leaving returns the nodes marked leaving.
func (p *Plane) Leaving(ctx context.Context) (map[string]bool, error) {
	var resp *clientv3.GetResponse
	err := p.withTimeout(ctx, "list leaving nodes", func(ctx context.Context) (err error) {
		resp, err = p.cli.Get(ctx, p.k.leaving(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), p.k.leaving())] = true
	}
	return out, nil
}
