package workbench_test

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/cairnstore/cairn/blob"
	"github.com/cairnstore/cairn/shard"
	"github.com/cairnstore/cairn/workbench"
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
