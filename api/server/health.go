package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/cairnstore/cairn/blob"
)

// The readiness probe (GET /readyz): every probeInterval the node stats a blob that
// never exists under probeTimeout, and checks the free space of its disks. A store that
// does not answer NotFound in time, or a disk with less than minFreeBytes free, makes
// the node not ready until a later probe passes.
const (
	probeInterval = 2 * time.Second
	probeTimeout  = 2 * time.Second
	minFreeBytes  = 64 << 20
)

// probeKey names no blob: shards assign root uids starting with "r" or "s"
// (meta.Options.RootUIDPrefix), never "p".
var probeKey = blob.Key{Root: "probe"}

// health runs the readiness probe and holds its last findings.
type health struct {
	blobs blob.Store
	dirs  map[string]string // what → directory whose free space is checked
	log   *slog.Logger

	mu      sync.Mutex
	failing []string
}

// run probes at once and then every probeInterval until ctx ends.
func (h *health) run(ctx context.Context) {
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		h.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *health) probe(ctx context.Context) {
	var failing []string
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	_, err := h.blobs.Stat(pctx, probeKey)
	cancel()
	if ctx.Err() != nil {
		return
	}
	var te *blob.TimeoutError
	switch {
	case err == nil, errors.Is(err, blob.ErrNotFound):
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &te):
		failing = append(failing, fmt.Sprintf("blob store: did not answer a probe within %v", probeTimeout))
	default:
		failing = append(failing, fmt.Sprintf("blob store: failed a probe (%s)", blob.ErrorKind(err)))
	}
	for what, dir := range h.dirs {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			failing = append(failing, fmt.Sprintf("%s: free space unknown: %v", what, err))
			continue
		}
		if free := int64(st.Bavail) * int64(st.Bsize); free < minFreeBytes {
			failing = append(failing, fmt.Sprintf("%s: disk full (%d bytes free, at least %d needed)", what, free, minFreeBytes))
		}
	}
	h.mu.Lock()
	changed := fmt.Sprint(failing) != fmt.Sprint(h.failing)
	h.failing = failing
	h.mu.Unlock()
	if changed && h.log != nil {
		if len(failing) > 0 {
			h.log.Warn("not ready", "failing", failing)
		} else {
			h.log.Info("ready again")
		}
	}
}

// Failing returns what the last probe found wrong (nil: nothing).
func (h *health) Failing() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failing
}
