package server

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// A process killed with kill -9 lets its LOCK go only once the kernel has torn it down,
// after kill returned: a restart in that window waits for it instead of failing.
func TestADataDirLockLetGoWhileWaitingIsTaken(t *testing.T) {
	dir := t.TempDir()
	exiting := flock.New(filepath.Join(dir, "LOCK"))
	if ok, err := exiting.TryLock(); !ok || err != nil {
		t.Fatalf("take the lock: %v %v", ok, err)
	}
	release := time.AfterFunc(dataDirLockWait/4, func() { _ = exiting.Unlock() })
	defer release.Stop()
	keys, err := OpenDataDirKeys(dir)
	if err != nil {
		t.Fatalf("open while the holder exits: %v", err)
	}
	if err := keys.Close(); err != nil {
		t.Fatal(err)
	}
}

// A lock held for good is refused after the bounded wait, as ErrDataDirLocked naming
// the directory; a caller whose context ends first gets its context's error instead.
func TestADataDirLockHeldForGoodIsRefusedAfterTheWait(t *testing.T) {
	dir := t.TempDir()
	holder := flock.New(filepath.Join(dir, "LOCK"))
	if ok, err := holder.TryLock(); !ok || err != nil {
		t.Fatalf("take the lock: %v %v", ok, err)
	}
	defer holder.Unlock()
	start := time.Now()
	_, err := OpenDataDirKeys(dir)
	if !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("open of a held directory: %v, want ErrDataDirLocked", err)
	}
	if waited := time.Since(start); waited < dataDirLockWait {
		t.Fatalf("refused after %v, before the %v wait", waited, dataDirLockWait)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := lockDataDir(ctx, dir, ""); errors.Is(err, ErrDataDirLocked) || !errors.Is(err, context.Canceled) {
		t.Fatalf("lock with an ended context: %v, want context.Canceled", err)
	}
}
