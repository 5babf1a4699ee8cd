package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// dataDirLockWait bounds how long lockDataDir waits for the data directory's LOCK. The
// kernel releases a killed process's flock only once the process has been torn down,
// which `kill -9` does not wait for: a node restarted at once after a kill -9 (a
// supervisor's or a script's `kill -9 $pid; cairn serve`) would otherwise find the
// directory still locked by a process that no longer runs. A live node holds the lock
// for good, so waiting longer only delays that answer.
const dataDirLockWait = 2 * time.Second

// dataDirLockRetry is how often lockDataDir tries the lock again while it waits.
const dataDirLockRetry = 50 * time.Millisecond

// lockDataDir creates dir (as Open does, so a first key can be made before the first
// start) and takes its LOCK, waiting up to dataDirLockWait for a process that is exiting
// to let it go. Errors: ErrDataDirLocked (wrapped with dir and hint) when another process
// still holds it; a path that is not a directory or cannot be created.
func lockDataDir(ctx context.Context, dir, hint string) (*flock.Flock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	lock := flock.New(filepath.Join(dir, "LOCK"))
	wait, cancel := context.WithTimeout(ctx, dataDirLockWait)
	defer cancel()
	ok, err := lock.TryLock()
	if err == nil && !ok {
		ok, err = lock.TryLockContext(wait, dataDirLockRetry)
	}
	switch {
	case ok:
		return lock, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("data directory %s: waiting for its lock: %w", dir, ctx.Err())
	case err == nil || errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%s: %w%s", dir, ErrDataDirLocked, hint)
	default:
		return nil, fmt.Errorf("data directory %s: lock: %w", dir, err)
	}
}
