package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/internal/durable"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/shard/control"
)

// ErrNotEmpty: the data directory of a restore already holds a node.
var ErrNotEmpty = errors.New("data directory is not empty")

// RestoreEmbedded restores the archive at t, after verifying it, into dataDir, which
// must hold no node yet (no node-id, no shards): the node id, the cursor key, the API
// keys (keys.json) when the archive holds them, the blobs when the archive holds them
// (into dataDir/Identity.BlobDir, where the default --blob dir finds them), and shard 0
// as a single-voter replica at the backed-up version. `cairn serve --data-dir dataDir`
// (with the backed-up node's blob store when the archive holds no blobs) then serves
// every file, snapshot and commit the backup holds, to the keys the node had.
//
// The restore writes RestoreMarker first and removes it last (after node-id), so a
// restore cut off (kill -9) leaves a directory `cairn serve` refuses (CheckRestoreMarker)
// rather than one it would start as an empty node; run again over it, the restore starts
// over (beginRestore). Errors: those of Verify, ErrNotEmpty, an archive of a cluster
// (restore a cluster node by node is not supported), or an I/O error.
func RestoreEmbedded(ctx context.Context, t Target, dataDir string) (*Manifest, error) {
	m, err := Verify(ctx, t)
	if err != nil {
		return nil, err
	}
	id := m.Identity
	if id.Kind != KindEmbedded || len(id.Shards) != 1 || id.Shards[0].Shard != 0 {
		return m, fmt.Errorf("backup %s is of a %s with %d shards: only an embedded node's backup restores into a data directory", t, id.Kind, len(id.Shards))
	}
	if err := beginRestore(dataDir, id.Backup, []string{"node-id", "shards"}); err != nil {
		return m, err
	}
	key, err := readPart(ctx, t, CursorKey)
	if err != nil {
		return m, err
	}
	if err := writeFile(filepath.Join(dataDir, "cursor.key"), key); err != nil {
		return m, err
	}
	if id.Keys {
		keys, err := readPart(ctx, t, KeysPart)
		if err != nil {
			return m, err
		}
		if err := writeFile(filepath.Join(dataDir, KeysPart), keys); err != nil {
			return m, err
		}
	}
	if err := restoreBlobs(ctx, t, m, dataDir); err != nil {
		return m, err
	}
	name := ShardPart(0)
	dir := filepath.Join(dataDir, "shards", strconv.Itoa(0))
	if err := shard.InstallSnapshot(dir, id.NodeID, id.NodeID, func() (io.ReadCloser, error) { return t.Open(ctx, name) }); err != nil {
		return m, err
	}
	// node-id, then the marker: a restore cut short leaves no node a start would take as
	// whole.
	if err := writeFile(filepath.Join(dataDir, "node-id"), []byte(id.NodeID)); err != nil {
		return m, err
	}
	return m, finishRestore(dataDir)
}

// RestoreCluster restores the cluster archive at t, after verifying it, as a cluster of
// one seed node: every shard's state is installed in dataDir (which must hold no node
// yet) with nodeID as the shard's only voter, at Raft address peerAddr (the address the
// node will advertise; its first leadership corrects a wrong one), and the etcd records
// the backup holds are written through plane, whose etcd must hold no cluster under its
// prefix (control.Plane.RestoreRecords: replica sets name the seed alone; the backed-up
// nodes' identities are left out). Then `cairn serve --cluster --data-dir dataDir` with
// the backed-up cluster's --shards, --replication and --blob serves every file, snapshot,
// commit and API key of the backup, and nodes started with empty data directories join
// and receive replicas until the cluster has its replication again.
//
// The shards are installed before etcd is written, and etcd's cluster record last, so a
// restore cut short leaves nothing a node would start as a cluster; dataDir keeps
// RestoreMarker until the end, as RestoreEmbedded's does, and a restore run again over it
// starts dataDir over (etcd must still hold no cluster: after a failure past
// RestoreRecords, empty the etcd prefix too). Errors: those of Verify, ErrNotEmpty, an archive of an
// embedded node, control.ErrClusterExists, or an I/O or etcd error.
func RestoreCluster(ctx context.Context, t Target, dataDir, nodeID, peerAddr string, plane *control.Plane) (*Manifest, error) {
	m, err := Verify(ctx, t)
	if err != nil {
		return nil, err
	}
	id := m.Identity
	if id.Kind != KindCluster {
		return m, fmt.Errorf("backup %s is of an embedded node: restore it with --data-dir alone", t)
	}
	raw, err := readPart(ctx, t, EtcdPart)
	if err != nil {
		return m, err
	}
	var recs []control.Record
	if err := json.Unmarshal(raw, &recs); err != nil {
		return m, fmt.Errorf("backup %s: %s: %w", t, EtcdPart, err)
	}
	if err := beginRestore(dataDir, id.Backup, []string{"node-id", "shards", "cluster-node-id"}); err != nil {
		return m, err
	}
	for _, sh := range id.Shards {
		name := ShardPart(sh.Shard)
		dir := filepath.Join(dataDir, "shards", strconv.Itoa(sh.Shard))
		if err := shard.InstallSnapshot(dir, nodeID, peerAddr, func() (io.ReadCloser, error) { return t.Open(ctx, name) }); err != nil {
			return m, fmt.Errorf("shard %d: %w", sh.Shard, err)
		}
	}
	if err := plane.RestoreRecords(ctx, recs, nodeID); err != nil {
		return m, err
	}
	// node-id, then the marker: a restore cut short leaves no node a start would take as
	// whole.
	if err := writeFile(filepath.Join(dataDir, "node-id"), []byte(nodeID)); err != nil {
		return m, err
	}
	return m, finishRestore(dataDir)
}

// restoreBlobs writes the archive's blob parts under dataDir/Identity.BlobDir, each to
// a temporary file that is synced and then renamed into place.
func restoreBlobs(ctx context.Context, t Target, m *Manifest, dataDir string) error {
	dir := m.Identity.BlobDir
	if dir == "" {
		return nil
	}
	if !filepath.IsLocal(dir) {
		return fmt.Errorf("%w: the identity's blob_dir %q is not inside the data directory", ErrDamaged, dir)
	}
	root := filepath.Join(dataDir, dir)
	for _, p := range m.Parts {
		rel, ok := strings.CutPrefix(p.Name, BlobPrefix)
		if !ok {
			continue
		}
		if !validBlobPath(rel) {
			return fmt.Errorf("%w: part %s is not a blob file's name", ErrDamaged, p.Name)
		}
		if err := restoreFile(ctx, t, p.Name, filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return fmt.Errorf("restore %s: %w", p.Name, err)
		}
	}
	return nil
}

func restoreFile(ctx context.Context, t Target, name, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	rc, err := t.Open(ctx, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.CreateTemp(filepath.Dir(dst), ".tmp-restore-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rc)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func writeFile(p string, b []byte) error { return durable.WriteFile(p, b, 0o600) }
