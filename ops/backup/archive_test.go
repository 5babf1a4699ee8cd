package backup

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidPartAcceptsTheLayoutAndNoPathOutsideIt(t *testing.T) {
	for name, want := range map[string]bool{
		"identity.json":                true,
		"keys.json":                    true,
		"shards/3.snap.zst":            true,
		"blobs/roots/r1/blobs/ab/ab12": true,
		"shards/03.snap.zst":           false,
		"blobs/":                       false,
		"blobs/../keys.json":           false,
		"blobs/roots//x":               false,
		"blobs/roots/.tmp-1":           false,
		"blobs/roots\\x":               false,
		"other.json":                   false,
	} {
		if got := ValidPart(name); got != want {
			t.Errorf("ValidPart(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDiscardPartialRemovesTheBackupsFilesAndNothingElse(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"shards/0.snap.zst", "cursor.key", "blobs/roots/r1/blobs/ab/ab12", "blobs/roots/r1/blobs/ab/.tmp-7", ".tmp-1", "notes.txt"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	target, err := OpenTarget(dir, S3{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := DiscardPartial(t.Context(), target, "cut")
	if err != nil || n != 5 {
		t.Fatalf("DiscardPartial: %d files, %v; want 5", n, err)
	}
	left, err := target.List(t.Context())
	if err != nil || !slices.Equal(left, []string{"notes.txt"}) {
		t.Fatalf("left %v (%v), want only notes.txt", left, err)
	}

	if err := os.WriteFile(filepath.Join(dir, IdentityPart), []byte(`{"backup":"nightly"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := DiscardPartial(t.Context(), target, "cut"); err == nil {
		t.Fatal("DiscardPartial removed another backup's destination")
	}
}

// An identity this binary cannot restore is refused when the stream is stored and when an
// archive's manifest is read, before any part is restored from it.
func TestAnIdentityOfAnotherFormatOrKindIsRefused(t *testing.T) {
	for name, ident := range map[string]string{
		"format": `{"format":2,"backup":"b","kind":"embedded","node_id":"n"}`,
		"kind":   `{"format":1,"backup":"b","kind":"laptop","node_id":"n"}`,
	} {
		t.Run(name, func(t *testing.T) {
			var stream bytes.Buffer
			tw := tar.NewWriter(&stream)
			for _, p := range []struct{ name, body string }{{CursorKey, "k"}, {IdentityPart, ident}} {
				if err := tw.WriteHeader(&tar.Header{Name: p.name, Mode: 0o600, Size: int64(len(p.body))}); err != nil {
					t.Fatal(err)
				}
				if _, err := tw.Write([]byte(p.body)); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			target, err := OpenTarget(dir, S3{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Write(t.Context(), target, &stream); err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("Write stored an archive whose identity has another %s: %v", name, err)
			}
			if _, err := os.Stat(filepath.Join(dir, ManifestPart)); !os.IsNotExist(err) {
				t.Fatalf("a manifest was written: %v", err)
			}

			// A manifest that names such an identity (written by another binary) is refused too.
			m := fmt.Sprintf(`{"format":1,"identity":%s,"parts":[]}`, ident)
			if err := os.WriteFile(filepath.Join(dir, ManifestPart), []byte(m), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadManifest(t.Context(), target); err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("ReadManifest accepted an identity with another %s: %v", name, err)
			}
		})
	}
}

// A restore run again over one that was cut off removes what the first wrote — keys.json
// too, unless it was there before the first began — and keeps the first's marker.
func TestARestoreRunAgainClearsWhatTheCutOffOneWrote(t *testing.T) {
	for _, keysBefore := range []bool{false, true} {
		data := t.TempDir()
		if keysBefore {
			if err := os.WriteFile(filepath.Join(data, KeysPart), []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := beginRestore(data, "first", []string{"node-id", "shards"}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"node-id", "shards/0/raft.db", KeysPart, "blobs/roots/r/blobs/ab/ab12"} {
			full := filepath.Join(data, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := CheckRestoreMarker(data); !errors.Is(err, ErrRestoreIncomplete) || !strings.Contains(err.Error(), `backup "first"`) {
			t.Fatalf("CheckRestoreMarker of a cut-off restore: %v", err)
		}
		if err := beginRestore(data, "second", []string{"node-id", "shards"}); err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string]bool{"node-id": false, "shards": false, KeysPart: keysBefore, "blobs/roots/r/blobs/ab/ab12": true, RestoreMarker: true} {
			if _, err := os.Stat(filepath.Join(data, filepath.FromSlash(p))); (err == nil) != want {
				t.Errorf("keys before %v: %s there: %v, want %v", keysBefore, p, err == nil, want)
			}
		}
		if err := CheckRestoreMarker(data); err == nil || !strings.Contains(err.Error(), `backup "first"`) {
			t.Fatalf("the marker after the second begin: %v, want the first's", err)
		}
		if err := finishRestore(data); err != nil || CheckRestoreMarker(data) != nil {
			t.Fatalf("finishRestore: %v; marker %v", err, CheckRestoreMarker(data))
		}
		if err := os.WriteFile(filepath.Join(data, "node-id"), []byte("n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := beginRestore(data, "third", []string{"node-id"}); !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("a restore into a finished one: %v, want ErrNotEmpty", err)
		}
	}
}
