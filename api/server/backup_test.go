package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/ops/backup"
)

// backupFixture is an embedded node whose blob store lives outside its data directory
// (what a backup leaves in place), served on test listeners.
type backupFixture struct {
	cfg          ops.Config
	node         *Node
	cli          *client.Client
	admin        *client.Admin
	closeServers func()
}

func openBackupNode(t *testing.T, cfg ops.Config) *backupFixture {
	t.Helper()
	n, err := Open(t.Context(), cfg, ops.Credentials{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReady(t.Context()); err != nil {
		n.Close()
		t.Fatal(err)
	}
	srv, adm := httptest.NewServer(n.Handler()), httptest.NewServer(n.AdminHandler())
	f := &backupFixture{cfg: cfg, node: n, cli: client.New(srv.URL, nil), admin: client.NewAdmin(adm.URL, nil)}
	f.closeServers = func() { srv.Close(); adm.Close() }
	t.Cleanup(f.close)
	return f
}

func (f *backupFixture) close() {
	if f.node != nil {
		f.closeServers()
		f.node.Close()
		f.node = nil
	}
}

func (f *backupFixture) read(t *testing.T, path string, at client.SnapshotRef) []byte {
	t.Helper()
	rc, _, err := f.cli.GetFile(t.Context(), "demo", "wb", path, client.GetOptions{AtSnapshot: at})
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}

func TestBackupDestroyRestoreReadsEverythingBackByteExact(t *testing.T) {
	cfg := testConfig(t)
	cfg.Blob = "dir://" + t.TempDir()
	cfg.GCGrace = time.Second
	f := openBackupNode(t, cfg)
	files := map[string][]byte{
		"input/small.txt": []byte("an inline body"),
		"outputs/big.bin": bytes.Repeat([]byte("a blob body that is longer than the inline bound. "), 400),
		"logs/run.log":    bytes.Repeat([]byte("log line\n"), 1000),
	}
	for p, b := range files {
		if _, err := f.cli.PutFile(t.Context(), "demo", "wb", p, bytes.NewReader(b), client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := f.cli.Snapshot(t.Context(), "demo", "wb", client.SnapshotRequest{Name: "before"})
	if err != nil {
		t.Fatal(err)
	}
	manifest, _ := json.Marshal(map[string]any{"note": "backup test"})
	commit, err := f.cli.Commit(t.Context(), "demo", "wb", client.CommitRequest{Manifest: manifest, ContentDigestURI: "sha256:" + strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}

	commitPath := commit.Section + "/" + commit.RelativePath
	commitBody := f.read(t, commitPath, client.SnapshotRef{})
	target, err := backup.OpenTarget(t.TempDir(), backup.S3{})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := f.admin.Backup(t.Context(), "b1", "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := backup.Write(t.Context(), target, stream)
	stream.Close()
	if err != nil {
		t.Fatal(err)
	}
	if m.Identity.Kind != backup.KindEmbedded || len(m.Identity.Shards) != 1 || m.Identity.Shards[0].Version < m.Identity.Shards[0].HoldVersion {
		t.Fatalf("identity %+v", m.Identity)
	}

	// After the backup the big file is overwritten: its blob is unreferenced, but the
	// backup's hold keeps it through a sweep past the grace period.
	if _, err := f.cli.PutFile(t.Context(), "demo", "wb", "outputs/big.bin", strings.NewReader("replaced"), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past the 1 s grace, in command and wall time
	rep, err := f.admin.CollectGarbage(t.Context(), client.GCRequest{})
	if err != nil || rep.Deleted != 0 {
		t.Fatalf("a sweep under the backup hold: %+v %v", rep, err)
	}

	// Destroy the data directory, restore into a fresh one, start on the same blobs.
	f.close()
	if err := os.RemoveAll(cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.RestoreEmbedded(t.Context(), target, cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.RestoreEmbedded(t.Context(), target, cfg.DataDir); err == nil {
		t.Fatal("a second restore into the same data directory succeeded")
	}
	g := openBackupNode(t, cfg)
	for p, want := range files {
		if got := g.read(t, p, client.SnapshotRef{}); !bytes.Equal(got, want) {
			t.Fatalf("%s after restore: %d bytes, want %d", p, len(got), len(want))
		}
		if got := g.read(t, p, client.SnapshotID(snap.SnapshotID)); !bytes.Equal(got, want) {
			t.Fatalf("%s at snapshot %d after restore differs", p, snap.SnapshotID)
		}
	}
	if got := g.read(t, commitPath, client.SnapshotRef{}); !bytes.Equal(got, commitBody) {
		t.Fatalf("the commit's %s reads back as %q, want %q", commitPath, got, commitBody)
	}
	// Writes continue after the restored version.
	if _, err := g.cli.PutFile(t.Context(), "demo", "wb", "input/after.txt", strings.NewReader("new"), client.PutOptions{}); err != nil {
		t.Fatalf("a write after restore: %v", err)
	}

	// Deleting the backup releases its hold; then the sweeper may collect.
	rel, err := g.admin.ReleaseBackup(t.Context(), "b1")
	if err != nil || !rel["0"] {
		t.Fatalf("release: %v %v", rel, err)
	}
}

func TestBackupVerifyFindsADamagedPart(t *testing.T) {
	cfg := testConfig(t)
	cfg.Blob = "dir://" + t.TempDir()
	f := openBackupNode(t, cfg)
	if _, err := f.cli.PutFile(t.Context(), "demo", "wb", "input/a.txt", strings.NewReader("a"), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	target, _ := backup.OpenTarget(dir, backup.S3{})
	stream, err := f.admin.Backup(t.Context(), "b2", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = backup.Write(t.Context(), target, stream)
	stream.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Verify(t.Context(), target); err != nil {
		t.Fatalf("verify of a whole backup: %v", err)
	}
	part := dir + "/" + backup.ShardPart(0)
	b, _ := os.ReadFile(part)
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(part, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Verify(t.Context(), target); err == nil || !strings.Contains(err.Error(), backup.ShardPart(0)) {
		t.Fatalf("verify of a damaged part: %v", err)
	}
	if err := os.Remove(dir + "/" + backup.ManifestPart); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Verify(t.Context(), target); err == nil {
		t.Fatal("verify without a manifest succeeded")
	}
}

// TestABackupTakesItsWorkingSetOfTheMemoryBudget (issue 25 finding 11): a backup holds its
// working set, a constant whatever the node's size (every part streams), of the node's
// memory budget while it runs; while the budget stays taken the admin call is answered
// 429 ResourceExhausted, retryable, before anything is written or any hold placed.
func TestABackupTakesItsWorkingSetOfTheMemoryBudget(t *testing.T) {
	cfg := testConfig(t)
	cfg.Blob = "dir://" + t.TempDir()
	cfg.QueryBudgetBytes = 64 << 20
	cfg.QueryQueueTimeout = 50 * time.Millisecond
	f := openBackupNode(t, cfg)
	if _, err := f.cli.PutFile(t.Context(), "demo", "wb", "input/a.txt", strings.NewReader("a"), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	stream, err := f.admin.Backup(t.Context(), "b3", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = backup.Write(t.Context(), mustTarget(t), stream)
	stream.Close()
	if err != nil {
		t.Fatal(err)
	}
	if peak := f.node.svc.AdmissionHighWater(); peak < backupWorkingSetBytes || peak > cfg.QueryBudgetBytes {
		t.Errorf("high-water mark %d bytes after a backup, want at least its working set %d and at most the budget %d", peak, backupWorkingSetBytes, cfg.QueryBudgetBytes)
	}
	release, err := f.node.svc.AdmitMemory(t.Context(), cfg.QueryBudgetBytes, "the test's hold")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, err = f.admin.Backup(t.Context(), "b4", "")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.HTTPStatus != 429 || ce.Code != "ResourceExhausted" || !ce.Retryable {
		t.Fatalf("a backup with the budget taken: %v", err)
	}
	holds, err := f.admin.BackupHolds(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range holds {
		if h.Backup == "b4" {
			t.Errorf("the refused backup placed a hold: %+v", h)
		}
	}
}

func mustTarget(t *testing.T) backup.Target {
	t.Helper()
	target, err := backup.OpenTarget(t.TempDir(), backup.S3{})
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// A black-box finding: POST /v1/admin/backup under an id a backup to another destination
// holds shared that backup's hold. The route now answers 409 Conflict (reason
// backup_id_in_use, not retryable) before streaming, keeps the first backup's hold, and
// the same destination's call (a retry) streams with the hold's first version.
func TestTheBackupRouteRefusesAnIDAnotherDestinationHolds(t *testing.T) {
	cfg := testConfig(t)
	cfg.Blob = "dir://" + t.TempDir()
	f := openBackupNode(t, cfg)
	if _, err := f.cli.PutFile(t.Context(), "demo", "wb", "input/a.txt", strings.NewReader("a"), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	write := func(dest string) *backup.Manifest {
		t.Helper()
		stream, err := f.admin.Backup(t.Context(), "X", dest)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		m, err := backup.Write(t.Context(), mustTarget(t), stream)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	first := write("dir:///bk/a")
	_, err := f.admin.Backup(t.Context(), "X", "dir:///bk/b")
	var ce *client.Error
	if !errors.As(err, &ce) || ce.HTTPStatus != 409 || ce.Code != "Conflict" || ce.Retryable || ce.Details["reason"] != "backup_id_in_use" ||
		!strings.Contains(ce.Message, `backup id "X" is in use by another backup (written to dir:///bk/a`) {
		t.Fatalf("a backup under X to another destination: %v (%+v)", err, ce)
	}
	if _, err := f.cli.PutFile(t.Context(), "demo", "wb", "input/b.txt", strings.NewReader("b"), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	again := write("dir:///bk/a")
	holds, err := f.admin.BackupHolds(t.Context())
	if err != nil || len(holds) != 1 || holds[0].Destination != "dir:///bk/a" {
		t.Fatalf("holds %+v, %v; want X's alone, for dir:///bk/a", holds, err)
	}
	if v := holds[0].Version; first.Identity.Shards[0].HoldVersion != v || again.Identity.Shards[0].HoldVersion != v {
		t.Fatalf("hold at %d; the manifests say %d and %d", v, first.Identity.Shards[0].HoldVersion, again.Identity.Shards[0].HoldVersion)
	}
}
