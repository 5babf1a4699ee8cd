package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/server"
	"github.com/cairnstore/cairn/ops"
	"github.com/cairnstore/cairn/ops/backup"
)

// A black-box finding: `cairn admin restore` killed mid-way left a data directory that
// `cairn serve` took for a fresh empty node (cut before the shard was installed) or
// refused as "another server's" (cut after) — and either way wrote a node-id, so running
// the restore again was refused. The restore is cut off here deterministically at those
// two points, by something in the data directory its next write fails on (what it
// leaves is what a kill -9 there leaves: it cleans nothing up on failure): the node then
// refuses the directory, saying to run the restore again, and the restore run again
// finishes it.
func TestARestoreCutOffIsRefusedByTheNodeAndFinishedByRunningItAgain(t *testing.T) {
	src := filepath.Join(t.TempDir(), "data")
	n := startBackupNode(t, src, "")
	big := bigBody(t)
	want, _ := os.ReadFile(big)
	cli(t, "put", "--server", n.url, "--agent", "demo", "--workbench", "wb", "outputs/big.bin", big)
	dest := t.TempDir()
	cli(t, "admin", "backup", "--admin-server", n.admin, "--to", dest, "--id", "b1")
	n.stop()

	for _, tc := range []struct {
		name string
		// obstruction is the path the cut-off run fails on: a file where the restore
		// puts its blobs (before the shard), a directory where it writes node-id's
		// temporary file (after the shard).
		obstruction string
		dir         bool
		shard       bool // the cut-off run installed the shard
	}{
		{"before the shard", "blobs", false, false},
		{"after the shard", "node-id.tmp", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "restored")
			obstruction := filepath.Join(data, tc.obstruction)
			if err := os.MkdirAll(data, 0o755); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.dir {
				err = os.Mkdir(obstruction, 0o755)
			} else {
				err = os.WriteFile(obstruction, []byte("x"), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := execCairn(t, "admin", "restore", "--from", dest, "--data-dir", data); err == nil {
				t.Fatal("the restore went through its obstruction")
			}
			if _, err := os.Stat(filepath.Join(data, "shards", "0")); (err == nil) != tc.shard {
				t.Fatalf("the cut-off run installed the shard: %v, want %v", err == nil, tc.shard)
			}
			if err := os.RemoveAll(obstruction); err != nil {
				t.Fatal(err)
			}

			cfg := ops.DefaultConfig()
			cfg.DataDir, cfg.Listen = data, "127.0.0.1:0"
			node, err := server.Open(t.Context(), cfg, ops.Credentials{}, nil)
			if err == nil {
				node.Close()
				t.Fatal("a node started on a data directory whose restore was cut off")
			}
			code, msg := failure(err)
			if !errors.Is(err, backup.ErrRestoreIncomplete) || code != "InvalidState" ||
				!strings.Contains(msg, "run `cairn admin restore --from BACKUP --data-dir "+data+"` again") {
				t.Fatalf("serve on a cut-off restore: %s: %s; want InvalidState saying to run the restore again", code, msg)
			}
			if _, err := os.Stat(filepath.Join(data, "node-id")); err == nil {
				t.Fatal("the refused start wrote node-id")
			}

			out := cli(t, "admin", "restore", "--from", dest, "--data-dir", data)
			if !strings.Contains(out, "restored backup b1") {
				t.Fatalf("the restore run again:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(data, backup.RestoreMarker)); !os.IsNotExist(err) {
				t.Fatalf("a finished restore left %s: %v", backup.RestoreMarker, err)
			}
			g := startBackupNode(t, data, "")
			if got := cli(t, "cat", "--server", g.url, "--agent", "demo", "--workbench", "wb", "outputs/big.bin"); got != string(want) {
				t.Fatalf("the restored body reads back as %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

// failure is describeError of a command's error; a command that succeeded is "OK".
func failure(err error) (code, msg string) {
	if err == nil {
		return "OK", "the command succeeded"
	}
	return describeError(err)
}
