package server

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnstore/cairn/api/rest"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/ops/backup"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/auth"
)

// backupShardTimeout bounds placing one shard's hold and reaching its version here.
const backupShardTimeout = 30 * time.Second

// WriteBackup implements rest.Backups: for every shard it places backup id's hold for
// destination dest (on the shard's leader; meta.BackupHold: a hold of id for another
// destination is Conflict, before anything is streamed), takes the state of this node's replica at or after the hold's version
// and spools it, zstd-compressed, to a temporary file in the data directory (a tar entry
// needs its size first); then it streams the parts (ops/backup's layout), identity.json
// last. An embedded node adds what lives only in its data directory: its API keys
// (keys.json) and, when its blob directory lies inside the data directory (the default
// --blob dir), every blob file, copied after the holds are placed, so every blob the
// shard snapshot references is there to copy. A cluster node needs a replica of every
// shard (replication = node count) or the backup fails naming the shard.
//
// Memory: whatever the size of the node, a backup holds one constant working set
// (backupWorkingSetBytes), which it takes of the node's memory budget before it starts
// (workbench.Service.AdmitMemory: ResourceExhausted, REST 429, while the budget stays
// taken; a budget smaller than the working set is taken whole, so the backup runs alone). Every part streams: a shard's state is written record by record through one
// zstd encoder into its spool file, the etcd records are read a page at a time
// (control.Plane.EachRecord) and spooled as they come, the API keys and the blobs are
// copied from their files, and the tar stream copies each part through one buffer.
func (n *Node) WriteBackup(ctx context.Context, id, dest string, start func() io.Writer) error {
	if err := meta.ValidateName("backup", id); err != nil {
		return err
	}
	release, err := n.svc.AdmitMemory(ctx, min(backupWorkingSetBytes, n.svc.Config().QueryBudgetBytes), "the backup")
	if err != nil {
		return err
	}
	defer release()
	unlock, err := n.lockForBackup(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	ident := backup.Identity{Format: backup.Format, Backup: id, CreatedAt: time.Now().UTC(), Kind: backup.KindEmbedded, NodeID: n.nodeID}
	var spools []*os.File
	defer func() {
		for _, f := range spools {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	for _, sid := range n.host.Shards().IDs() {
		info, f, err := n.spoolShard(ctx, id, dest, sid)
		if f != nil {
			spools = append(spools, f)
		}
		if err != nil {
			return fmt.Errorf("backup %s: shard %d: %w", id, sid, err)
		}
		ident.Shards = append(ident.Shards, info)
	}
	var etcd *os.File
	if plane := n.host.ControlPlane(); plane != nil {
		c := n.host.Cluster()
		ident.Kind, ident.ClusterID, ident.Replication = backup.KindCluster, c.ID, c.Replication
		f, rev, err := n.spoolRecords(ctx, plane)
		if f != nil {
			defer func() {
				f.Close()
				os.Remove(f.Name())
			}()
		}
		if err != nil {
			return fmt.Errorf("backup %s: %w", id, err)
		}
		etcd, ident.EtcdRevision = f, rev
	}
	key, err := n.cursorKey(ctx)
	if err != nil {
		return fmt.Errorf("backup %s: cursor key: %w", id, err)
	}
	var keys *os.File
	if n.host.Embedded() {
		keys, err = os.Open(filepath.Join(n.cfg.DataDir, auth.KeysFile))
		switch {
		case err == nil:
			defer keys.Close()
			ident.Keys = true
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("backup %s: API keys: %w", id, err)
		}
		if ident.BlobDir, err = n.blobDirInDataDir(); err != nil {
			return fmt.Errorf("backup %s: %w", id, err)
		}
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
		if err := tarFile(tw, backup.EtcdPart, etcd); err != nil {
			return err
		}
	}
	if err := tarBytes(tw, backup.CursorKey, key); err != nil {
		return err
	}
	if ident.Keys {
		if err := tarOpened(tw, backup.KeysPart, keys); err != nil {
			return fmt.Errorf("backup %s: API keys: %w", id, err)
		}
	}
	if ident.BlobDir != "" {
		if err := tarBlobs(tw, filepath.Join(n.cfg.DataDir, ident.BlobDir)); err != nil {
			return fmt.Errorf("backup %s: blobs: %w", id, err)
		}
	}
	if err := tarBytes(tw, backup.IdentityPart, identity); err != nil {
		return err
	}
	return tw.Close()
}

// spoolShard places the hold of backup id (for destination dest) on shard sid and spools
// the shard's state. The hold version it reports is the one the spooled state records:
// that of the hold's first placing when the backup runs again.
func (n *Node) spoolShard(ctx context.Context, id, dest string, sid int) (backup.ShardInfo, *os.File, error) {
	sctx, cancel := context.WithTimeout(ctx, backupShardTimeout)
	defer cancel()
	res, err := n.host.Shards().Propose(sctx, sid, meta.Header{}, meta.BackupHold{ID: id, Dest: dest})
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		return backup.ShardInfo{}, nil, err
	}
	snap, err := n.host.Shards().SnapshotAt(sctx, sid, res.Version)
	if err != nil {
		return backup.ShardInfo{}, nil, err
	}
	hold, ok := snap.BackupHold(id)
	if !ok { // released between the placing and the snapshot: by a concurrent release
		return backup.ShardInfo{}, nil, &workbench.Error{Code: workbench.CodeConflict,
			Message: fmt.Sprintf("the hold of backup %s was released while the backup started; run it again", id)}
	}
	f, err := os.CreateTemp(n.cfg.DataDir, "backup-spool-*")
	if err != nil {
		return backup.ShardInfo{}, nil, err
	}
	if err := shard.WriteSnapshot(f, snap); err != nil {
		return backup.ShardInfo{}, f, err
	}
	return backup.ShardInfo{Shard: sid, Version: snap.Version(), HoldVersion: hold.Version}, f, nil
}

// backupWorkingSetBytes is what one backup holds at once, whatever the node's size: the
// zstd encoder of a shard's spool (about 9 MiB at SpeedFastest with one goroutine), the
// snapshot writer's 64 KiB buffer and one record, one page of etcd records
// (control.RecordPage keys of at most a few KiB each, and their JSON), the tar stream's
// copy buffer, and room for the request.
const backupWorkingSetBytes = 32 << 20

// spoolRecords writes the durable etcd records of the cluster, read a page at a time at
// one revision (control.Plane.EachRecord), as the JSON array of control.Record the
// backup's etcd part is (ops/backup restores it), to a temporary file in the data
// directory; it returns the file, written to its end, and the revision.
func (n *Node) spoolRecords(ctx context.Context, plane *control.Plane) (*os.File, int64, error) {
	f, err := os.CreateTemp(n.cfg.DataDir, "backup-spool-*")
	if err != nil {
		return nil, 0, err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	sep := byte('[')
	rev, err := plane.EachRecord(ctx, control.RecordPage, func(r control.Record) error {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := w.WriteByte(sep); err != nil {
			return err
		}
		sep = ','
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		return f, 0, err
	}
	if sep == '[' {
		_, err = w.WriteString("[]")
	} else {
		err = w.WriteByte(']')
	}
	if err == nil {
		err = w.Flush()
	}
	return f, rev, err
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
	for _, sid := range n.host.Shards().IDs() {
		sctx, cancel := context.WithTimeout(ctx, backupShardTimeout)
		res, err := n.host.Shards().Propose(sctx, sid, meta.Header{}, meta.BackupRelease{ID: id})
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

// blobDirInDataDir returns the node's blob directory relative to its data directory when
// the blob store is a directory inside it (the default --blob dir), else "".
func (n *Node) blobDirInDataDir() (string, error) {
	target, err := n.cfg.BlobTarget()
	if err != nil || target.Kind != ops.BlobDir {
		return "", err
	}
	data, err := filepath.Abs(n.cfg.DataDir)
	if err != nil {
		return "", err
	}
	dir, err := filepath.Abs(target.Dir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(data, dir)
	if err != nil || !filepath.IsLocal(rel) {
		return "", nil
	}
	return rel, nil
}

// tarBlobs streams every blob file of the blob directory dir (blob/dir keeps them under
// roots/) as a part under backup.BlobPrefix, named by its path relative to dir. Blob
// files never change once renamed into place; one the collector deletes during the walk
// is skipped (the backup hold keeps every blob the backup's snapshots reference), and
// temporary files (dot-files) are left out.
func tarBlobs(tw *tar.Writer, dir string) error {
	top := filepath.Join(dir, "roots")
	return filepath.WalkDir(top, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if strings.HasPrefix(e.Name(), ".") && p != top {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: backup.BlobPrefix + filepath.ToSlash(rel), Mode: 0o600, Size: st.Size(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = io.CopyN(tw, f, st.Size())
		return err
	})
}

// BackupHolds implements rest.Backups: the backup holds of every shard, read
// linearizably (host.Shards.ReadView), so a hold placed or released by an acknowledged
// call is listed as such by every node. A cluster node without a replica of some shard
// fails naming it, as WriteBackup does.
func (n *Node) BackupHolds(ctx context.Context) ([]rest.BackupHold, error) {
	var out []rest.BackupHold
	for _, sid := range n.host.Shards().IDs() {
		if n.host.Replica(sid) == nil {
			return nil, fmt.Errorf("backup holds: %w: no replica of shard %d on this node", shard.ErrNotLeader, sid)
		}
		sctx, cancel := context.WithTimeout(ctx, backupShardTimeout)
		v, err := n.host.Shards().ReadView(sctx, sid)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("backup holds: shard %d: %w", sid, err)
		}
		for _, h := range v.Shard().BackupHolds() {
			out = append(out, rest.BackupHold{Backup: h.ID, Shard: sid, Version: h.Version, PlacedAt: time.UnixMilli(h.AtMs).UTC(),
				Destination: h.Dest})
		}
	}
	return out, ctx.Err()
}

func tarBytes(tw *tar.Writer, name string, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

// tarOpened streams the file f, open at its start, as the part name: its size when it was
// opened (a file replaced by a rename since stays the one opened).
func tarOpened(tw *tar.Writer, name string, f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: st.Size(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.CopyN(tw, f, st.Size())
	return err
}

// tarFile streams the spool file f, written to its end, as the part name.
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

// lockForBackup keeps root moves out of a cluster while backup id reads the shards one
// after the other (control's backup_lock.go); none may be under way. The embedded node has
// nothing to lock.
func (n *Node) lockForBackup(ctx context.Context, id string) (unlock func(), err error) {
	plane := n.host.ControlPlane()
	if plane == nil {
		return func() {}, nil
	}
	unlock, err = plane.LockForBackup(ctx, id)
	if err != nil {
		return nil, backupLockError(err)
	}
	return unlock, nil
}

// backupLockError is the answer to a backup whose lock was refused: a root move under way
// (Conflict, retryable once it ended) or the control plane unavailable.
func backupLockError(err error) error {
	switch {
	case errors.Is(err, control.ErrMoveInProgress):
		return &workbench.Error{Code: workbench.CodeConflict, Retryable: true,
			Message: control.PublicReason(err, "a root move is under way: a backup starts once no move is unfinished"),
			Details: map[string]any{"reason": "move_in_progress"}}
	case control.IsRetryable(err):
		return workbench.RoutingUnavailable("the control plane cannot answer right now; retry the backup")
	}
	return err
}
