package backup

import (
	"os"
	"path/filepath"
	"slices"
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
