package control

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// RecoverRecord writes shard's replica-set record after the recovery of a shard that lost
// a majority of its voters (shard/host Recovery.Recover): node, the survivor, is the only
// voter, no non-voter is left, and the record's Epoch becomes epoch. The write is one
// transaction that succeeds only if the record still has revision rev (its ModRevision
// when read; 0: absent), so it never overwrites a controller's write it did not see; the
// controller then adds replicas back as it does for any shard short of its replication
// (Plan). It is not fenced by the controller's election: an operator's recovery is not a
// controller decision.
//
// Errors: ErrInvalidArgument (a bad node id, a negative shard, epoch 0); ErrConflict when
// the record changed since it was read (read it again); ErrControlPlaneUnavailable.
func (p *Plane) RecoverRecord(ctx context.Context, shard int, node string, epoch uint64, rev int64) error {
	if err := validNodeID(node); err != nil {
		return err
	}
	if shard < 0 || epoch == 0 {
		return fmt.Errorf("%w: shard %d, epoch %d (want a shard >= 0 and an epoch >= 1)", ErrInvalidArgument, shard, epoch)
	}
	val, err := json.Marshal(ReplicaSet{Voters: []string{node}, Nonvoters: []string{}, Epoch: epoch})
	if err != nil {
		return err
	}
	key := p.k.shard(shard)
	var resp *clientv3.TxnResponse
	if err := p.withTimeout(ctx, "write "+key, func(rctx context.Context) (err error) {
		resp, err = p.cli.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, string(val))).Commit()
		return err
	}); err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("write %s: %w", key, ErrConflict)
	}
	return nil
}
