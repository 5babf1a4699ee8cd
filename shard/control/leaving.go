package control

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Decommissioning. An admin marks a node as leaving (Decommission); from then on the
// controller gives it no new replica, adds a replacement for each replica it holds, and
// removes it from each shard once the shard has its Replication voters without it (Plan).
// The mark is a durable key (no lease): it survives the node's restarts, so a leaving node
// that comes back is not handed replicas again; Recommission clears it.
//
// Both name the node by its id or by a prefix of it that only one known node's id starts
// with, and refuse an id the cluster does not know before they write anything: a mark of
// an unknown id would answer "holds no replica" for a node that never was one.

// ErrNodeNotFound: the cluster knows no node of the id, nor one whose id starts with it
// (Decommission, Recommission).
var ErrNodeNotFound = errors.New("control: no such node")

// NodeMark is what Decommission and Recommission found of the node they changed.
type NodeMark struct {
	// ID is the node's full id: the one asked for, or the one its prefix stands for.
	ID string
	// Registered: the node's registration is live (it runs, or its lease has not run out).
	Registered bool
	// Shards are the shards whose replica-set record lists the node, in order.
	Shards []int
	// WasLeaving: the node was marked leaving before the call.
	WasLeaving bool
}

// Decommission marks node (an id, or a prefix of exactly one known id) as leaving, with the
// time of the request, and returns what it found of the node. Idempotent: a node already
// marked, or already gone (not registered, in no replica set), is marked again without
// error. Errors wrap ErrNodeNotFound (an id the cluster does not know: nothing is
// written), ErrInvalidArgument (a bad id, or a prefix of several ids) or
// ErrControlPlaneUnavailable.
func (p *Plane) Decommission(ctx context.Context, node string, now time.Time) (NodeMark, error) {
	m, err := p.resolveNode(ctx, node, false)
	if err != nil {
		return NodeMark{}, err
	}
	err = p.withTimeout(ctx, "mark node leaving", func(ctx context.Context) error {
		_, err := p.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(p.k.leavingNode(m.ID)), "=", 0)).
			Then(clientv3.OpPut(p.k.leavingNode(m.ID), now.UTC().Format(time.RFC3339))).
			Commit()
		return err
	})
	return m, err
}

// Recommission clears node's leaving mark (node: an id, or a prefix of exactly one id
// known or marked), so the controller may give it replicas again, and returns what it
// found of the node (WasLeaving: a mark was cleared). Idempotent. Errors as Decommission's;
// an id only marked leaving (never registered) is known to it, so that its mark can be
// cleared.
func (p *Plane) Recommission(ctx context.Context, node string) (NodeMark, error) {
	m, err := p.resolveNode(ctx, node, true)
	if err != nil {
		return NodeMark{}, err
	}
	err = p.withTimeout(ctx, "clear node leaving mark", func(ctx context.Context) error {
		resp, err := p.cli.Delete(ctx, p.k.leavingNode(m.ID))
		if err == nil {
			m.WasLeaving = resp.Deleted > 0
		}
		return err
	})
	return m, err
}

// Leaving returns the nodes marked leaving.
func (p *Plane) Leaving(ctx context.Context) (map[string]bool, error) {
	resp, err := p.get(ctx, "list leaving nodes", p.k.leaving(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), p.k.leaving())] = true
	}
	return out, nil
}

// nodeCensus is every node id the cluster knows, read at one revision: registered ones,
// ones bound to a data directory (every node that ever joined), ones listed in a
// replica-set record (by shard), and ones marked leaving.
type nodeCensus struct {
	registered, bound, leaving map[string]bool
	shards                     map[string][]int
}

// census reads the nodeCensus in one transaction.
func (p *Plane) census(ctx context.Context) (nodeCensus, error) {
	c := nodeCensus{registered: map[string]bool{}, bound: map[string]bool{}, leaving: map[string]bool{}, shards: map[string][]int{}}
	var resp *clientv3.TxnResponse
	err := p.withTimeout(ctx, "list known nodes", func(ctx context.Context) (err error) {
		resp, err = p.cli.Txn(ctx).Then(
			clientv3.OpGet(p.k.nodes(), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
			clientv3.OpGet(p.k.identity(""), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
			clientv3.OpGet(p.k.leaving(), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
			clientv3.OpGet(p.k.shards(), clientv3.WithPrefix()),
		).Commit()
		return err
	})
	if err != nil {
		return c, err
	}
	for i, set := range []struct {
		m      map[string]bool
		prefix string
	}{{c.registered, p.k.nodes()}, {c.bound, p.k.identity("")}, {c.leaving, p.k.leaving()}} {
		for _, kv := range resp.Responses[i].GetResponseRange().Kvs {
			set.m[strings.TrimPrefix(string(kv.Key), set.prefix)] = true
		}
	}
	for _, kv := range resp.Responses[3].GetResponseRange().Kvs {
		s, ok := shardOf(p.k.shards(), string(kv.Key))
		var rs ReplicaSet
		if !ok || json.Unmarshal(kv.Value, &rs) != nil {
			continue
		}
		for _, id := range slices.Concat(rs.Voters, rs.Nonvoters) {
			c.shards[id] = append(c.shards[id], s)
		}
	}
	for id := range c.shards {
		slices.Sort(c.shards[id])
		c.shards[id] = slices.Compact(c.shards[id])
	}
	return c, nil
}

// known reports whether the cluster knows node id; marked: an id only marked leaving
// counts.
func (c nodeCensus) known(id string, marked bool) bool {
	return c.registered[id] || c.bound[id] || len(c.shards[id]) > 0 || (marked && c.leaving[id])
}

// maxAmbiguous bounds the ids an ambiguous prefix's refusal lists.
const maxAmbiguous = 5

// resolveNode returns what the cluster knows of node: an id it knows (marked: or one only
// marked leaving), or else the one known id that starts with node. An unknown id is
// ErrNodeNotFound, a prefix of several ids ErrInvalidArgument, both Refusals.
func (p *Plane) resolveNode(ctx context.Context, node string, marked bool) (NodeMark, error) {
	if err := validNodeID(node); err != nil {
		return NodeMark{}, err
	}
	c, err := p.census(ctx)
	if err != nil {
		return NodeMark{}, err
	}
	id := node
	if !c.known(node, marked) {
		var match []string
		for _, m := range []map[string]bool{c.registered, c.bound, c.leaving} {
			for k := range m {
				if strings.HasPrefix(k, node) && c.known(k, marked) {
					match = append(match, k)
				}
			}
		}
		for k := range c.shards {
			if strings.HasPrefix(k, node) {
				match = append(match, k)
			}
		}
		slices.Sort(match)
		match = slices.Compact(match)
		switch {
		case len(match) == 0:
			return NodeMark{}, Refuse(ErrNodeNotFound, "no node of the cluster has the id %q or an id that starts with it", node)
		case len(match) > maxAmbiguous:
			return NodeMark{}, Refuse(ErrInvalidArgument, "node id %q is ambiguous: %d node ids start with it (%s, …); give more of the id",
				node, len(match), strings.Join(match[:maxAmbiguous], ", "))
		case len(match) > 1:
			return NodeMark{}, Refuse(ErrInvalidArgument, "node id %q is ambiguous: %d node ids start with it (%s); give more of the id",
				node, len(match), strings.Join(match, ", "))
		}
		id = match[0]
	}
	return NodeMark{ID: id, Registered: c.registered[id], Shards: c.shards[id], WasLeaving: c.leaving[id]}, nil
}
