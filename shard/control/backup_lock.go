package control

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// A cluster backup and root moves exclude each other. A backup snapshots the shards one
// after the other and reads the etcd records after them: a move that fenced, copied or
// released a root between two of those reads would leave the archive with a root on no
// shard its placement names (released on the source before its snapshot, imported on the
// target after its own). So a backup starts only while no move is unfinished, and holds a
// lock, <prefix>/backups/<id>, bound to a lease it keeps alive, that StartMove refuses to
// move past; each side checks the other in the transaction that takes its own lock, so
// one of two concurrent starts loses. The lock is lease-bound: a backup that died lets
// moves in once its lease lapses, and no archive holds it (EachRecord leaves lease-bound
// keys out).

// ErrBackupInProgress: a backup of the cluster is being taken; a move starts after it.
var ErrBackupInProgress = errors.New("control: a backup of the cluster is being taken")

// backupLockTTL is the lease of a backup's lock, renewed while the backup runs.
const backupLockTTL = 10 * time.Second

func (k keys) backups() string         { return k.prefix + "/backups/" }
func (k keys) backup(id string) string { return k.backups() + id }
func (k keys) movingAll() string       { return k.prefix + "/moving/" }

// LockForBackup takes backup id's lock, and returns its release (which never fails: a lock
// it could not delete goes with its lease). Refused (a *Refusal) with ErrMoveInProgress
// while a root move is unfinished; ErrControlPlaneUnavailable: retry.
func (p *Plane) LockForBackup(ctx context.Context, id string) (release func(), err error) {
	life, stop := context.WithCancel(context.Background())
	var lease clientv3.LeaseID
	err = p.withTimeout(ctx, "grant backup lease", func(ctx context.Context) error {
		resp, err := p.cli.Grant(ctx, int64(backupLockTTL/time.Second))
		if err == nil {
			lease = resp.ID
		}
		return err
	})
	if err != nil {
		stop()
		return nil, err
	}
	sess, err := concurrency.NewSession(p.cli, concurrency.WithLease(lease), concurrency.WithContext(life))
	if err != nil {
		stop()
		return nil, wrapErr(ctx, "keep backup lease alive", err)
	}
	release = func() {
		stop()
		sess.Orphan()
		_ = p.withTimeout(context.Background(), "revoke backup lease", func(ctx context.Context) error {
			_, err := p.cli.Revoke(ctx, lease)
			return err
		})
	}
	var resp *clientv3.TxnResponse
	err = p.withTimeout(ctx, "lock for backup", func(ctx context.Context) (err error) {
		resp, err = p.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(p.k.movingAll()), "=", 0).WithPrefix()).
			Then(clientv3.OpPut(p.k.backup(id), time.Now().UTC().Format(time.RFC3339), clientv3.WithLease(lease))).
			Else(clientv3.OpGet(p.k.movingAll(), clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))).Commit()
		return err
	})
	switch {
	case err != nil:
		release()
		return nil, err
	case !resp.Succeeded:
		release()
		root := "a root"
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			root = "agent root " + string(kvs[0].Key[len(p.k.movingAll()):])
		}
		return nil, Refuse(ErrMoveInProgress, "%s is being moved: a backup starts once no move is unfinished (cairn admin root moves)", root)
	}
	return release, nil
}
