package server

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/api/backup"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// backupShardTimeout bounds placing one shard's hold and reaching its version here.
const backupShardTimeout = 30 * time.Second

// WriteBackup implements rest.Backups: for every shard it places backup id's hold (on the
// shard's leader), takes the state of this node's replica at or after the hold's version
// and spools it, zstd-compressed, to a temporary file in the data directory (a tar entry
// needs its size first); then it streams the parts (api/backup's layout), identity.json
// last. A cluster node needs a replica of every shard (replication = node count) or the
// backup fails naming the shard.
func (n *Node) WriteBackup(ctx context.Context, id string, start func() io.Writer) error {
	if err := meta.ValidateName("backup", id); err != nil {
		return err
	}
	ident := backup.Identity{Format: backup.Format, Backup: id, CreatedAt: time.Now().UTC(), Kind: backup.KindEmbedded, NodeID: n.nodeID}
	var spools []*os.File
	defer func() {
		for _, f := range spools {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	for _, sid := range n.host.ShardIDs() {
		info, f, err := n.spoolShard(ctx, id, sid)
		if f != nil {
			spools = append(spools, f)
		}
		if err != nil {
			return fmt.Errorf("backup %s: shard %d: %w", id, sid, err)
		}
		ident.Shards = append(ident.Shards, info)
	}
	var etcd []byte
	if plane := n.host.ControlPlane(); plane != nil {
		c := n.host.Cluster()
		ident.Kind, ident.ClusterID, ident.Replication = backup.KindCluster, c.ID, c.Replication
		recs, rev, err := plane.Records(ctx)
		if err != nil {
			return fmt.Errorf("backup %s: %w", id, err)
		}
		ident.EtcdRevision = rev
		if etcd, err = json.Marshal(recs); err != nil {
			return err
		}
	}
	key, err := n.cursorKey(ctx)
	if err != nil {
		return fmt.Errorf("backup %s: cursor key: %w", id, err)
	}
	identity, err := json.MarshalIndent(ident, "", "  ")
	if err != nil {
		return err
	}
	tw := tar.NewWriter(start())
	for i, f := range spools {
		if err := tarFile(tw, backup.ShardPart(ident.Shards[i].Shard), f); err != nil {
			return err
		}
	}
	if etcd != nil {
		if err := tarBytes(tw, backup.EtcdPart, etcd); err != nil {
			return err
		}
	}
	if err := tarBytes(tw, backup.CursorKey, key); err != nil {
		return err
	}
	if err := tarBytes(tw, backup.IdentityPart, identity); err != nil {
		return err
	}
	return tw.Close()
}

// spoolShard places the hold of backup id on shard sid and spools the shard's state.
func (n *Node) spoolShard(ctx context.Context, id string, sid int) (backup.ShardInfo, *os.File, error) {
	sctx, cancel := context.WithTimeout(ctx, backupShardTimeout)
	defer cancel()
	res, err := n.host.ProposeOn(sctx, sid, meta.Header{}, meta.BackupHold{ID: id})
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		return backup.ShardInfo{}, nil, err
	}
	snap, err := n.host.SnapshotAt(sctx, sid, res.Version)
	if err != nil {
		return backup.ShardInfo{}, nil, err
	}
	f, err := os.CreateTemp(n.cfg.DataDir, "backup-spool-*")
	if err != nil {
		return backup.ShardInfo{}, nil, err
	}
	if err := shard.WriteSnapshot(f, snap); err != nil {
		return backup.ShardInfo{}, f, err
	}
	return backup.ShardInfo{Shard: sid, Version: snap.Version(), HoldVersion: res.Version}, f, nil
}

// cursorKey is the key cursors are signed with: the embedded node's file, or the
// cluster's etcd key.
func (n *Node) cursorKey(ctx context.Context) ([]byte, error) {
	if n.host.Embedded() {
		return os.ReadFile(filepath.Join(n.cfg.DataDir, "cursor.key"))
	}
	cctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	return n.host.ClusterCursorKey(cctx)
}

// ReleaseBackup implements rest.Backups: it releases backup id's hold on every shard (on
// its leader). Releasing an absent hold is not an error.
func (n *Node) ReleaseBackup(ctx context.Context, id string) (map[int]bool, error) {
	if err := meta.ValidateName("backup", id); err != nil {
		return nil, err
	}
	out := map[int]bool{}
	for _, sid := range n.host.ShardIDs() {
		sctx, cancel := context.WithTimeout(ctx, backupShardTimeout)
		res, err := n.host.ProposeOn(sctx, sid, meta.Header{}, meta.BackupRelease{ID: id})
		cancel()
		if err == nil && res.Err != nil {
			err = res.Err
		}
		if err != nil {
			return out, fmt.Errorf("release backup %s: shard %d: %w", id, sid, err)
		}
		out[sid] = res.Retired
	}
	return out, nil
}

func tarBytes(tw *tar.Writer, name string, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

func tarFile(tw *tar.Writer, name string, f *os.File) error {
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.CopyN(tw, f, size)
	return err
}

// RestoreCluster restores the cluster backup at t (offline: no node runs on dataDir) as a
// cluster of one seed node with a new node id, whose shards are installed in dataDir and
// whose etcd records are written to the etcd at endpoints (which must hold no cluster):
// backup.RestoreCluster. peerAddr is the peer address the seed node will advertise. It
// returns the manifest and the seed's node id.
func RestoreCluster(ctx context.Context, t backup.Target, dataDir, peerAddr string, endpoints []string) (*backup.Manifest, string, error) {
	ecfg := control.ClientConfig(endpoints)
	ecfg.Logger = ops.ZapLogger(slog.Default(), "etcd-client") // the process's format, not zap's JSON
	cli, err := clientv3.New(ecfg)
	if err != nil {
		return nil, "", fmt.Errorf("etcd: %w", err)
	}
	defer cli.Close()
	plane, err := control.New(cli, control.Config{})
	if err != nil {
		return nil, "", err
	}
	id := uuid.NewString()
	if peerAddr == "" {
		peerAddr = id // corrected by the node's first leadership (fixAddresses)
	}
	m, err := backup.RestoreCluster(ctx, t, dataDir, id, peerAddr, plane)
	return m, id, err
}
