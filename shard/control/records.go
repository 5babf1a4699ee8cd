package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Record is one etcd key Cairn owns and a backup keeps: its key under the plane's prefix
// (without the prefix) and its value.
type Record struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// ephemeral are the key spaces a backup leaves out: bound to a lease (nodes, leaders,
// the controller election), rebuilt by the nodes that run.
var ephemeral = []string{"/nodes/", "/leaders/", "/controller/"}

// RecordPage is how many keys one read of EachRecord asks etcd for: what it holds at once
// is one page (the placements of many roots come a page at a time).
const RecordPage = 1000

// EachRecord calls fn for every durable key of the cluster (the cluster record, the cursor
// key, node identities, replica sets, placements and load counters; not the lease-bound
// ones), in key order, reading them page keys at a time, every page at the revision of the
// first read: they are the records of one revision however many there are, and what is
// held at once is one page. It returns that revision. fn's error stops it and is
// returned. Errors of etcd wrap ErrControlPlaneUnavailable; each read is bounded by
// Config.RequestTimeout.
func (p *Plane) EachRecord(ctx context.Context, page int, fn func(Record) error) (int64, error) {
	if page < 1 {
		return 0, fmt.Errorf("%w: page %d must be at least 1", ErrInvalidArgument, page)
	}
	prefix := p.cfg.Prefix + "/"
	from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(page))}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
		resp, err := p.cli.Get(rctx, from, opts...)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("%w: read records: %v", ErrControlPlaneUnavailable, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			k := strings.TrimPrefix(string(kv.Key), p.cfg.Prefix)
			if kv.Lease != 0 || hasAnyPrefix(k, ephemeral) {
				continue
			}
			if err := fn(Record{Key: k, Value: kv.Value}); err != nil {
				return rev, err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// ErrClusterExists: a restore found a cluster record already in etcd.
var ErrClusterExists = errors.New("control: a cluster exists under this prefix")

// restoreBatch bounds the puts of one etcd transaction of RestoreRecords (etcd refuses a
// transaction of more than --max-txn-ops, 128 by default).
const restoreBatch = 100

// RestoreRecords writes the durable records of a backup (Records) into an etcd that has
// no cluster under the plane's prefix, for a cluster restored on one seed node: every
// shard's replica-set record becomes that node as its only voter (the controller then
// adds replicas as other nodes join), and the node identities and leaving marks of the
// backed-up nodes are left out (their data directories are gone). The cluster record is
// written last, in a transaction that succeeds only if it is still absent, so a restore
// cut short leaves no cluster a node would join, and can be run again.
//
// Errors: ErrClusterExists, ErrInvalidArgument (a bad seed id, or records without a
// cluster record), ErrControlPlaneUnavailable.
func (p *Plane) RestoreRecords(ctx context.Context, recs []Record, seed string) error {
	if err := validNodeID(seed); err != nil {
		return err
	}
	seedSet, err := json.Marshal(ReplicaSet{Voters: []string{seed}, Nonvoters: []string{}})
	if err != nil {
		return err
	}
	var cluster []byte
	var puts []clientv3.Op
	for _, r := range recs {
		full := p.cfg.Prefix + r.Key
		switch {
		case full == p.k.cluster():
			cluster = r.Value
			continue
		case strings.HasPrefix(full, p.k.identity("")), strings.HasPrefix(full, p.k.leaving()), hasAnyPrefix(r.Key, ephemeral):
			continue
		case strings.HasPrefix(full, p.k.shards()):
			puts = append(puts, clientv3.OpPut(full, string(seedSet)))
			continue
		}
		puts = append(puts, clientv3.OpPut(full, string(r.Value)))
	}
	if cluster == nil {
		return fmt.Errorf("%w: the records hold no cluster record", ErrInvalidArgument)
	}
	existing, err := p.get(ctx, "check for a cluster", p.k.cluster())
	if err != nil {
		return err
	}
	if len(existing.Kvs) > 0 {
		return ErrClusterExists
	}
	for len(puts) > 0 {
		n := min(len(puts), restoreBatch)
		batch := puts[:n]
		puts = puts[n:]
		if err := p.withTimeout(ctx, "restore records", func(ctx context.Context) error {
			_, err := p.cli.Txn(ctx).Then(batch...).Commit()
			return err
		}); err != nil {
			return err
		}
	}
	var resp *clientv3.TxnResponse
	if err := p.withTimeout(ctx, "restore the cluster record", func(ctx context.Context) (err error) {
		resp, err = p.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(p.k.cluster()), "=", 0)).
			Then(clientv3.OpPut(p.k.cluster(), string(cluster))).Commit()
		return err
	}); err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrClusterExists
	}
	return nil
}
