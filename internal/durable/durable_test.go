package durable

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesWholeAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "node-id")
	for _, want := range []string{"first\n", "second, longer\n"} {
		if err := WriteFile(p, []byte(want), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Fatalf("after WriteFile(%q): %q, %v", want, got, err)
		}
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v, %v; want 0600", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only the file", len(entries))
	}
}

func TestWriteFileFailureLeavesTheTargetUnchanged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cursor.key")
	if err := WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory in the temporary file's place: the write fails before the rename.
	if err := os.Mkdir(p+".tmp", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new"), 0o600); err == nil {
		t.Fatal("WriteFile over a blocked temporary path succeeded")
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Errorf("the target after a failed write: %q, want old", got)
	}
}

func TestRemoveRemovesTheFileAndToleratesItsAbsence(t *testing.T) {
	p := filepath.Join(t.TempDir(), "marker")
	if err := WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second finds nothing to remove
		if err := Remove(p); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("after Remove: %v, want the file gone", err)
		}
	}
}
