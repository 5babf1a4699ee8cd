package ops

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cairnstore/cairn/internal/unprivileged"
)

func TestCheckDataDirCreatesTheDirectoryAndLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "data")
	if err := CheckDataDir(dir); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 0 {
		t.Fatalf("data directory after the probe: %v %v, want it empty", ents, err)
	}
}

// TestDataDirErrorIsAConfigErrorForARefusedWrite: a read-only file system or a refused
// permission is a configuration error naming --data-dir (not retryable); anything else
// stays the error it was.
func TestDataDirErrorIsAConfigErrorForARefusedWrite(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EROFS, syscall.EACCES, syscall.EPERM} {
		err := dataDirError("/srv/cairn", &fs.PathError{Op: "open", Path: "/srv/cairn/.write-probe-1", Err: errno})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Flag() != "--data-dir" || !strings.HasPrefix(err.Error(), "--data-dir must be a directory this process can write") {
			t.Errorf("%v: %v, want a *ConfigError naming --data-dir", errno, err)
		}
	}
	err := dataDirError("/srv/cairn", &fs.PathError{Op: "open", Path: "/srv/cairn/x", Err: syscall.EIO})
	if errors.As(err, new(*ConfigError)) || !errors.Is(err, syscall.EIO) {
		t.Errorf("EIO: %v, want the I/O error itself", err)
	}
}

// TestCheckDataDirRefusesAReadOnlyDirectory: through the real file system, where the
// process's permissions bind it.
func TestCheckDataDirRefusesAReadOnlyDirectory(t *testing.T) {
	if !unprivileged.Run(t) { // root passes a mode of 0555: the test ran as another user
		return
	}
	dir := unprivileged.ReadOnlyDir(t)
	var ce *ConfigError
	if err := CheckDataDir(dir); !errors.As(err, &ce) || ce.Field != "DataDir" {
		t.Fatalf("CheckDataDir of a 0555 directory: %v, want a *ConfigError about DataDir", err)
	}
}
