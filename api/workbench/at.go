package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/cairnstore/cairn/meta"
)

// At selects what a read sees: the live workbench (the zero value) or a snapshot of it,
// by id or by name.
type At struct {
	SnapshotID   uint64
	SnapshotName string
	set          bool
}

// AtSnapshotID and AtSnapshotName select a snapshot.
func AtSnapshotID(id uint64) At     { return At{SnapshotID: id, set: true} }
func AtSnapshotName(name string) At { return At{SnapshotName: name, set: true} }

// Live reports whether the selector means live state.
func (a At) Live() bool { return !a.set }

// String renders the selector for cursors and messages: "" (live), "#<id>" or "@<name>".
func (a At) String() string {
	switch {
	case !a.set:
		return ""
	case a.SnapshotName != "":
		return "@" + a.SnapshotName
	}
	return "#" + strconv.FormatUint(a.SnapshotID, 10)
}

// ParseAtSnapshot decodes the contract's at_snapshot argument: an integer ≥ 0 (a snapshot
// id), a string (a snapshot name), or absent/null (live state). Anything else is
// InvalidArguments naming at_snapshot.
func ParseAtSnapshot(raw json.RawMessage) (At, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return At{}, nil
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil || name == "" {
			return At{}, invalidArgument("at_snapshot", "must be a snapshot id (integer ≥ 0) or a non-empty snapshot name")
		}
		return AtSnapshotName(name), nil
	}
	id, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return At{}, invalidArgument("at_snapshot", "must be a snapshot id (integer ≥ 0) or a snapshot name")
	}
	return AtSnapshotID(id), nil
}

// resolve returns the view and workbench a read at `at` sees: a linearizable live view,
// or a view frozen at the snapshot's read version. Errors: NotFound (workbench),
// SnapshotNotFound, SnapshotExpired (with details.state).
func (s *Service) resolve(ctx context.Context, agent, id string, at At) (*meta.View, *meta.Workspace, *meta.WorkbenchSnapshot, error) {
	view, err := s.readView(ctx, agent)
	if err != nil {
		return nil, nil, nil, AsError(err)
	}
	if at.Live() {
		ws, err := view.Workspace(agent, id)
		if err != nil {
			return nil, nil, nil, AsError(err)
		}
		return view, ws, nil, nil
	}
	if _, err := view.Workspace(agent, id); err != nil {
		return nil, nil, nil, AsError(err)
	}
	if at.SnapshotName == "" && at.SnapshotID == 0 {
		return nil, nil, nil, newError(CodeSnapshotNotFound, "snapshot 0 does not exist (snapshot ids start at 1)")
	}
	sv, ws, snap, err := view.SnapshotView(agent, id, at.SnapshotID, at.SnapshotName)
	if err != nil {
		return nil, nil, nil, AsError(err)
	}
	return sv, ws, snap, nil
}
