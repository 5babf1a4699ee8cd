package unprivileged_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnstore/cairn/internal/unprivileged"
)

// TestReadOnlyDirRefusesAWrite: run as a user without privileges, a file cannot be made
// in the directory ReadOnlyDir returns.
func TestReadOnlyDirRefusesAWrite(t *testing.T) {
	if !unprivileged.Run(t) {
		return // the test ran in a child
	}
	dir := unprivileged.ReadOnlyDir(t)
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("a write into the read-only directory: %v, want a permission error", err)
	}
}
