package client

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SnapshotFallback says how FallBackToSnapshot reads a workbench that kept changing while
// it was listed: at a snapshot taken for the purpose, with the shortest lease
// (FallbackTTLDays), retired once the reading is done.
type SnapshotFallback struct {
	// Reason annotates the snapshot (1..256 characters): who took it and why, for
	// whoever lists the workbench's snapshots meanwhile (e.g. "cairn export: a consistent
	// listing of a workbench that kept changing").
	Reason string
	// Taken, if set, is called with the snapshot once it is taken, before anything is
	// read at it.
	Taken func(*Snapshot)
	// NotRetired, if set, is called when retiring the snapshot failed; its lease still
	// ends it within FallbackTTLDays.
	NotRetired func(snap *Snapshot, err error)
}

// FallbackTTLDays is the lease of a snapshot FallBackToSnapshot takes: the shortest the
// contract allows (docs/workbench.md, workbench_snapshot), so one whose retire failed
// does not outlive the day.
const FallbackTTLDays = 1

// fallbackRetireTimeout bounds the retire of a fallback snapshot, which runs on a context
// of its own so that a cancelled command still tries it.
const fallbackRetireTimeout = 30 * time.Second

// fallbackRetireReason annotates the retire of a fallback snapshot.
const fallbackRetireReason = "the reading it was taken for is over"

// FallBackToSnapshot runs read at at (the zero SnapshotRef: live state). When that is a
// live run that fails with ErrWorkbenchKeptChanging (every listing from its first page
// met a write; RestartListing) and fb is not nil, it takes a snapshot of workbench wb (lease
// FallbackTTLDays, annotated with fb.Reason), calls fb.Taken, runs read again at the
// snapshot, where no write can invalidate a listing (docs/workbench.md, "Cursors"), and
// then retires the snapshot whatever read returned, under a context of its own
// (fallbackRetireTimeout) that ctx's cancellation does not end. read must start from
// nothing each time it runs and read everything at the SnapshotRef it is given (the
// listings and, where it reads files, the files), so that a run at the snapshot is one
// consistent image; it must have written nothing when it fails with
// ErrWorkbenchKeptChanging.
//
// The live run comes first because a snapshot costs a write (it needs workspace:write)
// and a slot of the workbench's snapshot quota; most listings never need one.
//
// Errors: read's error; when the snapshot cannot be taken (PermissionDenied for a key
// without workspace:write, ResourceExhausted for a workbench at its snapshot quota, a
// transport failure), the live run's error, which keeps its code ReadFenceChanged
// (ErrorCode), joined with the reason. A failed retire is not an error of the reading:
// it goes to fb.NotRetired.
func (c *Client) FallBackToSnapshot(ctx context.Context, agent, wb string, at SnapshotRef, fb *SnapshotFallback, read func(at SnapshotRef) error) error {
	err := read(at)
	if fb == nil || !at.IsZero() || !errors.Is(err, ErrWorkbenchKeptChanging) {
		return err
	}
	snap, serr := c.Snapshot(ctx, agent, wb, SnapshotRequest{TTLDays: FallbackTTLDays, Reason: fb.Reason})
	if serr != nil {
		return fmt.Errorf("%w; reading it at a snapshot instead was not possible, taking one failed: %w", err, serr)
	}
	if fb.Taken != nil {
		fb.Taken(snap)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fallbackRetireTimeout)
		defer cancel()
		if _, rerr := c.RetireSnapshot(rctx, agent, wb, SnapshotID(snap.SnapshotID), fallbackRetireReason); rerr != nil && fb.NotRetired != nil {
			fb.NotRetired(snap, rerr)
		}
	}()
	return read(SnapshotID(snap.SnapshotID))
}
