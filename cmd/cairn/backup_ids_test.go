package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/api/client"
	"github.com/cairnstore/cairn/ops/backup"
)

// backupManifest runs `cairn admin backup --json` and returns the manifest it printed.
func backupManifest(t *testing.T, admin string, args ...string) backup.Manifest {
	t.Helper()
	out := cli(t, append([]string{"admin", "backup", "--admin-server", admin, "--json"}, args...)...)
	var m backup.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("backup --json printed %q: %v", out, err)
	}
	return m
}

// holdsOf lists the node's holds of backup id.
func holdsOf(t *testing.T, admin, id string) []client.BackupHold {
	t.Helper()
	all, err := client.NewAdmin(admin, nil).BackupHolds(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []client.BackupHold
	for _, h := range all {
		if h.Backup == id {
			out = append(out, h)
		}
	}
	return out
}

// A black-box finding: a second backup under a used --id into another destination was
// accepted, shared the first one's hold (its manifest naming a hold version that was not
// the hold's), and deleting either backup released the hold the other needed. Now the id
// is refused for another destination (Conflict naming it), the same backup run again into
// its destination keeps its hold, the manifest records the hold's real version, and
// `verify --holds` tells a backup whose hold is gone.
func TestABackupIDIsOneBackupsAndItsHoldIsRecordedAsPlaced(t *testing.T) {
	n := startBackupNode(t, filepath.Join(t.TempDir(), "data"), "dir://"+t.TempDir())
	cli(t, "put", "--server", n.url, "--agent", "demo", "--workbench", "w", "input/big.bin", bigBody(t))
	bk := t.TempDir()
	a, b := filepath.Join(bk, "e-a"), filepath.Join(bk, "e-b")
	first := backupManifest(t, n.admin, "--to", a, "--id", "X")
	held := holdsOf(t, n.admin, "X")
	if len(held) != 1 || held[0].Version != first.Identity.Shards[0].HoldVersion {
		t.Fatalf("holds %+v; the manifest says hold at %d", held, first.Identity.Shards[0].HoldVersion)
	}

	_, _, err := execCairn(t, "admin", "backup", "--admin-server", n.admin, "--to", b, "--id", "X")
	if code, msg := failure(err); code != "Conflict" || !strings.Contains(msg, `backup id "X" is in use by another backup`) ||
		!strings.Contains(msg, a) || !strings.Contains(msg, "pick another id") || !strings.Contains(msg, "release") {
		t.Fatalf("a second backup under id X into another destination: %s: %s; want Conflict naming the id and what to do", code, msg)
	}
	if left := files(t, b); len(left) != 0 {
		t.Fatalf("the refused backup wrote %v", left)
	}

	// The node writes on, then the same backup runs again (a retry after a crash): it
	// keeps the hold of its first run, and its manifest says so.
	cli(t, "put", "--server", n.url, "--agent", "demo", "--workbench", "w", "input/other.txt", bigBody(t))
	again := backupManifest(t, n.admin, "--to", a, "--id", "X")
	if got := holdsOf(t, n.admin, "X"); len(got) != 1 || got[0].Version != held[0].Version || !got[0].PlacedAt.Equal(held[0].PlacedAt) || got[0].Destination != "dir://"+a {
		t.Fatalf("holds after the backup ran again: %+v, want the first %+v for dir://%s", got, held, a)
	}
	if s := again.Identity.Shards[0]; s.HoldVersion != held[0].Version || s.Version <= first.Identity.Shards[0].Version {
		t.Fatalf("the backup run again: shard %+v; want hold at %d (the hold's), a later snapshot than %d", s, held[0].Version, first.Identity.Shards[0].Version)
	}

	out := cli(t, "admin", "backup", "verify", "--admin-server", n.admin, "--from", a, "--holds")
	if !strings.Contains(out, "held: the node at "+n.admin+" keeps the backup's hold on every shard") {
		t.Fatalf("verify --holds of a held backup:\n%s", out)
	}
	if out := cli(t, "admin", "backup", "verify", "--from", a); !strings.Contains(out, "not checked: the blobs in the node's blob store and the backup's hold") {
		t.Fatalf("verify without --holds does not say what it left unchecked:\n%s", out)
	}
	cli(t, "admin", "backup", "release", "--admin-server", n.admin, "--id", "X")
	_, _, err = execCairn(t, "admin", "backup", "verify", "--admin-server", n.admin, "--from", a, "--holds")
	if code, msg := failure(err); code != "NotFound" || !strings.Contains(msg, "shard 0 keeps no hold of backup X") {
		t.Fatalf("verify --holds of a backup whose hold was released: %s: %s", code, msg)
	}
	// Released, the id is free for another destination.
	cli(t, "admin", "backup", "--admin-server", n.admin, "--to", b, "--id", "X")
}

// A black-box finding: `backup --to DIR` overwrote a complete backup of another id in DIR,
// orphaning that backup's hold. Now such a destination is refused before any hold is
// placed (as is a file, and a directory another backup was cut off in), naming --to; the
// same id run again into its directory still works.
func TestABackupRefusesADestinationItCannotTakeBeforeItPlacesAHold(t *testing.T) {
	n := startBackupNode(t, filepath.Join(t.TempDir(), "data"), "")
	cli(t, "put", "--server", n.url, "--agent", "demo", "--workbench", "w", "input/big.bin", bigBody(t))
	dest := t.TempDir()
	cli(t, "admin", "backup", "--admin-server", n.admin, "--to", dest, "--id", "nightly")
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cut := t.TempDir() // a backup of another id cut off before its manifest
	if err := os.WriteFile(filepath.Join(cut, backup.IdentityPart), []byte(`{"backup":"weekly"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ to, want string }{
		{dest, `holds backup "nightly" (a complete backup), not "other": pick another destination, or delete that backup first (` + "`cairn admin backup delete --from " + dest + "`)"},
		{file, "backup destination is not a directory: " + file + " is a file"},
		{filepath.Join(file, "sub"), "backup destination is not a directory"},
		{cut, `holds backup "weekly" (a backup cut off before its manifest), not "other": pick another destination, or remove what it left (` + "`cairn admin backup release --id weekly --from " + cut + "`)"},
	} {
		_, _, err := execCairn(t, "admin", "backup", "--admin-server", n.admin, "--to", tc.to, "--id", "other")
		if code, msg := failure(err); code != "InvalidArguments" || !strings.HasPrefix(msg, "--to: ") || !strings.Contains(msg, tc.want) {
			t.Errorf("backup --to %s: %s: %s; want InvalidArguments naming --to, saying %q", tc.to, code, msg, tc.want)
		}
	}
	if got := holdsOf(t, n.admin, "other"); len(got) != 0 {
		t.Fatalf("a refused backup placed a hold: %+v", got)
	}
	if out := cli(t, "admin", "backup", "verify", "--from", dest); !strings.Contains(out, "backup nightly of embedded") {
		t.Fatalf("the first backup does not verify as itself any more:\n%s", out)
	}
	cli(t, "admin", "backup", "--admin-server", n.admin, "--to", dest, "--id", "nightly")
}

// A black-box finding: the caller's mistakes about destinations answered Internal. A
// --from of another backup, a --from that does not exist, one without a manifest and a
// --data-dir that holds a node are named; a backup whose request broke off says how to
// find and release the hold it may have placed.
func TestBackupCommandsNameTheFlagOfTheCallersMistake(t *testing.T) {
	n := startBackupNode(t, filepath.Join(t.TempDir(), "data"), "")
	cli(t, "put", "--server", n.url, "--agent", "demo", "--workbench", "w", "input/big.bin", bigBody(t))
	dest := t.TempDir()
	cli(t, "admin", "backup", "--admin-server", n.admin, "--to", dest, "--id", "b1")
	missing := filepath.Join(t.TempDir(), "nonexistent")
	occupied := filepath.Join(t.TempDir(), "data")
	cli(t, "admin", "restore", "--from", dest, "--data-dir", occupied)
	for _, tc := range []struct {
		args       []string
		code, want string
	}{
		{[]string{"admin", "backup", "release", "--admin-server", n.admin, "--id", "other", "--from", dest},
			"InvalidArguments", `--from: ` + dest + ` holds backup "b1" (a complete backup), not "other": nothing released, nothing removed`},
		{[]string{"admin", "backup", "delete", "--admin-server", n.admin, "--from", missing},
			"NotFound", "--from: backup destination not found: " + missing + " does not exist"},
		{[]string{"admin", "backup", "delete", "--admin-server", n.admin, "--from", t.TempDir()},
			"InvalidArguments", "--from: backup incomplete:"},
		{[]string{"admin", "backup", "verify", "--from", missing}, "NotFound", "--from: backup destination not found"},
		{[]string{"admin", "restore", "--from", dest, "--data-dir", occupied},
			"InvalidArguments", "--data-dir: data directory is not empty: " + occupied + " holds node-id"},
	} {
		_, _, err := execCairn(t, tc.args...)
		if code, msg := failure(err); code != tc.code || !strings.Contains(msg, tc.want) {
			t.Errorf("cairn %s: %s: %s; want %s saying %q", strings.Join(tc.args, " "), code, msg, tc.code, tc.want)
		}
	}

	// The node dies after the request arrived: the answer never comes.
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(dead.Close)
	_, _, err := execCairn(t, "admin", "backup", "--admin-server", dead.URL, "--id", "b2", "--to", t.TempDir())
	if code, msg := failure(err); code != "Unavailable" || !strings.Contains(msg, "whether the node placed the backup's hold is unknown") ||
		!strings.Contains(msg, "`cairn admin backup holds` lists the holds") || !strings.Contains(msg, "`cairn admin backup release --id b2 --from ") {
		t.Fatalf("a backup whose request broke off: %s: %s; want Unavailable naming backup holds and release", code, msg)
	}
}

// A black-box finding: a copy of a backup carries the original's manifest and id, and
// `backup delete --from COPY` released the hold the original still needed, so garbage
// collection could remove blobs its restore reads. Now deleting a copy deletes its files
// and keeps the hold, saying which backup placed it; deleting that backup releases it.
func TestDeletingACopyOfABackupKeepsTheHoldTheOriginalNeeds(t *testing.T) {
	n := startBackupNode(t, filepath.Join(t.TempDir(), "data"), "dir://"+t.TempDir())
	cli(t, "put", "--server", n.url, "--agent", "demo", "--workbench", "w", "input/big.bin", bigBody(t))
	bk := t.TempDir()
	orig, copied := filepath.Join(bk, "orig"), filepath.Join(bk, "copy")
	backupManifest(t, n.admin, "--to", orig, "--id", "Y")
	if err := os.CopyFS(copied, os.DirFS(orig)); err != nil {
		t.Fatal(err)
	}

	out := cli(t, "admin", "backup", "delete", "--admin-server", n.admin, "--from", copied)
	if !strings.Contains(out, "its hold stays, for the backup at dir://"+orig+" that placed it") {
		t.Fatalf("delete of a copy:\n%s", out)
	}
	if left := files(t, copied); len(left) != 0 {
		t.Fatalf("the deleted copy still holds %v", left)
	}
	if got := holdsOf(t, n.admin, "Y"); len(got) != 1 || got[0].Destination != "dir://"+orig {
		t.Fatalf("holds after deleting a copy: %+v; want the original's hold", got)
	}
	if out := cli(t, "admin", "backup", "verify", "--admin-server", n.admin, "--from", orig, "--holds"); !strings.Contains(out, "held:") {
		t.Fatalf("verify --holds of the original after its copy was deleted:\n%s", out)
	}

	out = cli(t, "admin", "backup", "delete", "--admin-server", n.admin, "--from", orig)
	if !strings.Contains(out, "backup Y: hold released") {
		t.Fatalf("delete of the original:\n%s", out)
	}
	if got := holdsOf(t, n.admin, "Y"); len(got) != 0 {
		t.Fatalf("holds after deleting the original: %+v", got)
	}
}
