package shard

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairnstore/cairn/shard/outcome"
)

// ErrStorageFull: the disk under the Raft log is full (less than MinFreeBytes free, or a
// log write failed with ENOSPC). Nothing was committed; retryable once space is freed.
// Matches outcome.ErrStorageFull.
var ErrStorageFull = outcomeError("shard: the disk under the raft log is full", outcome.ErrStorageFull)

// DefaultMinFreeBytes is Config.MinFreeBytes's default: room for Raft to persist its term
// and vote (hashicorp/raft panics when it cannot) and a snapshot to start.
const DefaultMinFreeBytes = 64 << 20

// diskCheckInterval bounds how stale the free-space figure of a proposal may be.
const diskCheckInterval = 100 * time.Millisecond

// diskGauge caches the free space of a directory's file system.
type diskGauge struct {
	dir     string
	min     int64
	checked atomic.Int64 // unix nanoseconds of the last statfs
	free    atomic.Int64 // bytes available to us then; -1 unknown
}

// full reports the free bytes when they are below the minimum (ok false), refreshing
// the figure at most every diskCheckInterval. An unknown figure is not full: the write
// itself then fails with ENOSPC if the disk is.
func (g *diskGauge) full() (free int64, ok bool) {
	now := time.Now().UnixNano()
	if now-g.checked.Load() >= int64(diskCheckInterval) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(g.dir, &st); err != nil {
			g.free.Store(-1)
		} else {
			g.free.Store(int64(st.Bavail) * int64(st.Bsize))
		}
		g.checked.Store(now)
	}
	free = g.free.Load()
	return free, free >= 0 && free < g.min
}

// storageFull is the error of a proposal refused because the disk is full.
func (g *diskGauge) storageFull(free int64) error {
	return fmt.Errorf("%w (%d bytes free, at least %d needed)", ErrStorageFull, free, g.min)
}

// isNoSpace reports whether a Raft error is a full disk under the log.
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }
