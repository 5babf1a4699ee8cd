package workbench

import (
	"context"
	"io"

	"github.com/cairnstore/cairn/meta"
)

// What the OpenWOP host.workspace facade (api/openwop) reads through: a consistent view of
// one workbench, and a bounded body read. The facade writes with Write and Delete like
// every surface, so its files are ordinary Cairn files.

// ViewAt returns the view a read of workbench id of agent at `at` sees (a linearizable
// live view, or one frozen at a snapshot's read version), the workbench it reads, and the
// snapshot (nil for live state). The caller may then read paths, versions and snapshots
// from the view. Errors: NotFound (a missing workbench, or a root the caller may not
// use), SnapshotNotFound, SnapshotExpired, InvalidArguments for bad ids.
func (s *Reads) ViewAt(ctx context.Context, agent, id string, at At) (*meta.View, *meta.Workspace, *meta.WorkbenchSnapshot, error) {
	if err := validateTarget(agent, id, ""); err != nil {
		return nil, nil, nil, err
	}
	if err := mayRead(ctx, agent); err != nil {
		return nil, nil, nil, err
	}
	return s.base.resolve(ctx, agent, id, at)
}

// ViewToWrite is ViewAt of the live state for a write that decides on it: the facade's
// PUT checks its precondition (the live file's generation) and the workspace's file count
// there, and answers the version it wrote, so a caller that may write (workspace:write)
// gets it without the read scope. It reads no file body. Errors as ViewAt's, and
// PermissionDenied for a caller that may not write.
func (s *Reads) ViewToWrite(ctx context.Context, agent, id string) (*meta.View, *meta.Workspace, error) {
	if err := validateTarget(agent, id, ""); err != nil {
		return nil, nil, err
	}
	if err := mayWrite(ctx, agent); err != nil {
		return nil, nil, err
	}
	v, ws, _, err := s.base.resolve(ctx, agent, id, At{})
	return v, ws, err
}

// ReadEntry returns the whole body of e, a revision of agent's root read from a view of
// ViewAt, verified against its segment digests. PayloadTooLarge when the body is larger
// than maxBytes: the caller bounds what it holds in memory.
func (s *Reads) ReadEntry(ctx context.Context, agent string, e *meta.Entry, maxBytes int64) ([]byte, error) {
	if e.Size > maxBytes {
		return nil, newError(CodePayloadTooLarge, "the file is %d bytes, more than %d", e.Size, maxBytes)
	}
	rc, err := s.base.openEntry(ctx, agent, e, 0, e.Size)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, AsError(err)
	}
	return b, nil
}
