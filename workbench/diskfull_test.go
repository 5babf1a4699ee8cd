package workbench_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/meta"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/workbenchtest"
)

// A full disk is ResourceExhausted, retryable, naming the resource, never Internal or
// "object store unavailable" (the shapes blob/dir and the shard give such failures).
func TestAFullDiskIsResourceExhaustedNamingTheResource(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		resource string
	}{
		{"a proposal refused below the log's reserve", fmt.Errorf("%w (1 bytes free)", shard.ErrStorageFull), "raft log"},
		{"a blob/dir write that hit ENOSPC", fmt.Errorf("blob/dir: put k: %w: %w", blob.ErrUnavailable,
			&fs.PathError{Op: "write", Path: "tmp", Err: syscall.ENOSPC}), "blob store"},
		{"an object store that said its storage is full", fmt.Errorf("blob/s3: put: %w", errors.Join(blob.ErrUnavailable, blob.ErrStorageFull)), "blob store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := workbench.AsError(tc.err)
			if e.Code != workbench.CodeResourceExhausted || !e.Retryable || e.Details["resource"] != tc.resource || e.Details["reason"] != workbench.ReasonDiskFull {
				t.Fatalf("got %+v, want ResourceExhausted retryable naming %q", e, tc.resource)
			}
		})
	}
	if e := workbench.AsError(errors.New("other")); e.Code == workbench.CodeResourceExhausted {
		t.Fatal("an unrelated error became ResourceExhausted")
	}
}

// fullCore is a workbench.Core whose Raft log disk is full: it refuses every proposal of
// a body the test names, as the shard does below its free-space reserve.
type fullCore struct {
	workbench.Core
	full atomic.Bool
}

func (c *fullCore) Propose(ctx context.Context, h meta.Header, b meta.Body) (meta.Result, error) {
	if c.full.Load() {
		return meta.Result{}, fmt.Errorf("%w (1 bytes free)", shard.ErrStorageFull)
	}
	return c.Core.Propose(ctx, h, b)
}

// A snapshot refused because the disk is full is the disk-full answer (retryable, no
// snapshot cap named), not the per-workbench cap's (final); once space returns the same
// call takes the snapshot.
func TestASnapshotOnAFullDiskIsRetryableNotTheSnapshotCap(t *testing.T) {
	cfg := workbench.Config{InlineMaxBytes: 4096, CursorKey: workbenchtest.CursorKey, MaxSnapshotsPerWorkbench: 256}
	n := workbenchtest.New(t, cfg)
	core := &fullCore{Core: n.Shard}
	svc, err := workbench.New(core, n.Blobs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Writes.Write(t.Context(), workbench.WriteRequest{Agent: "a", Workbench: "w", Path: "input/x",
		Body: strings.NewReader("x"), CreateWorkbench: true}); err != nil {
		t.Fatal(err)
	}
	name := "s1"
	core.full.Store(true)
	_, err = svc.Lifecycle.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: &name}, "")
	e := workbench.AsError(err)
	if err == nil || e.Code != workbench.CodeResourceExhausted || !e.Retryable || e.Details["reason"] != workbench.ReasonDiskFull ||
		e.Details["max_snapshots"] != nil || strings.Contains(e.Message, "per workbench") {
		t.Fatalf("a snapshot on a full disk: %+v, want ResourceExhausted, retryable, reason disk_full, no snapshot cap", e)
	}
	core.full.Store(false)
	if _, err := svc.Lifecycle.Snapshot(t.Context(), "a", workbench.SnapshotInput{ID: "w", Name: &name}, ""); err != nil {
		t.Fatalf("the snapshot once space returned: %v", err)
	}
}
